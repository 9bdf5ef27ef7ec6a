package faultrules

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/gpu"
)

var t0 = time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC)

// xidEv is an Xid event sec seconds after t0.
func xidEv(sec int, xid int, detail string) gpurent.GPUEvent {
	return gpurent.GPUEvent{ID: "gev", GPUID: "GPU-a", At: t0.Add(time.Duration(sec) * time.Second),
		Kind: gpu.EventXid, Xid: xid, Detail: detail}
}

// kindEv is a non-Xid event sec seconds after t0.
func kindEv(sec int, kind, detail string) gpurent.GPUEvent {
	return gpurent.GPUEvent{ID: "gev", GPUID: "GPU-a", At: t0.Add(time.Duration(sec) * time.Second),
		Kind: kind, Detail: detail}
}

func checkVerdict(t *testing.T, name string, v Verdict, class gpurent.FaultClass, xid int) {
	t.Helper()
	if v.Class != class || v.Xid != xid {
		t.Errorf("%s: class %s xid %d, want %s %d (%+v)", name, v.Class, v.Xid, class, xid, v)
	}
	if v.Action != ActionFor(class) || v.Attribution != AttributionFor(class) {
		t.Errorf("%s: action %s attribution %s, want %s %s", name, v.Action, v.Attribution, ActionFor(class), AttributionFor(class))
	}
	if v.Cause == "" || strings.ContainsAny(v.Cause, "\r\n") {
		t.Errorf("%s: cause %q is not one line", name, v.Cause)
	}
}

func TestClassifyEveryXidOfTheTable(t *testing.T) {
	r := mustRules(t)
	for class, xids := range tableClasses {
		for _, xid := range xids {
			v := r.Classify([]gpurent.GPUEvent{xidEv(0, xid, "driver text")})
			if xid == 154 {
				// 154 goes by its recovery action; "driver text" names none.
				checkVerdict(t, "Xid 154 without an action", v, gpurent.FaultUnknown, 154)
				continue
			}
			checkVerdict(t, "Xid", v, class, xid)
			rule, _ := r.Lookup(xid)
			if want := "Xid " + strconv.Itoa(xid) + ": " + rule.Name; v.Cause != want {
				t.Errorf("Xid %d: cause %q, want %q", xid, v.Cause, want)
			}
		}
	}
	v := r.Classify([]gpurent.GPUEvent{xidEv(0, 79, "")})
	if v.Cause != "Xid 79: GPU has fallen off the bus" || v.Action != ActNodeFailover || v.Attribution != gpurent.AttrHost {
		t.Fatalf("Xid 79: %+v", v)
	}
	v = r.Classify([]gpurent.GPUEvent{xidEv(0, 54, "")})
	checkVerdict(t, "Xid 54", v, gpurent.FaultHost, 54)
	if v.Action != ActDelistHost {
		t.Fatalf("Xid 54 action %s", v.Action)
	}
}

