package docker_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/delta"
)

// tickerTag is the benchmark's image: the busybox test image plus a static
// Go program that appends the time to the data volume every millisecond.
const tickerTag = "gpurent-test/ticker:bench"

// Size of the writable layer the instance has before it is upgraded:
// "installed packages", a few thousand files, 50 MiB in all.
const (
	layerFiles    = 3200
	layerFileSize = 16 << 10
)

// tickerSource is the program in the image. Run as `ticker FILE` it appends
// "<boot> <unix-nanos>\n" to FILE at once, then every millisecond, and once
// more when SIGTERM or SIGINT arrives, then exits 0; <boot> differs between
// starts, so the lines tell the old container from the new. Run as
// `ticker fill DIR FILES SIZE` it writes FILES files of SIZE random bytes
// under DIR, a hundred per directory.
const tickerSource = `package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) == 5 && os.Args[1] == "fill" {
		if err := fill(os.Args[2], os.Args[3], os.Args[4]); err != nil {
			fmt.Fprintln(os.Stderr, "fill:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: ticker FILE | ticker fill DIR FILES SIZE")
		os.Exit(2)
	}
	f, err := os.OpenFile(os.Args[1], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	boot := strconv.FormatInt(time.Now().UnixNano(), 36)
	buf := make([]byte, 0, 64)
	stamp := func() {
		buf = append(buf[:0], boot...)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, time.Now().UnixNano(), 10)
		buf = append(buf, '\n')
		if _, err := f.Write(buf); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	tick := time.NewTicker(time.Millisecond)
	for {
		stamp()
		select {
		case <-sig:
			stamp()
			os.Exit(0)
		case <-tick.C:
		}
	}
}

func fill(dir, files, size string) error {
	n, err := strconv.Atoi(files)
	if err != nil {
		return err
	}
	sz, err := strconv.Atoi(size)
	if err != nil {
		return err
	}
	rng := rand.NewChaCha8([32]byte{1})
	body := make([]byte, sz)
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprintf("pkg%03d", i/100))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		rng.Read(body)
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("file%03d.so", i%100)), body, 0o644); err != nil {
			return err
		}
	}
	return nil
}
`

// tickerImage builds the ticker program (CGO_ENABLED=0, so it runs in an
// image without a libc) and the image around it.
func tickerImage(b *testing.B) string {
	b.Helper()
	base := dockertest.BusyboxImage(b)
	goTool, err := exec.LookPath("go")
	if err != nil {
		b.Fatalf("the benchmark builds a helper program and needs the Go toolchain on PATH: %v", err)
	}
	dir := b.TempDir()
	for name, body := range map[string]string{
		"go.mod":  "module ticker\n\ngo 1.24\n",
		"main.go": tickerSource,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cmd := exec.CommandContext(b.Context(), goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", "ticker", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build the ticker program: %v\n%s", err, out)
	}
	bin, err := os.ReadFile(filepath.Join(dir, "ticker"))
	if err != nil {
		b.Fatal(err)
	}

	dockerfile := "FROM " + base + "\nCOPY ticker /bin/ticker\nCMD [\"/bin/ticker\", \"" + runtime.DataPath + "/ticks\"]\n"
	return dockertest.BuildImage(b, tickerTag,
		dockertest.File{Name: "Dockerfile", Mode: 0o644, Body: []byte(dockerfile)},
		dockertest.File{Name: "ticker", Mode: 0o755, Body: bin})
}

// tick is one line of the ticks file.
type tick struct {
	boot string
	at   int64 // Unix nanoseconds
}

// readTicks parses the ticks file; a last line still being written is left
// for the next read.
func readTicks(path string) ([]tick, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []tick
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		boot, at, ok := strings.Cut(sc.Text(), " ")
		n, err := strconv.ParseInt(at, 10, 64)
		if !ok || err != nil {
			continue
		}
		out = append(out, tick{boot, n})
	}
	return out, nil
}

