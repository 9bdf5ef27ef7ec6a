//go:build linux

package transfer_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/transfer"
)

// BenchmarkMove moves an instance the way the source agent does: live pass
// 1 (everything) while the instance writes, live pass 2 (what changed
// meanwhile) while it still writes, then the final pass with it stopped.
// downtime_ms is the final pass: what the instance is stopped for.
//
// The volume is files of 1-64 MiB (log-uniform: a few large, many
// smaller), random content, an hour old; the layer 200 small files (a
// pip install's worth). The workload writes 1% of the data during pass 1,
// spread over the pass (paced by the pass's progress), in this mix:
//
//   - 70%: new checkpoint files (ckpt/step-N.bin), four per pass 1, whole;
//   - 20%: in-place 256 KiB page rewrites in the three largest files, as a
//     database or an embedding store does;
//   - 10%: 64 KiB appends to a training log.
//
// It keeps that rate (1% of the data per full-pass time) through pass 2,
// each write landing once its bytes' time has passed, and stops before the
// final pass. Not modelled: 1% spread thinly over every file, which no
// workload does.
//
// 10GB runs with GPURENT_BENCH_10G=1 (about 21 GB of disk):
//
//	GPURENT_BENCH_10G=1 go test -run '^$' -bench BenchmarkMove -benchtime 1x ./internal/transfer/
func BenchmarkMove(b *testing.B) {
	b.Run("1GB", func(b *testing.B) { benchMove(b, 1<<30) })
	b.Run("10GB", func(b *testing.B) {
		if os.Getenv("GPURENT_BENCH_10G") != "1" {
			b.Skip("set GPURENT_BENCH_10G=1 to run the 10 GB move (needs about 21 GB of disk)")
		}
		benchMove(b, 10<<30)
	})
}

func benchMove(b *testing.B, size int64) {
	src := trees(b)
	g := newGen(b, uint64(size))
	files := makeVolume(b, g, src.Volume, size)
	for i := range 200 {
		g.write(filepath.Join(src.Layer, "usr", "lib", "python3", fmt.Sprintf("pkg%d", i/20), fmt.Sprintf("mod%d.py", i)), 4<<10+g.rng.IntN(252<<10), 0o644)
	}
	ageTree(b, src.Volume, time.Now().Add(-time.Hour))
	ageTree(b, src.Layer, time.Now().Add(-time.Hour))
	data := treeBytes(b, src.Volume) + treeBytes(b, src.Layer)

	var pass1, pass2, final time.Duration
	var moved, wire, dirty1, dirty2, finalBytes int64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		tg := newTarget(b, nil)
		dst := trees(b)
		op, token := tg.expect(dst)
		w := newWorkload(b, g, src.Volume, files, data, i)
		b.StartTimer()

		// Pass 1, paced by the bytes the target has read.
		w.start(func() float64 { return float64(tg.readBytes.Load()) / float64(data) })
		t0 := time.Now()
		st1 := push(b, tg.request(op, token, src, false))
		pass1 += time.Since(t0)
		d1 := w.finishPhase1()
		dirty1 += d1

		// Pass 2 at the same rate of writing.
		w.startRate(float64(d1) / time.Since(t0).Seconds())
		t1 := time.Now()
		st2 := push(b, tg.request(op, token, src, false))
		pass2 += time.Since(t1)
		dirty2 += w.stop() // the instance stops

		t2 := time.Now()
		st3 := push(b, tg.request(op, token, src, true))
		final += time.Since(t2)
		b.StopTimer()

		for _, st := range []transfer.PushStats{st1, st2, st3} {
			moved += st.BytesSent + st.BytesReceived
			wire += st.WireBytes
		}
		finalBytes += st3.BytesSent
		b.Logf("pass 1 %v (%d MB), pass 2 %v (%d MB, %d files), final %v (%d MB, %d files); written %d MB + %d MB",
			st1.Duration.Round(time.Millisecond), st1.BytesSent>>20,
			st2.Duration.Round(time.Millisecond), st2.BytesSent>>20, st2.FilesChanged,
			st3.Duration.Round(time.Millisecond), st3.BytesSent>>20, st3.FilesChanged, d1>>20, w.written2>>20)
		requireSameMeta(b, src.Volume, dst.Volume)
		requireSameMeta(b, src.Layer, dst.Layer)
		tg.kill()
		_ = os.RemoveAll(dst.Volume)
		_ = os.RemoveAll(dst.Layer)
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(float64(data)/(1<<30), "data_GiB")
	b.ReportMetric(pass1.Seconds()/n, "pass1_s")
	b.ReportMetric(pass2.Seconds()/n, "pass2_s")
	b.ReportMetric(float64(final.Milliseconds())/n, "downtime_ms")
	b.ReportMetric(float64(moved)/n/float64(data), "moved/data")
	b.ReportMetric(float64(wire)/n/float64(data), "wire/data")
	b.ReportMetric(float64(dirty1)/n/(1<<20), "written1_MiB")
	b.ReportMetric(float64(dirty2)/n/(1<<20), "written2_MiB")
	b.ReportMetric(float64(finalBytes)/n/(1<<20), "final_MiB")
}