func TestClassifySpecialCases(t *testing.T) {
	r := mustRules(t)
	cases := []struct {
		name  string
		burst []gpurent.GPUEvent
		class gpurent.FaultClass
		xid   int
	}{
		{"45 alone", []gpurent.GPUEvent{xidEv(0, 45, "")}, gpurent.FaultApp, 45},
		{"45 with 13", []gpurent.GPUEvent{xidEv(0, 45, ""), xidEv(1, 13, "")}, gpurent.FaultApp, 13},
		{"13 then 45", []gpurent.GPUEvent{xidEv(0, 13, ""), xidEv(1, 45, "")}, gpurent.FaultApp, 13},
		{"45 with 31", []gpurent.GPUEvent{xidEv(0, 45, ""), xidEv(5, 31, "")}, gpurent.FaultApp, 31},
		{"45 does not hide a DBE", []gpurent.GPUEvent{xidEv(0, 45, ""), xidEv(1, 48, "")}, gpurent.FaultReset, 48},
		{"48 alone", []gpurent.GPUEvent{xidEv(0, 48, "")}, gpurent.FaultReset, 48},
		{"48 with 63", []gpurent.GPUEvent{xidEv(0, 48, ""), xidEv(2, 63, "")}, gpurent.FaultDrainReset, 48},
		{"48 with 64", []gpurent.GPUEvent{xidEv(0, 48, ""), xidEv(2, 64, "")}, gpurent.FaultDrainReset, 48},
		{"63 logged before 48", []gpurent.GPUEvent{xidEv(0, 63, ""), xidEv(0, 48, "")}, gpurent.FaultDrainReset, 48},
		{"64 logged before 48", []gpurent.GPUEvent{xidEv(0, 64, ""), xidEv(1, 48, "")}, gpurent.FaultDrainReset, 48},
		{"63 alone", []gpurent.GPUEvent{xidEv(0, 63, "")}, gpurent.FaultInfo, 63},
		{"64 alone", []gpurent.GPUEvent{xidEv(0, 64, "")}, gpurent.FaultReset, 64},
		{"63 with 95 is not 48", []gpurent.GPUEvent{xidEv(0, 95, ""), xidEv(1, 63, "")}, gpurent.FaultReset, 95},
		{"154 None", []gpurent.GPUEvent{xidEv(0, 154, "None")}, gpurent.FaultInfo, 154},
		{"154 Reset", []gpurent.GPUEvent{xidEv(0, 154, "Reset")}, gpurent.FaultReset, 154},
		{"154 Drain and Reset", []gpurent.GPUEvent{xidEv(0, 154, "Drain and Reset")}, gpurent.FaultDrainReset, 154},
		{"154 Drain P2P", []gpurent.GPUEvent{xidEv(0, 154, "Drain P2P")}, gpurent.FaultDrainReset, 154},
		{"154 Node Reboot Required", []gpurent.GPUEvent{xidEv(0, 154, "Node Reboot Required")}, gpurent.FaultNode, 154},
		{"154 kernel text", []gpurent.GPUEvent{xidEv(0, 154, "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)")}, gpurent.FaultReset, 154},
		{"154 kernel text, back to none", []gpurent.GPUEvent{xidEv(0, 154, "GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)")}, gpurent.FaultInfo, 154},
		{"154 no action", []gpurent.GPUEvent{xidEv(0, 154, "")}, gpurent.FaultUnknown, 154},
		{"recovery_action Reset", []gpurent.GPUEvent{kindEv(0, gpu.EventRecoveryAction, "Reset")}, gpurent.FaultReset, 0},
		{"recovery_action Node Reboot", []gpurent.GPUEvent{kindEv(0, gpu.EventRecoveryAction, "Node Reboot Required")}, gpurent.FaultNode, 0},
		{"gpu_lost", []gpurent.GPUEvent{kindEv(0, gpu.EventGPULost, "GPU is lost")}, gpurent.FaultNode, 0},
		{"ecc_dbe", []gpurent.GPUEvent{kindEv(0, gpu.EventECCDoubleBit, "1")}, gpurent.FaultReset, 0},
		{"ecc_sbe", []gpurent.GPUEvent{kindEv(0, gpu.EventECCSingleBit, "12")}, gpurent.FaultInfo, 0},
		{"remap_failure", []gpurent.GPUEvent{kindEv(0, gpu.EventRemapFailure, "")}, gpurent.FaultRMA, 0},
		{"remap_pending", []gpurent.GPUEvent{kindEv(0, KindRemapPending, "")}, gpurent.FaultInfo, 0},
		{"throttle", []gpurent.GPUEvent{kindEv(0, KindThrottle, "7%")}, gpurent.FaultDegraded, 0},
		{"pcie_degraded", []gpurent.GPUEvent{kindEv(0, KindPCIeDegraded, "Gen3")}, gpurent.FaultDegraded, 0},
		{"nvlink_down", []gpurent.GPUEvent{kindEv(0, KindNVLinkDown, "1")}, gpurent.FaultDegraded, 0},
		{"power_limit", []gpurent.GPUEvent{kindEv(0, KindPowerLimit, "500 W")}, gpurent.FaultDegraded, 0},
		{"benchmark_fail", []gpurent.GPUEvent{kindEv(0, KindBenchmark, "gemm_bf16 at 0.85")}, gpurent.FaultDegraded, 0},
		{"temperature", []gpurent.GPUEvent{kindEv(0, KindTemperature, "91 C")}, gpurent.FaultInfo, 0},
		{"unknown kind", []gpurent.GPUEvent{kindEv(0, "smoke", "")}, gpurent.FaultUnknown, 0},
		{"unknown Xid", []gpurent.GPUEvent{xidEv(0, 999, "something new")}, gpurent.FaultUnknown, 999},
		{"first non-sympathetic decides: 13 then 48", []gpurent.GPUEvent{xidEv(0, 13, ""), xidEv(10, 48, "")}, gpurent.FaultApp, 13},
		{"first non-sympathetic decides: 48 then 13", []gpurent.GPUEvent{xidEv(0, 48, ""), xidEv(10, 13, "")}, gpurent.FaultReset, 48},
		{"first non-sympathetic decides: 79 then 13", []gpurent.GPUEvent{xidEv(0, 79, ""), xidEv(10, 13, "")}, gpurent.FaultNode, 79},
		{"order by time, not by slice", []gpurent.GPUEvent{xidEv(10, 13, ""), xidEv(0, 48, "")}, gpurent.FaultReset, 48},
		{"sympathetic only: the first decides", []gpurent.GPUEvent{xidEv(0, 63, ""), xidEv(1, 45, "")}, gpurent.FaultInfo, 63},
		{"a lost GPU raises an app burst", []gpurent.GPUEvent{xidEv(0, 13, ""), xidEv(30, 79, "")}, gpurent.FaultNode, 13},
		{"gpu_lost raises an app burst", []gpurent.GPUEvent{xidEv(0, 31, ""), kindEv(30, gpu.EventGPULost, "")}, gpurent.FaultNode, 31},
		{"the driver's reboot raises a reset", []gpurent.GPUEvent{xidEv(0, 48, ""), xidEv(1, 154, "Node Reboot Required")}, gpurent.FaultNode, 48},
		{"the driver's drain raises a reset", []gpurent.GPUEvent{xidEv(0, 95, ""), xidEv(1, 154, "Drain and Reset")}, gpurent.FaultDrainReset, 95},
		{"a milder recovery action does not lower", []gpurent.GPUEvent{xidEv(0, 79, ""), xidEv(1, 154, "Reset")}, gpurent.FaultNode, 79},
		{"154 None does not raise", []gpurent.GPUEvent{xidEv(0, 13, ""), xidEv(1, 154, "None")}, gpurent.FaultApp, 13},
		{"a lost GPU does not lower RMA", []gpurent.GPUEvent{kindEv(0, gpu.EventRemapFailure, ""), kindEv(1, gpu.EventGPULost, "")}, gpurent.FaultRMA, 0},
	}
	for _, c := range cases {
		in := append([]gpurent.GPUEvent(nil), c.burst...)
		v := r.Classify(c.burst)
		checkVerdict(t, c.name, v, c.class, c.xid)
		for i := range in {
			if in[i] != c.burst[i] {
				t.Fatalf("%s: Classify modified its input", c.name)
			}
		}
	}
}