// waitBoots waits until the ticks file holds lines of n different starts
// and returns them, each start's lines in order.
func waitBoots(b *testing.B, path string, n int) [][]tick {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ticks, err := readTicks(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			b.Fatal(err)
		}
		var boots [][]tick
		idx := map[string]int{}
		for _, tk := range ticks {
			i, ok := idx[tk.boot]
			if !ok {
				i = len(boots)
				idx[tk.boot] = i
				boots = append(boots, nil)
			}
			boots[i] = append(boots[i], tk)
		}
		if len(boots) >= n {
			return boots
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: %d starts of the ticker after 2 minutes, want %d", path, len(boots), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startTicking runs a fresh instance of the ticker image, gives it a
// writable layer of installed packages, waits for its first ticks and
// returns the ticks file on the host.
func startTicking(b *testing.B, rt *docker.Runtime, cli *client.Client, spec runtime.Spec) string {
	b.Helper()
	if _, err := rt.Run(b.Context(), spec); err != nil {
		b.Fatal(err)
	}
	dockertest.MustExec(b, cli, docker.ContainerName(spec.InstanceID), "/bin/ticker", "fill", "/opt/packages",
		strconv.Itoa(layerFiles), strconv.Itoa(layerFileSize))
	tr, err := rt.Trees(b.Context(), spec.InstanceID)
	if err != nil {
		b.Fatal(err)
	}
	ticks := filepath.Join(tr.Volume, "ticks")
	waitBoots(b, ticks, 1)
	// Packages are installed well before an upgrade; a file written in
	// the last second is one a live copy cannot trust, and would make the
	// final pass send it again (internal/delta's live-pass rule).
	time.Sleep(1500 * time.Millisecond)
	return ticks
}

// downtime is the gap between the last tick of the first start and the
// first tick of the second.
func downtime(b *testing.B, ticks string) time.Duration {
	b.Helper()
	boots := waitBoots(b, ticks, 2)
	if len(boots) != 2 {
		b.Fatalf("%s: %d starts of the ticker, want 2", ticks, len(boots))
	}
	last := slices.MaxFunc(boots[0], func(x, y tick) int { return int(x.at - y.at) })
	first := slices.MinFunc(boots[1], func(x, y tick) int { return int(x.at - y.at) })
	return time.Duration(first.at - last.at)
}

func tickerSpec(b *testing.B, image string) runtime.Spec {
	id := dockertest.NewInstanceID()
	dockertest.Cleanup(b, id)
	return runtime.Spec{
		InstanceID:   id,
		AllocationID: gpurent.NewID(gpurent.PrefixAllocation),
		Image:        image,
		GPUUUIDs:     []string{"GPU-11111111-2222-3333-4444-555555555555"},
		CPUMilli:     1000,
		MemoryMiB:    512,
		VolumeName:   gpurent.NewID(gpurent.PrefixVolume),
	}
}

// upgraded is spec moved to a new allocation on other (fake) GPUs.
func upgraded(spec runtime.Spec) runtime.Spec {
	spec.AllocationID = gpurent.NewID(gpurent.PrefixAllocation)
	spec.GPUUUIDs = []string{"GPU-99999999-8888-7777-6666-555555555555", "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"}
	return spec
}

// BenchmarkUpgradeDowntime measures, from inside the instance, how long a
// same-host upgrade to other GPUs interrupts it: from the last time the old
// container wrote a tick to the first time the new one did. The instance
// has 50 MiB of installed packages in its writable layer.
//
//   - carry-layer: the runtime's upgrade, Run with a new allocation and
//     CarryLayer set as the agent sets it (internal/delta.Copy), so the new
//     container keeps the installed packages.
//   - stop-run: the baseline, a bare ContainerStop, ContainerCreate and
//     ContainerStart of an equivalent fresh container on the same volume,
//     which loses the installed packages.
//
// ns/op is the time of the upgrade call(s); downtime_ms the mean gap and
// max_downtime_ms the largest.
func BenchmarkUpgradeDowntime(b *testing.B) {
	dockertest.Require(b)
	cli := dockertest.Client(b)
	image := tickerImage(b)

	b.Run("carry-layer", func(b *testing.B) {
		rt, err := docker.New(b.Context(), docker.Config{InitBinary: dockertest.InitBinary(b), CarryLayer: func(ctx context.Context, src, dst string, final bool) error {
			_, err := delta.CopyPass(ctx, src, dst, final)
			return err
		}})
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close()
		var gaps []time.Duration
		b.StopTimer()
		for range b.N {
			spec := tickerSpec(b, image)
			ticks := startTicking(b, rt, cli, spec)
			next := upgraded(spec)
			b.StartTimer()
			if _, err := rt.Run(b.Context(), next); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			gaps = append(gaps, downtime(b, ticks))
			// The carried packages are there.
			dockertest.MustExec(b, cli, docker.ContainerName(spec.InstanceID), "test", "-f", "/opt/packages/pkg000/file000.so")
			if err := rt.Remove(b.Context(), spec.InstanceID, spec.VolumeName, true); err != nil {
				b.Fatal(err)
			}
		}
		reportDowntime(b, gaps)
	})

	b.Run("stop-run", func(b *testing.B) {
		rt, err := docker.New(b.Context(), docker.Config{InitBinary: dockertest.InitBinary(b)})
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close()
		var gaps []time.Duration
		b.StopTimer()
		for range b.N {
			spec := tickerSpec(b, image)
			ticks := startTicking(b, rt, cli, spec)
			next := upgraded(spec)
			old := dockertest.Inspect(b, cli, docker.ContainerName(spec.InstanceID))
			cfg := *old.Config
			cfg.Labels = maps.Clone(old.Config.Labels)
			cfg.Labels[runtime.LabelAllocation] = next.AllocationID
			cfg.Env = withGPUs(old.Config.Env, next.GPUUUIDs)
			bareID := dockertest.NewInstanceID()
			dockertest.Cleanup(b, bareID)
			stopTimeout := int(docker.DefaultStopTimeout.Seconds())

			b.StartTimer()
			if _, err := cli.ContainerStop(b.Context(), old.ID, client.ContainerStopOptions{Timeout: &stopTimeout}); err != nil {
				b.Fatal(err)
			}
			created, err := cli.ContainerCreate(b.Context(), client.ContainerCreateOptions{
				Name: docker.ContainerName(bareID), Config: &cfg, HostConfig: old.HostConfig,
			})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := cli.ContainerStart(b.Context(), created.ID, client.ContainerStartOptions{}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			gaps = append(gaps, downtime(b, ticks))
			if _, err := cli.ContainerRemove(b.Context(), created.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
				b.Fatal(err)
			}
			if err := rt.Remove(b.Context(), spec.InstanceID, spec.VolumeName, true); err != nil {
				b.Fatal(err)
			}
		}
		reportDowntime(b, gaps)
	})
}

// withGPUs is a container's environment with its GPU variables set to
// gpus, as the runtime sets them.
func withGPUs(env []string, gpus []string) []string {
	list := strings.Join(gpus, ",")
	out := make([]string, 0, len(env))
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, docker.EnvNvidiaVisibleDevices+"="):
			kv = docker.EnvNvidiaVisibleDevices + "=" + list
		case strings.HasPrefix(kv, docker.EnvCUDAVisibleDevices+"="):
			kv = docker.EnvCUDAVisibleDevices + "=" + list
		}
		out = append(out, kv)
	}
	return out
}

func reportDowntime(b *testing.B, gaps []time.Duration) {
	if len(gaps) == 0 {
		return
	}
	var sum time.Duration
	for _, g := range gaps {
		sum += g
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(sum)/float64(len(gaps)), "downtime_ms")
	b.ReportMetric(ms(slices.Max(gaps)), "max_downtime_ms")
}
