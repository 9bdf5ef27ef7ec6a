package fake

import (
	"math"
	"sync"
	"testing"

	"github.com/gpurent/gpurent"
)

func TestPerformanceDefaultsToHealthy(t *testing.T) {
	p := New(Config{Host: "h", TypeID: "h100-80g-sxm", Count: 2})
	for _, u := range []string{UUID("h", 0), UUID("h", 1), "GPU-not-here"} {
		if f := p.Performance(u); f != 1 {
			t.Errorf("Performance(%s) = %v before any script, want 1", u, f)
		}
	}
}

func TestSetPerformance(t *testing.T) {
	p := New(Config{Host: "h", TypeID: "h100-80g-sxm", Count: 2})
	slow, other := UUID("h", 0), UUID("h", 1)
	if err := p.SetPerformance(slow, 0.85); err != nil {
		t.Fatal(err)
	}
	if f := p.Performance(slow); f != 0.85 {
		t.Errorf("Performance = %v, want 0.85", f)
	}
	if f := p.Performance(other); f != 1 {
		t.Errorf("the other card's Performance = %v, want 1", f)
	}
	if err := p.SetPerformance(other, MaxPerformance); err != nil {
		t.Errorf("factor 2 refused: %v", err)
	}
	// The factor outlives a device list change (a script of a card that
	// fell off the bus and came back).
	devs, _ := p.Devices(t.Context())
	p.SetDevices(devs[1:])
	p.SetDevices(devs)
	if f := p.Performance(slow); f != 0.85 {
		t.Errorf("Performance after SetDevices = %v, want 0.85", f)
	}
	if err := p.SetPerformance(slow, 1); err != nil {
		t.Fatal(err)
	}
	if f := p.Performance(slow); f != 1 {
		t.Errorf("Performance after reset = %v, want 1", f)
	}
}

func TestSetPerformanceRefuses(t *testing.T) {
	p := New(Config{Host: "h", Count: 1})
	u := UUID("h", 0)
	for _, f := range []float64{0, -0.5, 2.0001, math.Inf(1), math.NaN()} {
		if err := p.SetPerformance(u, f); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("SetPerformance(%v) = %v, want invalid", f, err)
		}
	}
	if err := p.SetPerformance("GPU-not-here", 0.9); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("SetPerformance of an unknown card = %v, want not_found", err)
	}
	if f := p.Performance(u); f != 1 {
		t.Errorf("a refused factor changed Performance to %v", f)
	}
}

func TestPerformanceConcurrent(t *testing.T) {
	p := New(Config{Host: "h", Count: 4})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			u := UUID("h", i)
			for j := range 100 {
				if err := p.SetPerformance(u, 0.5+float64(j%3)/4); err != nil {
					t.Error(err)
					return
				}
				_ = p.Performance(UUID("h", (i+1)%4))
			}
		})
	}
	wg.Wait()
}
