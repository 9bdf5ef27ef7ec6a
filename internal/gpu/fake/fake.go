// Package fake is a pure-Go gpu.Provider with scripted devices, for tests,
// demos (`gpurent serve --demo`) and CGO_ENABLED=0 builds. It touches no
// hardware: the devices are built from a Config, with UUIDs derived
// deterministically from the host name and the device index, and can be
// replaced at any time to script faults (a GPU falling off the bus, a
// provider that stops answering).
//
// It is also a gpu.Watcher: InjectXid, InjectECC, Lose,
// InjectRecoveryAction and InjectRemapFailure script health events, and
// SetSample scripts telemetry (healthy idle figures of the device's type
// until then).
//
// SetPerformance scripts how fast a card measures (a factor of its type's
// healthy figures, 1 until then): the agent's synthetic benchmark runner
// reads it through Performance, so a demo or a test can show an
// underperforming card being caught.
package fake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/gpu"
)

// Config describes the scripted devices of one host.
type Config struct {
	Host      string // host name; seeds the UUIDs
	TypeID    string // GPU type id every device maps to, "h100-80g-sxm"
	Name      string // device name, "NVIDIA H100 80GB HBM3"; "" gives a generic one
	Count     int    // number of GPUs; negative counts as 0
	MemoryMiB int64  // memory per GPU
	// GroupSize is the number of GPUs per NVLink domain / PCIe switch; 0 (or
	// more than Count) puts all of them in one group.
	GroupSize int
	// NUMANodes splits the GPUs into this many contiguous NUMA nodes; 0 or 1
	// puts all on node 0.
	NUMANodes int
	// Now stamps events and samples (default time.Now).
	Now func() time.Time
}

// Provider is the fake provider. It is safe for concurrent use.
type Provider struct {
	clock func() time.Time

	mu        sync.Mutex
	devices   []gpu.Device
	err       error
	closed    bool
	telemetry map[string]*gpu.Sample // by UUID, from the first use on
	subs      []*subscriber
	done      chan struct{} // closed by Close: ends every Events channel
	// perf holds the scripted performance factors other than 1, by UUID.
	perf map[string]float64
}

var _ gpu.Provider = (*Provider)(nil)

// New builds a provider whose devices follow cfg.
func New(cfg Config) *Provider {
	return &Provider{devices: Devices(cfg), clock: cfg.Now}
}

// Devices returns the devices cfg describes, without making a provider. It
// is what New lists at first and a convenient base for SetDevices.
func Devices(cfg Config) []gpu.Device {
	n := max(cfg.Count, 0)
	group := cfg.GroupSize
	if group <= 0 || group > n {
		group = n
	}
	numa := max(cfg.NUMANodes, 1)
	name := cfg.Name
	if name == "" {
		name = "gpurent fake GPU"
	}
	devs := make([]gpu.Device, 0, n)
	for i := range n {
		devs = append(devs, gpu.Device{
			UUID:      UUID(cfg.Host, i),
			Index:     i,
			Name:      name,
			TypeID:    cfg.TypeID,
			MemoryMiB: cfg.MemoryMiB,
			// Domain 0, bus i+1: plausible, distinct, stable.
			PCIBusID:  fmt.Sprintf("00000000:%02X:00.0", (i+1)&0xff),
			TopoGroup: fmt.Sprintf("group%d", i/group),
			NUMANode:  i * numa / n,
		})
	}
	return devs
}

// UUID returns the UUID the fake gives device index on host, formatted as
// NVML prints one: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx. The same host
// and index always give the same UUID; different ones practically never
// collide (it is a SHA-256 prefix).
func UUID(host string, index int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "gpurent-fake-gpu\x00%s\x00%d", host, index))
	h := hex.EncodeToString(sum[:16])
	return "GPU-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// Name is "fake".
func (p *Provider) Name() string { return "fake" }

// Devices returns a copy of the current device list, or the scripted error.
func (p *Provider) Devices(ctx context.Context) ([]gpu.Device, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, gpurent.Errorf(gpurent.CodeUnavailable, "fake GPU provider is closed")
	}
	if p.err != nil {
		return nil, p.err
	}
	return append([]gpu.Device(nil), p.devices...), nil
}

// SetDevices replaces the device list (a copy of devs is kept). Removing a
// device scripts a GPU that disappeared; changing one scripts a changed
// inventory.
func (p *Provider) SetDevices(devs []gpu.Device) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.devices = append([]gpu.Device(nil), devs...)
}

// SetError makes Devices fail with err until it is called again with nil,
// scripting a provider (driver) that stops answering.
func (p *Provider) SetError(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
}

// Close marks the provider closed: Devices, Samples and Events fail
// afterwards and every Events channel is closed.
func (p *Provider) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed && p.done != nil {
		close(p.done)
	}
	p.closed = true
	return nil
}