func TestClassifyCauses(t *testing.T) {
	r := mustRules(t)
	cases := []struct {
		burst []gpurent.GPUEvent
		want  string
	}{
		{[]gpurent.GPUEvent{xidEv(0, 48, ""), xidEv(1, 64, "")}, "Xid 48: Double-bit ECC error, with Xid 64: ECC page retirement or row remapping recording failed"},
		{[]gpurent.GPUEvent{xidEv(0, 154, "Drain and Reset")}, "Xid 154: GPU recovery action: Drain and Reset"},
		{[]gpurent.GPUEvent{xidEv(0, 13, ""), xidEv(30, 79, "")}, "Xid 13: Graphics engine exception; then Xid 79: GPU has fallen off the bus"},
		{[]gpurent.GPUEvent{xidEv(0, 999, "line one\nline\ttwo")}, "Xid 999: not in the rules, for review: line one line two"},
		{[]gpurent.GPUEvent{kindEv(0, KindThrottle, "hw_slowdown in 7 of 100")}, "Hardware throttling under load: hw_slowdown in 7 of 100"},
		{[]gpurent.GPUEvent{kindEv(0, gpu.EventGPULost, "")}, "GPU is lost"},
	}
	for _, c := range cases {
		if v := r.Classify(c.burst); v.Cause != c.want {
			t.Errorf("cause %q, want %q", v.Cause, c.want)
		}
	}
	long := r.Classify([]gpurent.GPUEvent{xidEv(0, 999, strings.Repeat("x", 5000))})
	if n := len([]rune(long.Cause)); n > 200 {
		t.Errorf("cause of %d runes for a long driver text", n)
	}
}

