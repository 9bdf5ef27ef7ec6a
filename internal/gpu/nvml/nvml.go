//go:build nvml && cgo

package nvml

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/gpu"
)

// Provider lists the host's GPUs through NVML. It is safe for concurrent
// use; Close ends it.
type Provider struct {
	lib   gonvml.Interface
	log   *slog.Logger
	sysfs string // where the kernel's sysfs is mounted, for NUMA fallback

	mu     sync.RWMutex // readers call NVML; Close takes it to shut down
	closed bool

	xidMu sync.Mutex
	xids  map[string]int64 // Xid events delivered, by UUID
}

var _ gpu.Provider = (*Provider)(nil)

// New opens NVML with the default library and no logging: Open(Config{}).
func New() (*Provider, error) { return Open(Config{}) }

// Open loads NVML and initialises it, once. On failure it returns an error
// and never calls NVML again, not even Shutdown: after a failed Init, go-nvml
// kills the process on any call.
func Open(cfg Config) (*Provider, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var opts []gonvml.LibraryOption
	if cfg.LibraryPath != "" {
		opts = append(opts, gonvml.WithLibraryPath(cfg.LibraryPath))
	}
	lib := gonvml.New(opts...)
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		// From here on, lib must not be touched.
		return nil, gpurent.Errorf(gpurent.CodeUnavailable, "NVML unavailable: %s", initFailure(ret))
	}
	p := &Provider{lib: lib, log: log.With("gpu_provider", "nvml"), sysfs: "/sys"}
	if v, ret := lib.SystemGetDriverVersion(); ret == gonvml.SUCCESS {
		p.log.Info("NVML ready", "driver", v)
	}
	return p, nil
}

// initFailure explains a failed Init without asking NVML (whose error
// strings are off limits after a failed Init).
func initFailure(ret gonvml.Return) string {
	switch ret {
	case gonvml.ERROR_LIBRARY_NOT_FOUND:
		return "libnvidia-ml.so.1 not found: is the NVIDIA driver installed?"
	case gonvml.ERROR_DRIVER_NOT_LOADED:
		return "the NVIDIA kernel driver is not loaded"
	case gonvml.ERROR_NO_PERMISSION:
		return "no permission to open the NVIDIA devices (/dev/nvidia*)"
	case gonvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return "the NVML library and the kernel driver are of different versions: reboot or reload the driver after an upgrade"
	case gonvml.ERROR_FUNCTION_NOT_FOUND:
		return "the installed NVML library is too old"
	default:
		return fmt.Sprintf("nvmlInit failed with code %d", int(ret))
	}
}

// Name is "nvml".
func (p *Provider) Name() string { return "nvml" }

// Close shuts NVML down. Devices fails afterwards.
func (p *Provider) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if ret := p.lib.Shutdown(); ret != gonvml.SUCCESS {
		return gpurent.WrapError(gpurent.CodeInternal, ret, "NVML shutdown")
	}
	return nil
}

// probed is one device as read from NVML, with its handle for topology.
type probed struct {
	dev  gonvml.Device
	info gpu.Device
}

// begin starts a read of every GPU (what names it in errors): ctx still
// live, the provider open (held so until unlock), and the GPU count.
func (p *Provider) begin(ctx context.Context, what string) (count int, unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, gpurent.WrapError(gpurent.CodeUnavailable, err, "%s", what)
	}
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		return 0, nil, gpurent.Errorf(gpurent.CodeUnavailable, "NVML provider is closed")
	}
	n, ret := p.lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		p.mu.RUnlock()
		return 0, nil, gpurent.WrapError(gpurent.CodeUnavailable, ret, "NVML could not count the GPUs")
	}
	return n, p.mu.RUnlock, nil
}

// Devices lists the GPUs NVML sees, in NVML index order. A device NVML
// cannot read (fallen off the bus, lost) is left out and logged: the
// control plane then sees it missing.
func (p *Provider) Devices(ctx context.Context) ([]gpu.Device, error) {
	count, unlock, err := p.begin(ctx, "list GPUs")
	if err != nil {
		return nil, err
	}
	defer unlock()
	found := make([]probed, 0, count)
	for i := range count {
		dev, ret := p.lib.DeviceGetHandleByIndex(i)
		if ret != gonvml.SUCCESS {
			p.log.Warn("GPU skipped: no handle", "index", i, "error", ret.Error())
			continue
		}
		info, err := p.describe(i, dev)
		if err != nil {
			p.log.Warn("GPU skipped", "index", i, "error", err)
			continue
		}
		found = append(found, probed{dev: dev, info: info})
	}
	groups := p.probeTopology(found).groups()
	out := make([]gpu.Device, len(found))
	for i, f := range found {
		out[i] = f.info
		out[i].TopoGroup = groups[i]
	}
	return out, nil
}

