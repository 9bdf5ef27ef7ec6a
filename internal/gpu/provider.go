// Package gpu defines how an agent discovers the GPUs of its host. The
// Provider interface has two implementations: a pure-Go fake with scripted
// devices (internal/gpu/fake) for tests, demos and CGO_ENABLED=0 builds, and
// NVML (internal/gpu/nvml, build tag "nvml", cgo) for real hosts.
package gpu

import "context"

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
