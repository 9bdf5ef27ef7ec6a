package nvml

import (
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/gpu"
)

func TestEventFromNVML(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.FixedZone("CST", 8*3600))
	const u = "GPU-8c1f2a3b-0000-0000-0000-000000000000"
	cases := []struct {
		typ, data uint64
		want      gpu.Event
		ok        bool
	}{
		{evXid, 79, gpu.Event{UUID: u, At: at.UTC(), Kind: gpu.EventXid, Xid: 79}, true},
		{evXid, 1 << 40, gpu.Event{UUID: u, At: at.UTC(), Kind: gpu.EventXid, Xid: 1<<31 - 1}, true},
		{evDoubleBitECC, 0, gpu.Event{UUID: u, At: at.UTC(), Kind: gpu.EventECCDoubleBit, Detail: "uncorrectable ECC error"}, true},
		{evSingleBitECC, 0, gpu.Event{UUID: u, At: at.UTC(), Kind: gpu.EventECCSingleBit, Detail: "corrected ECC error"}, true},
		{evGPUUnavailable, 0, gpu.Event{UUID: u, At: at.UTC(), Kind: gpu.EventGPULost, Detail: "GPU unavailable"}, true},
		{evRecoveryAction, 4, gpu.Event{UUID: u, At: at.UTC(), Kind: gpu.EventRecoveryAction, Detail: "Drain and Reset"}, true},
		{evRecoveryAction, 2, gpu.Event{UUID: u, At: at.UTC(), Kind: gpu.EventRecoveryAction, Detail: "Node Reboot Required"}, true},
		{evRecoveryAction, 42, gpu.Event{UUID: u, At: at.UTC(), Kind: gpu.EventRecoveryAction, Detail: "Unknown action 42"}, true},
		{0x4, 0, gpu.Event{}, false},  // P-state change: not a health event
		{0x10, 0, gpu.Event{}, false}, // clock change
	}
	for _, c := range cases {
		got, ok := eventFromNVML(u, c.typ, c.data, at)
		if got != c.want || ok != c.ok {
			t.Errorf("eventFromNVML(%#x, %d) = %+v, %v; want %+v, %v", c.typ, c.data, got, ok, c.want, c.ok)
		}
	}
	if watchedEvents&(0x4|0x10) != 0 {
		t.Error("the watcher registers for performance events")
	}
	if ev := lostEvent(u, at); ev.Kind != gpu.EventGPULost || ev.UUID != u || !ev.At.Equal(at) || ev.At.Location() != time.UTC {
		t.Errorf("lostEvent = %+v", ev)
	}
}

func TestRecoveryActionNames(t *testing.T) {
	// The names the health rules key on (docs/gpus.md).
	for v, want := range map[uint64]string{0: "None", 1: "Reset", 2: "Node Reboot Required", 4: "Drain and Reset"} {
		if got := recoveryAction(v); got != want {
			t.Errorf("recoveryAction(%d) = %q, want %q", v, got, want)
		}
	}
}

func TestNVLinkDownAndUnits(t *testing.T) {
	cases := []struct {
		states []int
		want   int
	}{
		{nil, 0},
		{[]int{linkAbsent}, 0}, // no NVLink
		{[]int{linkUp, linkUp, linkUp, linkAbsent, linkDown}, 0},
		{[]int{linkUp, linkDown, linkUp, linkDown}, 2},
		{[]int{linkDown, linkDown, linkAbsent}, 2},
	}
	for _, c := range cases {
		if got := nvlinkDown(c.states); got != c.want {
			t.Errorf("nvlinkDown(%v) = %d, want %d", c.states, got, c.want)
		}
	}
	if w := milliwatts(699_871); w != 699.871 {
		t.Errorf("milliwatts = %v", w)
	}
}