// describe reads one device. Name, UUID, memory and PCI address are needed;
// the NUMA node falls back to sysfs, then to 0.
func (p *Provider) describe(index int, dev gonvml.Device) (gpu.Device, error) {
	name, ret := dev.GetName()
	if ret != gonvml.SUCCESS {
		return gpu.Device{}, fmt.Errorf("name: %w", ret)
	}
	uuid, ret := dev.GetUUID()
	if ret != gonvml.SUCCESS {
		return gpu.Device{}, fmt.Errorf("UUID: %w", ret)
	}
	mem, ret := dev.GetMemoryInfo()
	if ret != gonvml.SUCCESS {
		return gpu.Device{}, fmt.Errorf("memory: %w", ret)
	}
	pci, ret := dev.GetPciInfo()
	if ret != gonvml.SUCCESS {
		return gpu.Device{}, fmt.Errorf("PCI info: %w", ret)
	}
	memMiB := int64(mem.Total >> 20)
	d := gpu.Device{
		UUID:      uuid,
		Index:     index,
		Name:      name,
		TypeID:    TypeID(name, memMiB),
		MemoryMiB: memMiB,
		PCIBusID:  cString(pci.BusId[:]),
	}
	if d.TypeID == "" {
		p.log.Warn("GPU model not in the type table", "name", name, "memory_mib", memMiB, "uuid", uuid)
	}
	if node, ret := dev.GetNumaNodeId(); ret == gonvml.SUCCESS {
		d.NUMANode = max(node, 0)
	} else if node, err := numaNodeFromSysfs(p.sysfs, d.PCIBusID); err == nil {
		d.NUMANode = node
	} else {
		p.log.Debug("NUMA node unknown, using 0", "uuid", uuid, "nvml", ret.Error(), "sysfs", err)
	}
	return d, nil
}

// probeTopology asks NVML how the devices connect: NVLink peers and NVSwitch
// fabrics first, PCIe switches for the devices without NVLink.
func (p *Provider) probeTopology(found []probed) topology {
	t := topology{busIDs: make([]string, len(found))}
	index := make(map[string]int, len(found))
	for i, f := range found {
		t.busIDs[i] = f.info.PCIBusID
		index[f.info.PCIBusID] = i
	}
	linked := make([]bool, len(found))
	for i, f := range found {
		onSwitch := false
		for link := range gonvml.NVLINK_MAX_LINKS {
			state, ret := f.dev.GetNvLinkState(link)
			if ret == gonvml.ERROR_NOT_SUPPORTED || ret == gonvml.ERROR_INVALID_ARGUMENT {
				break // no NVLink, or past the device's last link
			}
			if ret != gonvml.SUCCESS || state != gonvml.FEATURE_ENABLED {
				continue
			}
			kind, kindRet := f.dev.GetNvLinkRemoteDeviceType(link)
			if kindRet == gonvml.SUCCESS && kind == gonvml.NVLINK_DEVICE_TYPE_SWITCH {
				onSwitch = true
				continue
			}
			remote, ret := f.dev.GetNvLinkRemotePciInfo(link)
			if ret != gonvml.SUCCESS {
				continue
			}
			if j, ok := index[cString(remote.BusId[:])]; ok {
				if j != i {
					t.nvlink = append(t.nvlink, [2]int{i, j})
					linked[i] = true
				}
			} else if kindRet != gonvml.SUCCESS {
				// An old driver that cannot say the remote's kind: a
				// remote that is none of our GPUs is an NVSwitch.
				onSwitch = true
			}
		}
		if onSwitch {
			t.nvswitch = append(t.nvswitch, i)
			linked[i] = true
		}
	}
	for i := range found {
		for j := i + 1; j < len(found); j++ {
			if linked[i] || linked[j] {
				continue
			}
			level, ret := found[i].dev.GetTopologyCommonAncestor(found[j].dev)
			if ret == gonvml.SUCCESS && level <= gonvml.TOPOLOGY_MULTIPLE {
				t.pcie = append(t.pcie, [2]int{i, j})
			}
		}
	}
	return t
}

// cString reads a NUL-terminated C char array.
func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}
