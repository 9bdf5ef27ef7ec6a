package app

import (
	"strconv"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/incident"
)

// BenchmarkFailover measures, end to end, an Xid 79 under a running
// instance with 1 GiB on its volume: fault injected → the instance running
// on the other host (failover_s), and the incident's end → its SLA credit
// posted (credit_s).
func BenchmarkFailover(b *testing.B) {
	f := startFleetOf(b, "fobench", fleetOptions{typeA: moveH100, typeB: moveH100, gpus: 8})
	f.wireInjector()
	var failovers, credits []float64
	used := map[string]bool{} // faulty GPUs stay out: a second fault on one would join its burst
	for i := range b.N {
		b.StopTimer()
		in := f.alice.instance("rent", "--gpu", moveH100, "--count", "1", "--image", f.image, "--wait")
		dockertest.Cleanup(b, in.ID)
		for part := range 4 {
			f.sshRun(in.ID, "dd if=/dev/urandom of=/root/data/dataset"+strconv.Itoa(part)+" bs=1M count=256 2>/dev/null")
		}
		used[in.GPUs[0]] = true
		time.Sleep(2 * time.Second)
		b.StartTimer()
		start := time.Now()
		f.inject(incident.Fault{UUID: in.GPUs[0], Kind: "xid", Xid: 79, Detail: "GPU has fallen off the bus"})
		op := f.waitStep(in.ID, "done")
		if op.Kind != "failover" {
			b.Fatalf("iteration %d: newest operation %+v", i, op)
		}
		failovers = append(failovers, time.Since(start).Seconds())
		b.StopTimer()
		var d incident.Detail
		eventually(b, "the credit posted", func() bool {
			d = f.incidentsOf(in.ID)[0]
			return creditPosted(d)
		})
		for _, e := range d.Entries {
			if e.Kind == "credit" {
				credits = append(credits, e.At.Sub(*d.Incident.EndedAt).Seconds())
			}
		}
		f.alice.must("rm", in.ID, "--wait", "--yes")
		f.repairAll(used)
		b.StartTimer()
	}
	b.ReportMetric(mean(failovers), "failover_s")
	b.ReportMetric(mean(credits), "credit_s")
}
