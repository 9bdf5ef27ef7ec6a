package nvml

import (
	"strconv"
	"time"

	"github.com/gpurent/gpurent/internal/gpu"
)

// NVML event type bits (nvmlEventType* in nvml.h), repeated here so the
// mapping below builds and is tested without cgo; the NVML build checks
// that they equal go-nvml's.
const (
	evSingleBitECC   uint64 = 0x1
	evDoubleBitECC   uint64 = 0x2
	evXid            uint64 = 0x8
	evGPUUnavailable uint64 = 0x4000 // drivers from r555 on
	evRecoveryAction uint64 = 0x8000 // drivers from r560 on
)

// watchedEvents are the NVML events a Watcher registers for, where the
// device supports them.
const watchedEvents = evSingleBitECC | evDoubleBitECC | evXid | evGPUUnavailable | evRecoveryAction

// recoveryAction names an NVML recovery action
// (nvmlDeviceGpuRecoveryAction_t) as the Xid catalogue does.
func recoveryAction(v uint64) string {
	switch v {
	case 0:
		return "None"
	case 1:
		return "Reset"
	case 2:
		return "Node Reboot Required"
	case 3:
		return "Drain P2P"
	case 4:
		return "Drain and Reset"
	case 5:
		return "Recover IMEX Domain"
	case 6:
		return "Bus Reset"
	case 7:
		return "System Reboot"
	}
	return "Unknown action " + strconv.FormatUint(v, 10)
}

// eventFromNVML turns one NVML event (its type bit and data) on the GPU
// uuid into a gpu.Event; ok is false for types the watcher does not report.
func eventFromNVML(uuid string, typ, data uint64, at time.Time) (gpu.Event, bool) {
	ev := gpu.Event{UUID: uuid, At: at.UTC()}
	switch typ {
	case evXid:
		ev.Kind, ev.Xid = gpu.EventXid, int(min(data, 1<<31-1))
	case evDoubleBitECC:
		ev.Kind, ev.Detail = gpu.EventECCDoubleBit, "uncorrectable ECC error"
	case evSingleBitECC:
		ev.Kind, ev.Detail = gpu.EventECCSingleBit, "corrected ECC error"
	case evGPUUnavailable:
		ev.Kind, ev.Detail = gpu.EventGPULost, "GPU unavailable"
	case evRecoveryAction:
		ev.Kind, ev.Detail = gpu.EventRecoveryAction, recoveryAction(data)
	default:
		return gpu.Event{}, false
	}
	return ev, true
}

// lostEvent is what a watcher reports when NVML answers "GPU is lost" for
// a device.
func lostEvent(uuid string, at time.Time) gpu.Event {
	return gpu.Event{UUID: uuid, At: at.UTC(), Kind: gpu.EventGPULost, Detail: "GPU is lost"}
}

// milliwatts converts NVML's power readings to watts.
func milliwatts(mw uint32) float64 { return float64(mw) / 1000 }

// Link states as nvlinkDown reads them.
const (
	linkUp = iota
	linkDown
	linkAbsent // no such link: past the board's last, or no NVLink at all
)

// nvlinkDown counts the links that are down among those the board has;
// it stops at the first absent one.
func nvlinkDown(states []int) int {
	down := 0
	for _, s := range states {
		switch s {
		case linkAbsent:
			return down
		case linkDown:
			down++
		}
	}
	return down
}
