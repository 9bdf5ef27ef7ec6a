package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/faultrules"
	"github.com/gpurent/gpurent/internal/gpu"
	"github.com/gpurent/gpurent/internal/gpu/kmsg"
)

// Health watching.
const (
	defaultHealthInterval = 10 * time.Second
	// maxPendingHealth bounds the health events kept while the control
	// plane is unreachable; past it the oldest are dropped (and logged).
	maxPendingHealth = 10_000
	// maxHealthPerReport bounds the health events one report carries.
	maxHealthPerReport = 500
	// maxHealthBatch bounds the events journaled with one write.
	maxHealthBatch = 256
	// xidDedupeWindow: an Xid of one GPU seen by NVML and in the kernel log
	// this close together is one Xid.
	xidDedupeWindow = 5 * time.Second
	// KernelLogOff in Config.KernelLog turns the kernel log reader off.
	KernelLogOff = "off"
)

// Sources of health events, for the Xid dedupe.
const (
	sourceDriver = "driver"     // the provider's Events (NVML)
	sourceKernel = "kernel_log" // kmsg
)

// healthState is the agent's side of GPU health: the journal of events
// not yet acknowledged, the latest telemetry, and the signal that an event
// waits to be reported.
type healthState struct {
	path string
	kick chan struct{} // buffered 1: report now

	mu      sync.Mutex
	pending []agentproto.HealthEvent
	samples []agentproto.GPUSample
}

type healthFile struct {
	// Pending are the events not yet acknowledged, oldest first.
	Pending []agentproto.HealthEvent `json:"pending"`
}

func healthPath(stateDir string) string { return filepath.Join(stateDir, "health.json") }

// openHealth loads the health journal, or starts an empty one.
func openHealth(stateDir string) (*healthState, error) {
	h := &healthState{path: healthPath(stateDir), kick: make(chan struct{}, 1)}
	b, err := os.ReadFile(h.path)
	if errors.Is(err, os.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return nil, err
	}
	var f healthFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("health journal %s is unreadable: %w", h.path, err)
	}
	h.pending = f.Pending
	return h, nil
}

// add journals events, durably, and asks for a report. It returns how
// many old events the bound dropped. When the journal cannot be written
// the events are still kept in memory and sent, and the error returned.
func (h *healthState) add(evs ...agentproto.HealthEvent) (dropped int, err error) {
	h.mu.Lock()
	h.pending = append(h.pending, evs...)
	if n := len(h.pending) - maxPendingHealth; n > 0 {
		h.pending = slices.Delete(h.pending, 0, n)
		dropped = n
	}
	b, merr := json.Marshal(healthFile{Pending: h.pending})
	h.mu.Unlock()
	if merr != nil {
		err = merr
	} else {
		err = writeDurably(h.path, b)
	}
	select {
	case h.kick <- struct{}{}:
	default:
	}
	return dropped, err
}

// pendingEvents returns a copy of the unacknowledged events, at most n.
func (h *healthState) pendingEvents(n int) []agentproto.HealthEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.pending[:min(n, len(h.pending))])
}

// ack drops the acknowledged events and saves the journal.
func (h *healthState) ack(ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	done := make(map[string]bool, len(ids))
	for _, id := range ids {
		done[id] = true
	}
	h.mu.Lock()
	before := len(h.pending)
	h.pending = slices.DeleteFunc(h.pending, func(e agentproto.HealthEvent) bool { return done[e.ID] })
	changed := len(h.pending) != before
	b, err := json.Marshal(healthFile{Pending: h.pending})
	h.mu.Unlock()
	if !changed || err != nil {
		return err
	}
	return writeDurably(h.path, b)
}

func (h *healthState) setSamples(s []agentproto.GPUSample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.samples = s
}

func (h *healthState) latestSamples() []agentproto.GPUSample {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.samples)
}

