package fake

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/gpu"
)

// next waits for an event. The deadline only bounds a hung test.
func next(t *testing.T, ch <-chan gpu.Event) gpu.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the events channel was closed")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event arrived")
	}
	return gpu.Event{}
}

func TestInjectionsReachEverySubscriber(t *testing.T) {
	at := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	p := New(Config{Host: "h", TypeID: "h100-80g-sxm", Count: 4, MemoryMiB: 81559, Now: func() time.Time { return at }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := p.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u := UUID("h", 2)
	p.InjectXid(u, 79, "GPU has fallen off the bus")
	p.InjectECC(u, true)
	p.InjectECC(u, false)
	p.InjectECC(u, false)
	p.InjectRecoveryAction(u, "Drain and Reset")
	p.InjectRemapFailure(u)
	p.Lose(u)
	want := []gpu.Event{
		{UUID: u, At: at, Kind: gpu.EventXid, Xid: 79, Detail: "GPU has fallen off the bus"},
		{UUID: u, At: at, Kind: gpu.EventECCDoubleBit, Detail: "1"},
		{UUID: u, At: at, Kind: gpu.EventECCSingleBit, Detail: "1"},
		{UUID: u, At: at, Kind: gpu.EventECCSingleBit, Detail: "2"},
		{UUID: u, At: at, Kind: gpu.EventRecoveryAction, Detail: "Drain and Reset"},
		{UUID: u, At: at, Kind: gpu.EventRemapFailure, Detail: "row remapping failed"},
		{UUID: u, At: at, Kind: gpu.EventGPULost, Detail: "GPU is lost"},
	}
	for _, ch := range []<-chan gpu.Event{a, b} {
		for i, w := range want {
			if got := next(t, ch); got != w {
				t.Errorf("event %d = %+v, want %+v", i, got, w)
			}
		}
	}
	devs, _ := p.Devices(ctx)
	if len(devs) != 3 {
		t.Fatalf("a lost GPU is still listed: %d devices", len(devs))
	}
	samples, err := p.Samples(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		if s.UUID == u {
			t.Fatal("a lost GPU still has samples")
		}
	}

	// A subscriber that ended stops receiving; the others go on.
	cctx, ccancel := context.WithCancel(ctx)
	c, _ := p.Events(cctx)
	ccancel()
	for range c {
	}
	p.InjectXid(UUID("h", 0), 13, "Graphics SM Warp Exception")
	if got := next(t, a); got.Xid != 13 {
		t.Fatalf("after another subscriber left: %+v", got)
	}

	// Close ends every channel and refuses new ones.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for range a {
	}
	if _, err := p.Events(ctx); !gpurent.IsCode(err, gpurent.CodeUnavailable) {
		t.Fatalf("Events after Close: %v", err)
	}
	if _, err := p.Samples(ctx); !gpurent.IsCode(err, gpurent.CodeUnavailable) {
		t.Fatalf("Samples after Close: %v", err)
	}
}

func TestHealthySamplesByType(t *testing.T) {
	cases := []struct {
		typeID  string
		powerW  float64
		pcieGen int
	}{
		{"h100-80g-sxm", 700, 5},
		{"h100-80g-pcie", 350, 5},
		{"a100-80g-sxm", 400, 4},
		{"rtx4090-24g", 450, 4},
		{"t4-16g", 70, 3},
		{"", 300, 4},
	}
	for _, c := range cases {
		p := New(Config{Host: "h", TypeID: c.typeID, Count: 8})
		samples, err := p.Samples(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(samples) != 8 {
			t.Fatalf("%s: %d samples", c.typeID, len(samples))
		}
		for i, s := range samples {
			if s.UUID != UUID("h", i) || s.At.IsZero() {
				t.Errorf("%s sample %d: %+v", c.typeID, i, s)
			}
			if s.TemperatureC < 35 || s.TemperatureC > 45 {
				t.Errorf("%s: %d °C", c.typeID, s.TemperatureC)
			}
			if s.DefaultPowerW != c.powerW || s.PowerLimitW != c.powerW || s.PowerW <= 0 || s.PowerW > 0.25*c.powerW {
				t.Errorf("%s: power %.1f W of %.1f (default %.1f)", c.typeID, s.PowerW, s.PowerLimitW, s.DefaultPowerW)
			}
			if s.PCIeGen != c.pcieGen || s.PCIeMaxGen != c.pcieGen || s.PCIeWidth != 16 || s.PCIeMaxWidth != 16 {
				t.Errorf("%s: PCIe gen %d/%d x%d/%d", c.typeID, s.PCIeGen, s.PCIeMaxGen, s.PCIeWidth, s.PCIeMaxWidth)
			}
			if s.ThrottleMask != 0 || s.ECCDoubleBit != 0 || s.RemapFailure || s.RemapPending || s.NVLinkDown != 0 || s.UtilPercent != 0 {
				t.Errorf("%s: not healthy: %+v", c.typeID, s)
			}
		}
	}
}

func TestSetSampleAndCounters(t *testing.T) {
	p := New(Config{Host: "h", TypeID: "a100-80g-sxm", Count: 2})
	u := UUID("h", 1)
	p.SetSample(u, func(s *gpu.Sample) {
		s.UtilPercent = 100
		s.TemperatureC = 88
		s.PowerW = 398
		s.PowerLimitW = 250
		s.ThrottleMask = gpu.ThrottleHWSlowdown | gpu.ThrottleSWPowerCap
		s.PCIeGen, s.PCIeWidth = 3, 8
		s.NVLinkDown = 2
		s.RemapPending = true
		s.UUID = "ignored"
	})
	p.InjectXid(u, 31, "")
	p.InjectECC(u, false)
	p.InjectRemapFailure(u)
	samples, err := p.Samples(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := samples[1]
	if s.UUID != u || s.UtilPercent != 100 || s.TemperatureC != 88 || s.PowerW != 398 || s.PowerLimitW != 250 ||
		s.DefaultPowerW != 400 || s.ThrottleMask != gpu.ThrottleHWSlowdown|gpu.ThrottleSWPowerCap ||
		s.PCIeGen != 3 || s.PCIeWidth != 8 || s.PCIeMaxGen != 4 || s.NVLinkDown != 2 || !s.RemapPending ||
		!s.RemapFailure || s.XidErrorsTotal != 1 || s.ECCSingleBit != 1 {
		t.Fatalf("scripted sample = %+v", s)
	}
	if other := samples[0]; other.TemperatureC > 45 || other.UtilPercent != 0 {
		t.Fatalf("the other GPU changed: %+v", other)
	}
	// The driver stops answering: Samples fails as Devices does.
	p.SetError(gpurent.Errorf(gpurent.CodeUnavailable, "NVML: GPU is lost"))
	if _, err := p.Samples(context.Background()); err == nil {
		t.Fatal("Samples ignored the scripted error")
	}
}

func TestInjectWhileSubscribing(t *testing.T) {
	p := New(Config{Host: "h", Count: 8})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const perWriter = 200
	ch, err := p.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				p.InjectXid(UUID("h", w), i, "")
				if i%50 == 0 {
					sub, cancelSub := context.WithCancel(ctx)
					if _, err := p.Events(sub); err != nil {
						t.Error(err)
					}
					cancelSub()
				}
			}
		}()
	}
	seen := map[string]int{}
	for range 4 * perWriter {
		ev := next(t, ch)
		if ev.Xid != seen[ev.UUID] {
			t.Fatalf("events of %s out of order: got Xid %d, want %d", ev.UUID, ev.Xid, seen[ev.UUID])
		}
		seen[ev.UUID]++
	}
	wg.Wait()
}
