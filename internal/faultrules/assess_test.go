package faultrules

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/gpu"
)

// healthy is a loaded, healthy H100 sample sec seconds after t0.
func healthy(uuid string, sec int) gpu.Sample {
	return gpu.Sample{UUID: uuid, At: t0.Add(time.Duration(sec) * time.Second), UtilPercent: 95,
		PowerW: 650, PowerLimitW: 700, DefaultPowerW: 700,
		PCIeGen: 5, PCIeWidth: 16, PCIeMaxGen: 5, PCIeMaxWidth: 16}
}

func kinds(evs []gpu.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.UUID+":"+e.Kind)
	}
	return out
}

// feed adds n samples 10 s apart from start, the first throttled of them
// throttled with mask.
func feed(a *Assessor, start, n, throttled int, mask uint64) int {
	for i := 0; i < n; i++ {
		s := healthy("GPU-a", (start+i)*10)
		if i < throttled {
			s.ThrottleMask = mask
		}
		a.Add(s)
	}
	return start + n
}

func TestThrottleThresholdEdges(t *testing.T) {
	for _, c := range []struct {
		name         string
		n, throttled int
		mask         uint64
		util         int
		want         bool
	}{
		{"5 of 100 is not more than 5%", 100, 5, gpu.ThrottleHWSlowdown, 95, false},
		{"6 of 100", 100, 6, gpu.ThrottleHWSlowdown, 95, true},
		{"1 of 20 is 5%", 20, 1, gpu.ThrottleHWThermal, 95, false},
		{"2 of 20", 20, 2, gpu.ThrottleHWPowerBrake, 95, true},
		{"1 of 19", 19, 1, gpu.ThrottleHWSlowdown, 95, true},
		{"software power cap does not count", 100, 50, gpu.ThrottleSWPowerCap | gpu.ThrottleSWThermal, 95, false},
		{"idle samples do not count (util 9)", 100, 50, gpu.ThrottleHWSlowdown, 9, false},
		{"util 10 is loaded", 100, 6, gpu.ThrottleHWSlowdown, 10, true},
		{"fewer loaded samples than the minimum", DefaultMinLoaded - 1, DefaultMinLoaded - 1, gpu.ThrottleHWSlowdown, 95, false},
		{"the minimum", DefaultMinLoaded, 1, gpu.ThrottleHWSlowdown, 95, true},
	} {
		a := NewAssessor(time.Hour)
		for i := 0; i < c.n; i++ {
			s := healthy("GPU-a", i*10)
			s.UtilPercent = c.util
			if i < c.throttled {
				s.ThrottleMask = c.mask
			}
			a.Add(s)
		}
		got := a.Findings(t0.Add(time.Duration(c.n*10) * time.Second))
		has := len(got) == 1 && got[0].Kind == KindThrottle
		if has != c.want || (!c.want && len(got) != 0) {
			t.Errorf("%s: findings %v, want throttle %v", c.name, kinds(got), c.want)
		}
		if has && (!strings.Contains(got[0].Detail, "of") || got[0].UUID != "GPU-a") {
			t.Errorf("%s: finding %+v", c.name, got[0])
		}
	}
}

func TestThrottleDetailAndIdleMix(t *testing.T) {
	a := NewAssessor(0)
	// 50 idle samples with throttling that must not count, 100 loaded with 6 throttled.
	for i := 0; i < 50; i++ {
		s := healthy("GPU-a", i*10)
		s.UtilPercent = 0
		s.ThrottleMask = gpu.ThrottleHWSlowdown
		a.Add(s)
	}
	end := feed(a, 50, 100, 6, gpu.ThrottleHWSlowdown|gpu.ThrottleHWThermal)
	got := a.Findings(t0.Add(time.Duration(end*10) * time.Second))
	if len(got) != 1 {
		t.Fatalf("findings %v", kinds(got))
	}
	want := "hardware throttling (hw_slowdown, hw_thermal) in 6 of 100 loaded samples (6.0%) over 1h0m0s"
	if got[0].Detail != want {
		t.Fatalf("detail %q, want %q", got[0].Detail, want)
	}
}