// writeDurably replaces path with b: temp file, fsync, rename, fsync of
// the directory.
func writeDurably(path string, b []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// xidSeen is one Xid as one source reported it.
type xidSeen struct {
	uuid    string
	xid     int
	source  string
	at      time.Time
	matched bool // the other source reported it too
}

// xidDedupe pairs an Xid that NVML and the kernel log both report: the
// second report of a pair within the window is a duplicate. Repeats from
// one source are never merged (a GPU can raise the same Xid again and
// again), and each report pairs with at most one of the other source.
type xidDedupe struct {
	window time.Duration
	seen   []xidSeen
}

// duplicate records an Xid report and says whether the other source
// already reported it.
func (d *xidDedupe) duplicate(uuid string, xid int, source string, at time.Time) bool {
	d.seen = slices.DeleteFunc(d.seen, func(s xidSeen) bool { return at.Sub(s.at) > d.window })
	for i := range d.seen {
		s := &d.seen[i]
		if !s.matched && s.uuid == uuid && s.xid == xid && s.source != source && s.at.Sub(at).Abs() <= d.window {
			s.matched = true
			return true
		}
	}
	d.seen = append(d.seen, xidSeen{uuid: uuid, xid: xid, source: source, at: at})
	return false
}

// healthWatch is the state of one run of the health loop.
type healthWatch struct {
	a        *Agent
	w        gpu.Watcher
	events   <-chan gpu.Event         // nil while not subscribed
	kernel   <-chan kmsg.Record       // nil while the kernel log is not read
	batch    []agentproto.HealthEvent // recorded, to be journaled
	assessor *faultrules.Assessor
	dedupe   xidDedupe
	byBus    map[string]string // kmsg.BusKey → UUID; kept after a GPU vanishes
	remapped map[string]bool   // GPUs whose remap failure was reported
	// Failing sources are retried each poll, and logged once a streak.
	eventsFailing, kernelFailing, samplesFailing bool
}

// healthLoop watches the GPUs when the provider is a gpu.Watcher: it
// journals the provider's events and the kernel log's Xids, polls
// telemetry every HealthInterval and turns it into findings. Every event
// asks for a report at once.
func (a *Agent) healthLoop(ctx context.Context) error {
	w, ok := a.cfg.GPUs.(gpu.Watcher)
	if !ok {
		return nil
	}
	hw := &healthWatch{
		a:        a,
		w:        w,
		assessor: faultrules.NewAssessor(faultrules.AssessWindow),
		dedupe:   xidDedupe{window: xidDedupeWindow},
		byBus:    map[string]string{},
		remapped: map[string]bool{},
	}
	hw.events = hw.subscribe(ctx)
	hw.kernel = hw.followKernel(ctx)
	hw.poll(ctx)
	hw.flush()
	tick := time.NewTicker(a.cfg.HealthInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-hw.events:
			hw.onEvent(ctx, ev, ok)
		case rec, ok := <-hw.kernel:
			hw.onKernel(ctx, rec, ok)
		case <-tick.C:
			if hw.events == nil {
				hw.events = hw.subscribe(ctx)
			}
			if hw.kernel == nil {
				hw.kernel = hw.followKernel(ctx)
			}
			hw.poll(ctx)
		}
		// Take what else is ready too, and journal it all with one write:
		// an Xid storm costs one fsync per batch, not one per Xid.
		for more := true; more && len(hw.batch) < maxHealthBatch; {
			select {
			case ev, ok := <-hw.events:
				hw.onEvent(ctx, ev, ok)
			case rec, ok := <-hw.kernel:
				hw.onKernel(ctx, rec, ok)
			default:
				more = false
			}
		}
		hw.flush()
	}
}

// onEvent handles one receive from the provider's events.
func (hw *healthWatch) onEvent(ctx context.Context, ev gpu.Event, ok bool) {
	if !ok {
		hw.events = nil
		if ctx.Err() == nil {
			hw.a.log.Warn("agent: GPU event stream ended; subscribing again at the next poll")
		}
		return
	}
	hw.driverEvent(ev)
}

// onKernel handles one receive from the kernel log reader.
func (hw *healthWatch) onKernel(ctx context.Context, rec kmsg.Record, ok bool) {
	if !ok {
		hw.kernel = nil // the reader logged why; reopened at the next poll
		return
	}
	hw.kernelXid(ctx, rec)
}

// subscribe asks the provider for its events; nil when it fails (logged
// once until it works again).
func (hw *healthWatch) subscribe(ctx context.Context) <-chan gpu.Event {
	ch, err := hw.w.Events(ctx)
	if err != nil {
		if !hw.eventsFailing && ctx.Err() == nil {
			hw.a.log.Error("agent: cannot watch GPU events; retrying every poll", "provider", hw.a.cfg.GPUs.Name(), "err", err)
		}
		hw.eventsFailing = true
		return nil
	}
	if hw.eventsFailing {
		hw.a.log.Info("agent: watching GPU events again")
	}
	hw.eventsFailing = false
	return ch
}

// followKernel starts the kernel log reader when one is configured.
func (hw *healthWatch) followKernel(ctx context.Context) <-chan kmsg.Record {
	path := hw.a.cfg.KernelLog
	if path == "" || path == KernelLogOff {
		return nil
	}
	r := &kmsg.Reader{Path: path, Now: hw.a.now, Logger: hw.a.log}
	ch, err := r.Follow(ctx)
	if err != nil {
		if !hw.kernelFailing && ctx.Err() == nil {
			hw.a.log.Error("agent: cannot read the kernel log for Xids (it needs root or CAP_SYSLOG); retrying every poll", "path", path, "err", err)
		}
		hw.kernelFailing = true
		return nil
	}
	hw.kernelFailing = false
	return ch
}

// driverEvent journals one event from the provider.
func (hw *healthWatch) driverEvent(ev gpu.Event) {
	at := ev.At
	if at.IsZero() {
		at = hw.a.now()
	}
	if ev.Kind == gpu.EventXid && hw.dedupe.duplicate(ev.UUID, ev.Xid, sourceDriver, hw.a.now()) {
		return
	}
	if ev.Kind == gpu.EventRemapFailure {
		// A remap failure stays until the card is serviced: reported
		// once, by whichever saw it first (a poll can read the state
		// before the provider's event arrives).
		if hw.remapped[ev.UUID] {
			return
		}
		hw.remapped[ev.UUID] = true
	}
	hw.record(agentproto.HealthEvent{UUID: ev.UUID, At: at, Kind: ev.Kind, Xid: ev.Xid, Detail: ev.Detail})
}