func TestClassifyResetWhenIdle(t *testing.T) {
	r := mustRules(t)
	for _, c := range []struct {
		ev   gpurent.GPUEvent
		want bool
	}{
		{xidEv(0, 94, ""), true},
		{xidEv(0, 13, ""), false},
		{xidEv(0, 63, ""), true},
		{xidEv(0, 92, ""), true},
		{xidEv(0, 48, ""), true},
		{xidEv(0, 154, "None"), false},
		{kindEv(0, KindRemapPending, ""), true},
	} {
		if v := r.Classify([]gpurent.GPUEvent{c.ev}); v.ResetWhenIdle != c.want {
			t.Errorf("%s %d: ResetWhenIdle %v, want %v", c.ev.Kind, c.ev.Xid, v.ResetWhenIdle, c.want)
		}
	}
	v := r.Classify([]gpurent.GPUEvent{xidEv(0, 94, "")})
	if v.Class != gpurent.FaultApp || v.Attribution != gpurent.AttrTenant {
		t.Fatalf("Xid 94: %+v", v)
	}
}

func TestClassifyEmpty(t *testing.T) {
	if v := mustRules(t).Classify(nil); v != (Verdict{}) {
		t.Fatalf("empty burst: %+v", v)
	}
}

func TestBurstsAtTheSilenceEdge(t *testing.T) {
	at := func(d time.Duration) gpurent.GPUEvent {
		return gpurent.GPUEvent{GPUID: "GPU-a", At: t0.Add(d), Kind: gpu.EventXid, Xid: 13}
	}
	sizes := func(b [][]gpurent.GPUEvent) []int {
		var out []int
		for _, x := range b {
			out = append(out, len(x))
		}
		return out
	}
	eq := func(a, b []int) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	cases := []struct {
		name    string
		evs     []gpurent.GPUEvent
		silence time.Duration
		want    []int
	}{
		{"none", nil, BurstSilence, nil},
		{"one", []gpurent.GPUEvent{at(0)}, BurstSilence, []int{1}},
		{"gap of exactly 3 min stays", []gpurent.GPUEvent{at(0), at(3 * time.Minute)}, BurstSilence, []int{2}},
		{"gap of 3 min and 1 ns closes", []gpurent.GPUEvent{at(0), at(3*time.Minute + 1)}, BurstSilence, []int{1, 1}},
		{"a chain of 3 min gaps is one burst", []gpurent.GPUEvent{at(0), at(3 * time.Minute), at(6 * time.Minute), at(9 * time.Minute)}, BurstSilence, []int{4}},
		{"default silence", []gpurent.GPUEvent{at(0), at(3 * time.Minute), at(6*time.Minute + 1)}, 0, []int{2, 1}},
		{"unsorted input", []gpurent.GPUEvent{at(10 * time.Minute), at(0), at(time.Minute), at(11 * time.Minute)}, BurstSilence, []int{2, 2}},
		{"same instant", []gpurent.GPUEvent{at(0), at(0), at(0)}, BurstSilence, []int{3}},
		{"custom silence", []gpurent.GPUEvent{at(0), at(time.Minute), at(2*time.Minute + 1)}, time.Minute, []int{2, 1}},
	}
	for _, c := range cases {
		in := append([]gpurent.GPUEvent(nil), c.evs...)
		b := Bursts(c.evs, c.silence)
		if got := sizes(b); !eq(got, c.want) {
			t.Errorf("%s: bursts %v, want %v", c.name, got, c.want)
		}
		for i := range in {
			if in[i] != c.evs[i] {
				t.Fatalf("%s: Bursts modified its input", c.name)
			}
		}
		for _, burst := range b {
			for i := 1; i < len(burst); i++ {
				if burst[i].At.Before(burst[i-1].At) {
					t.Fatalf("%s: burst not sorted", c.name)
				}
			}
		}
		if len(b) > 1 {
			// appending to one burst must not overwrite the next
			first := b[0]
			_ = append(first, at(time.Hour))
			if b[1][0].At.Equal(t0.Add(time.Hour)) {
				t.Fatalf("%s: bursts share their backing array", c.name)
			}
		}
	}
}