// makeVolume writes about size bytes of files of 1-64 MiB (log-uniform)
// in directories of 16, with two writers, and returns the files largest
// first.
func makeVolume(b *testing.B, g *gen, root string, size int64) []string {
	type file struct {
		path string
		size int
	}
	var plan []file
	var total int64
	for total < size {
		n := int(math.Exp(g.rng.Float64()*math.Log(64)) * (1 << 20))
		n = int(min(int64(n), size-total))
		plan = append(plan, file{filepath.Join(root, fmt.Sprintf("d%03d", len(plan)/16), fmt.Sprintf("f%04d.bin", len(plan))), n})
		total += int64(n)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for part := range 2 {
		seed := g.rng.Uint64()
		wg.Add(1)
		go func() {
			defer wg.Done()
			pg := newGen(b, seed)
			for i := part; i < len(plan); i += 2 {
				if err := os.MkdirAll(filepath.Dir(plan[i].path), 0o755); err != nil {
					errs <- err
					return
				}
				if err := os.WriteFile(plan[i].path, pg.data(plan[i].size), 0o644); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	sort.Slice(plan, func(i, j int) bool { return plan[i].size > plan[j].size })
	out := make([]string, len(plan))
	for i, f := range plan {
		out[i] = f.path
	}
	return out
}

// treeBytes sums the sizes of the regular files under root.
func treeBytes(b *testing.B, root string) int64 {
	var n int64
	err := filepath.Walk(root, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// requireSameMeta checks, cheaply, that the target has every source path
// with its size, mode and mtime, and nothing else (the tests check
// content).
func requireSameMeta(b *testing.B, src, dst string) {
	meta := func(root string) map[string]string {
		m := map[string]string{}
		err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			if fi.Mode().IsRegular() {
				m[rel] = fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
			} else {
				m[rel] = fi.Mode().String()
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	a, c := meta(src), meta(dst)
	if len(a) != len(c) {
		b.Fatalf("target has %d paths, source %d", len(c), len(a))
	}
	for p, v := range a {
		if c[p] != v {
			b.Fatalf("%s: source %s, target %s", p, v, c[p])
		}
	}
}

// workload is the instance writing during the live passes.
type workload struct {
	b      *testing.B
	g      *gen
	root   string
	hot    []string // the three largest files
	budget int64    // 1% of the data
	run    int
	ckpt   int

	stopc    chan struct{}
	done     chan struct{}
	err      error
	written1 int64
	written2 int64
}

type write struct {
	kind string // ckpt, page, log
	size int
}

func newWorkload(b *testing.B, g *gen, root string, files []string, data int64, run int) *workload {
	return &workload{b: b, g: g, root: root, hot: files[:min(3, len(files))], budget: data / 100, run: run}
}

// plan returns writes totalling the budget in the mix, shuffled.
func (w *workload) plan() []write {
	ckpt := int(min(max(w.budget*70/100/4, 1<<20), 64<<20))
	var out []write
	var c, p, l int64
	for c+int64(ckpt) <= w.budget*70/100+int64(ckpt)/2 {
		out = append(out, write{"ckpt", ckpt})
		c += int64(ckpt)
	}
	for ; p < w.budget*20/100; p += 256 << 10 {
		out = append(out, write{"page", 256 << 10})
	}
	for ; l < w.budget*10/100; l += 64 << 10 {
		out = append(out, write{"log", 64 << 10})
	}
	w.g.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func (w *workload) do(x write) error {
	switch x.kind {
	case "ckpt":
		w.ckpt++
		p := filepath.Join(w.root, "ckpt", fmt.Sprintf("run%d-step-%04d.bin", w.run, w.ckpt))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, w.g.data(x.size), 0o644)
	case "page":
		p := w.hot[w.g.rng.IntN(len(w.hot))]
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		pages := max(fi.Size()/int64(x.size), 1)
		_, err = f.WriteAt(w.g.data(x.size), w.g.rng.Int64N(pages)*int64(x.size))
		return err
	default:
		f, err := os.OpenFile(filepath.Join(w.root, "train.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.Write(w.g.data(x.size))
		return err
	}
}

// start runs the pass-1 plan, each write once progress() reaches the
// share of the plan written before it.
func (w *workload) start(progress func() float64) {
	w.stopc, w.done = make(chan struct{}), make(chan struct{})
	plan := w.plan()
	var total int64
	for _, x := range plan {
		total += int64(x.size)
	}
	go func() {
		defer close(w.done)
		var before int64
		for _, x := range plan {
			for progress() < float64(before)/float64(total) {
				select {
				case <-w.stopc:
					// Pass 1 is over: the rest is written now.
					progress = func() float64 { return 2 }
				case <-time.After(5 * time.Millisecond):
				}
			}
			if err := w.do(x); err != nil {
				w.err = err
				return
			}
			before += int64(x.size)
			w.written1 += int64(x.size)
		}
	}()
}

// finishPhase1 completes the pass-1 plan and returns the bytes written.
func (w *workload) finishPhase1() int64 {
	close(w.stopc)
	<-w.done
	if w.err != nil {
		w.b.Fatalf("workload: %v", w.err)
	}
	return w.written1
}

// startRate keeps writing the same mix at rate bytes per second, each
// write once its bytes' time has passed since the start.
func (w *workload) startRate(rate float64) {
	w.stopc, w.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.done)
		start := time.Now()
		var cum int64
		for {
			for _, x := range w.plan() {
				cum += int64(x.size)
				due := start.Add(time.Duration(float64(cum) / rate * float64(time.Second)))
				t := time.NewTimer(time.Until(due))
				select {
				case <-w.stopc:
					t.Stop()
					return
				case <-t.C:
				}
				if err := w.do(x); err != nil {
					w.err = err
					return
				}
				w.written2 += int64(x.size)
			}
		}
	}()
}

// stop stops the instance's writes and returns the bytes written since
// startRate.
func (w *workload) stop() int64 {
	close(w.stopc)
	<-w.done
	if w.err != nil {
		w.b.Fatalf("workload: %v", w.err)
	}
	return w.written2
}