// kernelXid journals one Xid from the kernel log. A bus id that matches
// no GPU the agent has seen is reported host-wide (no UUID) with the
// address in the detail.
func (hw *healthWatch) kernelXid(ctx context.Context, rec kmsg.Record) {
	uuid, known := hw.byBus[rec.PCIBusID]
	if !known {
		hw.refreshBuses(ctx)
		uuid, known = hw.byBus[rec.PCIBusID]
	}
	detail := rec.Detail
	if !known {
		detail = "PCI " + rec.PCIBusID + ": " + detail
		hw.a.log.Warn("agent: Xid on a PCI device that is none of the known GPUs", "pci", rec.PCIBusID, "xid", rec.Xid)
	}
	if hw.dedupe.duplicate(uuid, rec.Xid, sourceKernel, hw.a.now()) {
		return
	}
	hw.record(agentproto.HealthEvent{UUID: uuid, At: rec.At, Kind: gpu.EventXid, Xid: rec.Xid, Detail: detail})
}

// record gives an event its id and queues it for flush.
func (hw *healthWatch) record(ev agentproto.HealthEvent) {
	ev.ID = gpurent.NewID(gpurent.PrefixGPUEvent)
	ev.At = ev.At.UTC()
	hw.a.log.Warn("agent: GPU health event", "uuid", ev.UUID, "kind", ev.Kind, "xid", ev.Xid, "detail", ev.Detail)
	hw.batch = append(hw.batch, ev)
}

// flush journals the recorded events and asks for a report.
func (hw *healthWatch) flush() {
	if len(hw.batch) == 0 {
		return
	}
	dropped, err := hw.a.health.add(hw.batch...)
	hw.batch = hw.batch[:0]
	if dropped > 0 {
		hw.a.log.Error("agent: health journal full; oldest unacknowledged health events dropped", "dropped", dropped)
	}
	if err != nil {
		hw.a.log.Error("agent: cannot save the health journal; the events are sent but lost if the agent stops first", "err", err)
	}
}

// refreshBuses learns the PCI addresses of the GPUs listed now.
func (hw *healthWatch) refreshBuses(ctx context.Context) {
	devs, err := hw.a.cfg.GPUs.Devices(ctx)
	if err != nil {
		return
	}
	for _, d := range devs {
		if key, ok := kmsg.BusKey(d.PCIBusID); ok {
			hw.byBus[key] = d.UUID
		}
	}
}

// poll reads telemetry, keeps it for the reports, and journals the
// findings that started.
func (hw *healthWatch) poll(ctx context.Context) {
	hw.refreshBuses(ctx)
	samples, err := hw.w.Samples(ctx)
	if err != nil {
		if !hw.samplesFailing && ctx.Err() == nil {
			hw.a.log.Error("agent: cannot read GPU telemetry", "provider", hw.a.cfg.GPUs.Name(), "err", err)
		}
		hw.samplesFailing = true
		return
	}
	hw.samplesFailing = false
	now := hw.a.now()
	out := make([]agentproto.GPUSample, 0, len(samples))
	for _, s := range samples {
		if s.At.IsZero() {
			s.At = now
		}
		hw.assessor.Add(s)
		out = append(out, sampleProto(s))
		if s.RemapFailure && !hw.remapped[s.UUID] {
			hw.remapped[s.UUID] = true
			hw.record(agentproto.HealthEvent{UUID: s.UUID, At: s.At, Kind: gpu.EventRemapFailure, Detail: "row remapping failed"})
		}
	}
	hw.a.health.setSamples(out)
	for _, f := range hw.assessor.Findings(now) {
		hw.record(agentproto.HealthEvent{UUID: f.UUID, At: f.At, Kind: f.Kind, Xid: f.Xid, Detail: f.Detail})
	}
}

// sampleProto is a sample as the report carries it.
func sampleProto(s gpu.Sample) agentproto.GPUSample {
	return agentproto.GPUSample{
		UUID:          s.UUID,
		At:            s.At.UTC(),
		UtilPercent:   s.UtilPercent,
		MemUsedMiB:    s.MemUsedMiB,
		TemperatureC:  s.TemperatureC,
		PowerW:        s.PowerW,
		PowerLimitW:   s.PowerLimitW,
		DefaultPowerW: s.DefaultPowerW,
		ThrottleMask:  s.ThrottleMask,
		ECCSingleBit:  s.ECCSingleBit,
		ECCDoubleBit:  s.ECCDoubleBit,
		RemapPending:  s.RemapPending,
		RemapFailure:  s.RemapFailure,
		PCIeGen:       s.PCIeGen,
		PCIeWidth:     s.PCIeWidth,
		PCIeMaxGen:    s.PCIeMaxGen,
		PCIeMaxWidth:  s.PCIeMaxWidth,
		NVLinkDown:    s.NVLinkDown,
		XidTotal:      s.XidErrorsTotal,
	}
}
