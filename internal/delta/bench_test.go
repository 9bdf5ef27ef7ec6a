package delta

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// benchTree writes a 256 MiB tree: a 64 MiB file and 48 of 4 MiB in 4
// directories. It returns the file paths.
func benchTree(b *testing.B, root string) []string {
	g := &gen{t: b, rng: rand.New(rand.NewPCG(9, 10))}
	var files []string
	p := filepath.Join(root, "big.bin")
	g.must(os.WriteFile(p, g.data(64<<20), 0o644))
	files = append(files, p)
	for i := 0; i < 48; i++ {
		d := filepath.Join(root, "d"+string(rune('0'+i%4)))
		g.must(os.MkdirAll(d, 0o755))
		p := filepath.Join(d, "f"+string(rune('a'+i/4))+".bin")
		g.must(os.WriteFile(p, g.data(4<<20), 0o644))
		files = append(files, p)
	}
	return files
}

const benchBytes = 256 << 20

func BenchmarkSync(b *testing.B) {
	src := b.TempDir()
	files := benchTree(b, src)
	b.Run("first-copy", func(b *testing.B) {
		b.SetBytes(benchBytes)
		var wire int64
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			dst := filepath.Join(b.TempDir(), "dst")
			os.Mkdir(dst, 0o755)
			b.StartTimer()
			s, _ := syncTrees(b, src, dst, Options{Final: true}, Options{})
			wire += s.BytesSent + s.BytesReceived
		}
		b.ReportMetric(float64(wire)/float64(b.N)/benchBytes, "wire/data")
	})
	b.Run("delta-1pct", func(b *testing.B) {
		dst := filepath.Join(b.TempDir(), "dst")
		os.Mkdir(dst, 0o755)
		syncTrees(b, src, dst, Options{Final: true}, Options{})
		// A new seed per run: the same writes twice would change nothing.
		g := &gen{t: b, rng: rand.New(rand.NewPCG(11, uint64(time.Now().UnixNano())))}
		b.SetBytes(benchBytes)
		var wire, lit int64
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			// 1%: 41 regions of 64 KiB at random places.
			for j := 0; j < 41; j++ {
				p := files[g.rng.IntN(len(files))]
				f, err := os.OpenFile(p, os.O_RDWR, 0)
				g.must(err)
				st, _ := f.Stat()
				_, err = f.WriteAt(g.data(64<<10), g.rng.Int64N(st.Size()-64<<10))
				g.must(err)
				f.Close()
			}
			b.StartTimer()
			s, _ := syncTrees(b, src, dst, Options{Final: true}, Options{})
			wire += s.BytesSent + s.BytesReceived
			lit += s.LiteralBytes
		}
		b.StopTimer()
		requireEqualTrees(b, src, dst)
		b.ReportMetric(float64(wire)/float64(b.N)/benchBytes, "wire/data")
		b.ReportMetric(float64(lit)/float64(b.N)/benchBytes, "literal/data")
	})
}