func TestFindingOncePerOnset(t *testing.T) {
	a := NewAssessor(time.Hour)
	end := feed(a, 0, 100, 10, gpu.ThrottleHWSlowdown)
	at := func(i int) time.Time { return t0.Add(time.Duration(i*10) * time.Second) }
	if got := a.Findings(at(end)); len(got) != 1 {
		t.Fatalf("onset: %v", kinds(got))
	}
	if got := a.Findings(at(end)); len(got) != 0 {
		t.Fatalf("second call reported again: %v", kinds(got))
	}
	end = feed(a, end, 10, 0, 0)
	if got := a.Findings(at(end)); len(got) != 0 {
		t.Fatalf("still throttling, reported again: %v", kinds(got))
	}
	// An hour of clean samples: the throttled ones age out and it clears.
	end = feed(a, end, 360, 0, 0)
	if got := a.Findings(at(end)); len(got) != 0 {
		t.Fatalf("clearing reported something: %v", kinds(got))
	}
	// It comes back: reported once more.
	end = feed(a, end, 30, 30, gpu.ThrottleHWPowerBrake)
	got := a.Findings(at(end))
	if len(got) != 1 || got[0].Kind != KindThrottle || !strings.Contains(got[0].Detail, "hw_power_brake") {
		t.Fatalf("return: %v", got)
	}
	if got := a.Findings(at(end)); len(got) != 0 {
		t.Fatalf("return reported twice: %v", kinds(got))
	}
}

func TestWindowEdge(t *testing.T) {
	a := NewAssessor(time.Hour)
	feed(a, 0, 20, 20, gpu.ThrottleHWSlowdown) // t0 .. t0+190s
	// At t0+1h+190s the last sample is exactly a window old: out.
	if got := a.Findings(t0.Add(time.Hour + 190*time.Second)); len(got) != 0 {
		t.Fatalf("samples a whole window old still count: %v", kinds(got))
	}
	b := NewAssessor(time.Hour)
	feed(b, 0, 20, 20, gpu.ThrottleHWSlowdown)
	// 1 ns less: the last 10 samples are in (a window ago, now] (the
	// minimum), and throttled.
	if got := b.Findings(t0.Add(time.Hour + 100*time.Second - 1)); len(got) != 1 {
		t.Fatalf("samples inside the window do not count: %v", kinds(got))
	}
	// Samples after now are not judged yet.
	c := NewAssessor(time.Hour)
	feed(c, 0, 20, 20, gpu.ThrottleHWSlowdown)
	if got := c.Findings(t0.Add(-time.Second)); len(got) != 0 {
		t.Fatalf("future samples counted: %v", kinds(got))
	}
}

func TestPowerPCIeNVLinkRemap(t *testing.T) {
	a := NewAssessor(time.Hour)
	s := healthy("GPU-b", 0)
	s.PowerLimitW = 450
	a.Add(s)
	s = healthy("GPU-c", 0)
	s.NVLinkDown = 2
	s.RemapPending = true
	a.Add(s)
	s = healthy("GPU-d", 0)
	s.PowerLimitW = 699.7 // NVML milliwatt rounding is not a lowered limit
	a.Add(s)
	s = healthy("GPU-a", 0)
	s.PCIeGen, s.PCIeWidth = 4, 16
	a.Add(s)
	got := a.Findings(t0.Add(time.Second))
	want := []string{"GPU-a:" + KindPCIeDegraded, "GPU-b:" + KindPowerLimit, "GPU-c:" + KindNVLinkDown, "GPU-c:" + KindRemapPending}
	if strings.Join(kinds(got), " ") != strings.Join(want, " ") {
		t.Fatalf("findings %v, want %v", kinds(got), want)
	}
	details := map[string]string{}
	for _, e := range got {
		details[e.UUID+":"+e.Kind] = e.Detail
		if !e.At.Equal(t0.Add(time.Second)) {
			t.Errorf("%s at %v", e.Kind, e.At)
		}
	}
	if d := details["GPU-b:"+KindPowerLimit]; d != "enforced power limit 450 W, below the default 700 W" {
		t.Errorf("power detail %q", d)
	}
	if d := details["GPU-a:"+KindPCIeDegraded]; d != "PCIe Gen4 x16 at 95% utilisation, the link can do Gen5 x16" {
		t.Errorf("PCIe detail %q", d)
	}
	if d := details["GPU-c:"+KindNVLinkDown]; !strings.HasPrefix(d, "2 NVLink") {
		t.Errorf("NVLink detail %q", d)
	}
}

