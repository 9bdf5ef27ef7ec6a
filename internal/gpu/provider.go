// Package gpu defines how an agent discovers the GPUs of its host. The
// Provider interface has two implementations: a pure-Go fake with scripted
// devices (internal/gpu/fake) for tests, demos and CGO_ENABLED=0 builds, and
// NVML (internal/gpu/nvml, build tag "nvml", cgo) for real hosts.
package gpu

import (
	"context"
	"time"
)

// Device is one GPU as discovered on the host.
type Device struct {
	UUID      string // "GPU-8c1f..." as NVML prints it
	Index     int    // NVML index
	Name      string // the device's own name, "NVIDIA H100 80GB HBM3"
	TypeID    string // the GPU type id it maps to, "h100-80g-sxm"; "" if unknown
	MemoryMiB int64
	PCIBusID  string
	TopoGroup string // NVLink domain or PCIe switch id; GPUs sharing it talk fastest
	NUMANode  int
}

// Provider lists the GPUs of a host.
type Provider interface {
	// Name is "fake" or "nvml".
	Name() string
	Devices(ctx context.Context) ([]Device, error)
	Close() error
}

// Health event kinds a Watcher reports.
const (
	EventXid            = "xid"             // an Xid from the driver (NVML event or the kernel log)
	EventECCDoubleBit   = "ecc_dbe"         // an uncorrectable ECC error
	EventECCSingleBit   = "ecc_sbe"         // corrected ECC errors (a count)
	EventGPULost        = "gpu_lost"        // the GPU stopped answering ("GPU is lost", fell off the bus)
	EventRecoveryAction = "recovery_action" // the driver asks for a reset, a drain, or a node reboot
	EventRemapFailure   = "remap_failure"   // row remapping failed: the memory cannot be repaired
)

// Event is one health event of a GPU.
type Event struct {
	UUID   string
	At     time.Time
	Kind   string // one of the Event* kinds
	Xid    int    // for EventXid
	Detail string // the driver's text, the recovery action ("None", "Reset", "Drain and Reset", "Node Reboot Required"), a count
}

// Sample is one poll of a GPU's telemetry.
type Sample struct {
	UUID           string
	At             time.Time
	UtilPercent    int   // GPU utilisation
	MemUsedMiB     int64 // frame buffer used
	TemperatureC   int
	PowerW         float64
	PowerLimitW    float64 // enforced limit
	DefaultPowerW  float64 // the board's default limit
	ThrottleMask   uint64  // NVML clocks-event reasons (ThrottleHWSlowdown, ...)
	ECCSingleBit   int64   // volatile corrected errors since the driver loaded
	ECCDoubleBit   int64   // volatile uncorrectable errors since the driver loaded
	RemapPending   bool    // remapped rows waiting for a reset
	RemapFailure   bool    // a row remapping failed
	PCIeGen        int     // current link
	PCIeWidth      int
	PCIeMaxGen     int // what the link can do
	PCIeMaxWidth   int
	NVLinkDown     int // NVLink links down that the board has
	XidErrorsTotal int64
}

// Throttle reasons of Sample.ThrottleMask that mean the hardware slowed the
// GPU down (NVML's clocks-event reasons of the same names).
const (
	ThrottleSWPowerCap     uint64 = 0x4
	ThrottleHWSlowdown     uint64 = 0x8
	ThrottleSWThermal      uint64 = 0x20
	ThrottleHWThermal      uint64 = 0x40
	ThrottleHWPowerBrake   uint64 = 0x80
	ThrottleHardwareCauses        = ThrottleHWSlowdown | ThrottleHWThermal | ThrottleHWPowerBrake
)

// Watcher is a Provider that watches its GPUs' health: Events delivers
// events as they happen until ctx ends; Samples polls telemetry now.
type Watcher interface {
	Events(ctx context.Context) (<-chan Event, error)
	Samples(ctx context.Context) ([]Sample, error)
}
