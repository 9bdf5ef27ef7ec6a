package faultrules

import (
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/gpu"
)

// BenchmarkBurstsAndClassify cuts a day of one noisy GPU's events (one
// every 30 s, a pause of 10 min every 50 events) into bursts and
// classifies each.
func BenchmarkBurstsAndClassify(b *testing.B) {
	r := mustRules(b)
	xids := []int{13, 45, 48, 63, 79, 154, 31, 999}
	var evs []gpurent.GPUEvent
	at := t0
	for i := 0; i < 2880; i++ {
		at = at.Add(30 * time.Second)
		if i%50 == 0 {
			at = at.Add(10 * time.Minute)
		}
		evs = append(evs, gpurent.GPUEvent{GPUID: "GPU-a", At: at, Kind: gpu.EventXid, Xid: xids[i%len(xids)], Detail: "Reset"})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, burst := range Bursts(evs, BurstSilence) {
			_ = r.Classify(burst)
		}
	}
}

// BenchmarkAssessor polls an 8-GPU host every 10 s and asks for findings
// after each poll, with an hour of samples in the window.
func BenchmarkAssessor(b *testing.B) {
	a := NewAssessor(time.Hour)
	uuids := []string{"GPU-0", "GPU-1", "GPU-2", "GPU-3", "GPU-4", "GPU-5", "GPU-6", "GPU-7"}
	poll := func(i int) time.Time {
		at := t0.Add(time.Duration(i) * 10 * time.Second)
		for _, id := range uuids {
			s := healthy(id, 0)
			s.At = at
			if i%17 == 0 {
				s.ThrottleMask = gpu.ThrottleHWSlowdown
			}
			a.Add(s)
		}
		return at
	}
	for i := 0; i < 360; i++ {
		poll(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = a.Findings(poll(360 + i))
	}
}
