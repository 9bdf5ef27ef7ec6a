//go:build nvml && cgo

package nvml

import (
	"context"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/gpu"
)

var _ gpu.Watcher = (*Provider)(nil)

// The event bits of events.go must be NVML's: a difference fails the
// build here (a constant index out of range).
var _ = [1]struct{}{}[evSingleBitECC-gonvml.EventTypeSingleBitEccError]
var _ = [1]struct{}{}[evDoubleBitECC-gonvml.EventTypeDoubleBitEccError]
var _ = [1]struct{}{}[evXid-gonvml.EventTypeXidCriticalError]
var _ = [1]struct{}{}[evGPUUnavailable-gonvml.EventTypeGpuUnavailableError]
var _ = [1]struct{}{}[evRecoveryAction-gonvml.EventTypeGpuRecoveryAction]

// waitMillis bounds one EventSetWait, so that cancellation and Close are
// noticed within it.
const waitMillis = 500

// Events registers an NVML event set for the health events each GPU
// supports (Xid, ECC, and on recent drivers GPU unavailable and recovery
// actions) and delivers them until ctx ends or the provider is closed.
// Each call has its own event set.
func (p *Provider) Events(ctx context.Context) (<-chan gpu.Event, error) {
	count, unlock, err := p.begin(ctx, "watch GPUs")
	if err != nil {
		return nil, err
	}
	defer unlock()
	set, ret := p.lib.EventSetCreate()
	if ret != gonvml.SUCCESS {
		return nil, gpurent.WrapError(gpurent.CodeUnavailable, ret, "NVML could not create an event set")
	}
	uuids := map[gonvml.Device]string{}
	for i := range count {
		dev, ret := p.lib.DeviceGetHandleByIndex(i)
		if ret != gonvml.SUCCESS {
			p.log.Warn("GPU not watched: no handle", "index", i, "error", ret.Error())
			continue
		}
		uuid, ret := dev.GetUUID()
		if ret != gonvml.SUCCESS {
			p.log.Warn("GPU not watched: no UUID", "index", i, "error", ret.Error())
			continue
		}
		supported, ret := dev.GetSupportedEventTypes()
		if ret != gonvml.SUCCESS {
			p.log.Warn("GPU not watched: event types unknown", "uuid", uuid, "error", ret.Error())
			continue
		}
		mask := supported & watchedEvents
		if mask&evXid == 0 {
			p.log.Warn("GPU does not report Xid events through NVML; the kernel log still does", "uuid", uuid)
		}
		if mask == 0 {
			continue
		}
		if ret := dev.RegisterEvents(mask, set); ret != gonvml.SUCCESS {
			p.log.Warn("GPU not watched: event registration failed", "uuid", uuid, "error", ret.Error())
			continue
		}
		uuids[dev] = uuid
	}
	out := make(chan gpu.Event, 64)
	go p.watch(ctx, set, uuids, out)
	return out, nil
}