func TestPCIeJudgedUnderLoadOnly(t *testing.T) {
	a := NewAssessor(time.Hour)
	// An idle GPU drops its link to Gen1 to save power: not a finding.
	idle := healthy("GPU-a", 0)
	idle.UtilPercent, idle.PCIeGen = 0, 1
	a.Add(idle)
	if got := a.Findings(t0.Add(time.Second)); len(got) != 0 {
		t.Fatalf("idle link: %v", kinds(got))
	}
	loaded := healthy("GPU-a", 10)
	loaded.PCIeWidth = 8
	a.Add(loaded)
	if got := a.Findings(t0.Add(11 * time.Second)); len(got) != 1 || got[0].Kind != KindPCIeDegraded {
		t.Fatalf("x8 under load: %v", kinds(got))
	}
	// Idle again at Gen1: the last loaded sample still says x8; no repeat.
	idle.At = t0.Add(20 * time.Second)
	a.Add(idle)
	if got := a.Findings(t0.Add(21 * time.Second)); len(got) != 0 {
		t.Fatalf("repeat: %v", kinds(got))
	}
	// Loaded at full width: cleared. Then x8 again: reported again.
	a.Add(healthy("GPU-a", 30))
	if got := a.Findings(t0.Add(31 * time.Second)); len(got) != 0 {
		t.Fatalf("clear: %v", kinds(got))
	}
	loaded.At = t0.Add(40 * time.Second)
	a.Add(loaded)
	if got := a.Findings(t0.Add(41 * time.Second)); len(got) != 1 {
		t.Fatalf("return: %v", kinds(got))
	}
}

func TestSilentGPUIsForgotten(t *testing.T) {
	a := NewAssessor(time.Hour)
	s := healthy("GPU-a", 0)
	s.NVLinkDown = 1
	a.Add(s)
	if got := a.Findings(t0.Add(time.Second)); len(got) != 1 {
		t.Fatalf("onset: %v", kinds(got))
	}
	if got := a.Findings(t0.Add(2 * time.Hour)); len(got) != 0 {
		t.Fatalf("silent GPU: %v", kinds(got))
	}
	s.At = t0.Add(2*time.Hour + time.Second)
	a.Add(s)
	if got := a.Findings(t0.Add(2*time.Hour + 2*time.Second)); len(got) != 1 {
		t.Fatalf("back after silence: %v", kinds(got))
	}
}

func TestAssessorOutOfOrderAndConcurrent(t *testing.T) {
	a := NewAssessor(time.Hour)
	a.SetMinLoaded(1)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 99; i >= 0; i-- { // newest first
				s := healthy("GPU-a", i*10)
				if i%10 == g {
					s.ThrottleMask = gpu.ThrottleHWSlowdown
				}
				a.Add(s)
			}
		}(g)
	}
	wg.Wait()
	got := a.Findings(t0.Add(1000 * time.Second))
	// 400 loaded samples, 40 throttled: 10%.
	if len(got) != 1 || !strings.Contains(got[0].Detail, "40 of 400") {
		t.Fatalf("findings %+v", got)
	}
}

func TestFromProto(t *testing.T) {
	at := time.Date(2025, 3, 1, 16, 0, 0, 0, time.FixedZone("CST", 8*3600))
	ev := GPUEventFromProto("host-1", agentproto.HealthEvent{ID: "e1", UUID: "GPU-a", At: at, Kind: "xid", Xid: 79, Detail: "fell"})
	if ev.HostID != "host-1" || ev.GPUID != "GPU-a" || ev.Xid != 79 || ev.At.Location() != time.UTC || !ev.At.Equal(at) || ev.ID != "e1" {
		t.Fatalf("event %+v", ev)
	}
	s := SampleFromProto(agentproto.GPUSample{UUID: "GPU-a", At: at, UtilPercent: 50, PowerLimitW: 300, DefaultPowerW: 350,
		ThrottleMask: gpu.ThrottleHWSlowdown, PCIeGen: 4, PCIeWidth: 16, PCIeMaxGen: 4, PCIeMaxWidth: 16, NVLinkDown: 1, XidTotal: 3})
	if s.UUID != "GPU-a" || s.At.Location() != time.UTC || s.PowerLimitW != 300 || s.DefaultPowerW != 350 ||
		s.ThrottleMask != gpu.ThrottleHWSlowdown || s.NVLinkDown != 1 || s.XidErrorsTotal != 3 || s.PCIeMaxGen != 4 {
		t.Fatalf("sample %+v", s)
	}
}
