package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
)

// benchWriter is the workload of a moving instance in BenchmarkMoveDowntime:
// it writes checkpoint files worth 1% of the data at a steady pace
// (CKPT_MIB MiB over CKPT_SECONDS, in 1 MiB files, as a training job
// saving state would), and the host's uptime every 3 ms for the downtime.
const benchWriter = `#!/bin/sh
mkdir -p /root/data/ckpt
(
  n=0
  while [ $n -lt CKPT_MIB ]; do
    dd if=/dev/urandom of=/root/data/ckpt/part$n bs=1M count=1 2>/dev/null
    n=$((n+1))
    usleep PAUSE_US
  done
) &
while :; do
  cut -d" " -f1 /proc/uptime >> /root/data/ticks
  usleep 3000
done
`

// BenchmarkMoveDowntime moves a running instance to another host (an
// upgrade from H100 to A100) with 1 GiB and 10 GiB on its volume while it
// writes 1% of that size during the copy, end to end: control plane, two
// agents, real Docker, the SSH copy channel. downtime_ms is the longest gap
// between the instance's own writes (10 ms resolution), moved/data the
// bytes on the wire over the data size, copy_s the move from request to
// switch. 10 GiB needs GPURENT_BENCH_10G=1 (about 25 GB of disk).
func BenchmarkMoveDowntime(b *testing.B) {
	for _, mib := range []int{1024, 10240} {
		b.Run(fmt.Sprintf("%dGiB", mib/1024), func(b *testing.B) {
			if mib > 1024 && os.Getenv("GPURENT_BENCH_10G") == "" {
				b.Skip("set GPURENT_BENCH_10G=1 to move 10 GiB (about 25 GB of disk)")
			}
			f := startMoveFleet(b, fmt.Sprintf("mvb%d", mib/1024), 0)
			var downtimes, ratios, copies []float64
			for range b.N {
				b.StopTimer()
				in := f.alice.instance("rent", "--gpu", moveH100, "--count", "1", "--image", f.image, "--wait")
				dockertest.Cleanup(b, in.ID)
				for part := 0; part*256 < mib; part++ {
					f.sshRun(in.ID, "dd if=/dev/urandom of=/root/data/dataset"+strconv.Itoa(part)+" bs=1M count=256 2>/dev/null")
				}
				// 1% of the data over the first pass's expected length
				// (about 150 MiB/s here).
				ckpt := max(mib/100, 1)
				pause := max(int(float64(mib)/150/float64(ckpt)*1e6)-5000, 0)
				script := strings.NewReplacer("CKPT_MIB", strconv.Itoa(ckpt), "PAUSE_US", strconv.Itoa(pause)).Replace(benchWriter)
				dir := dataDir(b, docker.ScopedContainerName(f.hosts["a"].Name, in.ID))
				if err := os.WriteFile(filepath.Join(dir, "boot.sh"), []byte(script), 0o755); err != nil {
					b.Fatal(err)
				}
				f.alice.must("stop", in.ID, "--wait")
				f.alice.must("start", in.ID, "--wait")
				time.Sleep(time.Second) // the writer under way
				b.StartTimer()
				start := time.Now()
				f.alice.must("upgrade", in.ID, "--gpu", moveA100, "--count", "1", "--yes", "--wait")
				copies = append(copies, time.Since(start).Seconds())
				b.StopTimer()
				ops := f.operations(in.ID)
				if ops[0].Step != "done" {
					b.Fatalf("move ended %s: %s", ops[0].Step, ops[0].Message)
				}
				ratios = append(ratios, float64(ops[0].BytesMoved)/float64(int64(mib+ckpt)<<20))
				var prev, gap float64
				for _, l := range strings.Fields(f.sshRun(in.ID, "cat /root/data/ticks")) {
					if v, err := strconv.ParseFloat(l, 64); err == nil {
						if prev > 0 && v-prev > gap {
							gap = v - prev
						}
						prev = v
					}
				}
				downtimes = append(downtimes, gap*1000)
				f.alice.must("rm", in.ID, "--wait", "--yes")
				b.StartTimer()
			}
			b.ReportMetric(mean(downtimes), "downtime_ms")
			b.ReportMetric(mean(ratios), "moved/data")
			b.ReportMetric(mean(copies), "copy_s")
		})
	}
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