// watch waits on set until ctx ends or the provider closes, then frees it
// (unless Close already shut NVML down, which frees everything).
func (p *Provider) watch(ctx context.Context, set gonvml.EventSet, uuids map[gonvml.Device]string, out chan<- gpu.Event) {
	defer close(out)
	defer func() {
		p.mu.RLock()
		defer p.mu.RUnlock()
		if !p.closed {
			set.Free()
		}
	}()
	lost := map[string]bool{}
	send := func(ev gpu.Event) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for ctx.Err() == nil {
		p.mu.RLock()
		if p.closed {
			p.mu.RUnlock()
			return
		}
		var (
			data gonvml.EventData
			ret  = gonvml.ERROR_TIMEOUT
		)
		if len(uuids) > 0 {
			data, ret = set.Wait(waitMillis)
		}
		p.mu.RUnlock()
		now := time.Now()
		switch ret {
		case gonvml.SUCCESS:
			uuid, known := uuids[data.Device]
			if !known {
				continue
			}
			ev, ok := eventFromNVML(uuid, data.EventType, data.EventData, now)
			if !ok {
				continue
			}
			if ev.Kind == gpu.EventXid {
				p.countXid(uuid)
			}
			if !send(ev) {
				return
			}
			continue
		case gonvml.ERROR_TIMEOUT:
			if len(uuids) > 0 {
				continue
			}
		case gonvml.ERROR_GPU_IS_LOST:
			if uuid, known := uuids[data.Device]; known && !lost[uuid] {
				lost[uuid] = true
				if !send(lostEvent(uuid, now)) {
					return
				}
			} else if !known {
				p.log.Error("NVML: a GPU is lost", "error", ret.Error())
			}
		default:
			p.log.Warn("NVML event wait failed", "error", ret.Error())
		}
		// Nothing to wait on, or NVML failing: do not spin.
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// countXid counts an Xid delivered on uuid, for Sample.XidErrorsTotal.
func (p *Provider) countXid(uuid string) {
	p.xidMu.Lock()
	defer p.xidMu.Unlock()
	if p.xids == nil {
		p.xids = map[string]int64{}
	}
	p.xids[uuid]++
}

func (p *Provider) xidTotal(uuid string) int64 {
	p.xidMu.Lock()
	defer p.xidMu.Unlock()
	return p.xids[uuid]
}

// Samples reads every GPU's telemetry now. A reading the GPU does not
// support (ECC on GeForce, NVLink on PCIe boards) stays zero; a GPU NVML
// cannot read at all is left out, as Devices leaves it out.
func (p *Provider) Samples(ctx context.Context) ([]gpu.Sample, error) {
	count, unlock, err := p.begin(ctx, "sample GPUs")
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := make([]gpu.Sample, 0, count)
	for i := range count {
		dev, ret := p.lib.DeviceGetHandleByIndex(i)
		if ret != gonvml.SUCCESS {
			continue
		}
		uuid, ret := dev.GetUUID()
		if ret != gonvml.SUCCESS {
			continue
		}
		out = append(out, p.sample(dev, uuid))
	}
	return out, nil
}

// sample reads one GPU. p.mu is read-held.
func (p *Provider) sample(dev gonvml.Device, uuid string) gpu.Sample {
	s := gpu.Sample{UUID: uuid, At: time.Now().UTC(), XidErrorsTotal: p.xidTotal(uuid)}
	ok := func(ret gonvml.Return) bool { return ret == gonvml.SUCCESS }
	if u, ret := dev.GetUtilizationRates(); ok(ret) {
		s.UtilPercent = int(u.Gpu)
	}
	if m, ret := dev.GetMemoryInfo(); ok(ret) {
		s.MemUsedMiB = int64(m.Used >> 20)
	}
	if t, ret := dev.GetTemperature(gonvml.TEMPERATURE_GPU); ok(ret) {
		s.TemperatureC = int(t)
	}
	if mw, ret := dev.GetPowerUsage(); ok(ret) {
		s.PowerW = milliwatts(mw)
	}
	if mw, ret := dev.GetEnforcedPowerLimit(); ok(ret) {
		s.PowerLimitW = milliwatts(mw)
	}
	if mw, ret := dev.GetPowerManagementDefaultLimit(); ok(ret) {
		s.DefaultPowerW = milliwatts(mw)
	}
	if mask, ret := dev.GetCurrentClocksEventReasons(); ok(ret) {
		s.ThrottleMask = mask
	} else if mask, ret := dev.GetCurrentClocksThrottleReasons(); ok(ret) {
		s.ThrottleMask = mask // drivers before r535
	}
	if n, ret := dev.GetTotalEccErrors(gonvml.MEMORY_ERROR_TYPE_CORRECTED, gonvml.VOLATILE_ECC); ok(ret) {
		s.ECCSingleBit = int64(n)
	}
	if n, ret := dev.GetTotalEccErrors(gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.VOLATILE_ECC); ok(ret) {
		s.ECCDoubleBit = int64(n)
	}
	if _, _, pending, failed, ret := dev.GetRemappedRows(); ok(ret) {
		s.RemapPending, s.RemapFailure = pending, failed
	}
	if g, ret := dev.GetCurrPcieLinkGeneration(); ok(ret) {
		s.PCIeGen = g
	}
	if w, ret := dev.GetCurrPcieLinkWidth(); ok(ret) {
		s.PCIeWidth = w
	}
	// The most the GPU and the slot together can do.
	if g, ret := dev.GetMaxPcieLinkGeneration(); ok(ret) {
		s.PCIeMaxGen = g
	}
	if w, ret := dev.GetMaxPcieLinkWidth(); ok(ret) {
		s.PCIeMaxWidth = w
	}
	states := make([]int, 0, gonvml.NVLINK_MAX_LINKS)
	for link := range gonvml.NVLINK_MAX_LINKS {
		st, ret := dev.GetNvLinkState(link)
		switch {
		case ret == gonvml.ERROR_NOT_SUPPORTED || ret == gonvml.ERROR_INVALID_ARGUMENT:
			states = append(states, linkAbsent)
		case ret != gonvml.SUCCESS || st != gonvml.FEATURE_ENABLED:
			states = append(states, linkDown)
		default:
			states = append(states, linkUp)
		}
		if states[len(states)-1] == linkAbsent {
			break
		}
	}
	s.NVLinkDown = nvlinkDown(states)
	return s
}
