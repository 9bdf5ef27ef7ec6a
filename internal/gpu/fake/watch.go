package fake

import (
	"context"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/gpu"
)

var _ gpu.Watcher = (*Provider)(nil)

// subscriber is one Events caller. Injections append to its queue and its
// pump hands them to the caller's channel in order: an injection never
// blocks on a slow reader and no event is dropped.
type subscriber struct {
	queue  []gpu.Event
	notify chan struct{} // a token when queue grew
	done   chan struct{} // closed by Close of the provider
}

// board is what the fake knows of a GPU model: its default power limit
// and PCIe generation.
type board struct {
	powerW  float64
	pcieGen int
	nvlinks int // NVLink links the board has (0: none)
}

// boardOf returns the board figures of a type id (the spec table of
// docs/gpus.md); unknown types get a plausible 300 W PCIe Gen4 card.
func boardOf(typeID string) board {
	model, rest, _ := strings.Cut(typeID, "-")
	pcie := strings.HasSuffix(rest, "-pcie") || strings.HasSuffix(rest, "-nvl")
	switch model {
	case "v100":
		return board{300, 3, 6}
	case "a100", "a800":
		if pcie {
			return board{300, 4, 0}
		}
		return board{400, 4, 12}
	case "h100", "h800", "h200":
		if pcie {
			return board{350, 5, 0}
		}
		return board{700, 5, 18}
	case "h20":
		return board{400, 5, 18}
	case "b200":
		return board{1000, 5, 18}
	case "l40s", "l40":
		return board{350, 4, 0}
	case "l20":
		return board{275, 4, 0}
	case "rtx4090", "rtx4090d":
		return board{450, 4, 0}
	case "rtx3090":
		return board{350, 4, 0}
	case "rtx5090":
		return board{575, 5, 0}
	case "a10":
		return board{150, 4, 0}
	case "t4":
		return board{70, 3, 0}
	}
	return board{300, 4, 0}
}

// healthySample is an idle, healthy GPU of dev's type: 35-45 °C, drawing
// 15-20% of its default power limit, its PCIe link at full generation and
// width, every NVLink up. The figures are stable per device.
func healthySample(dev gpu.Device) gpu.Sample {
	b := boardOf(dev.TypeID)
	h := fnv.New32a()
	h.Write([]byte(dev.UUID))
	seed := int(h.Sum32() % 1000)
	return gpu.Sample{
		UUID:          dev.UUID,
		TemperatureC:  35 + seed%11,
		PowerW:        b.powerW * float64(150+seed%51) / 1000,
		PowerLimitW:   b.powerW,
		DefaultPowerW: b.powerW,
		PCIeGen:       b.pcieGen,
		PCIeWidth:     16,
		PCIeMaxGen:    b.pcieGen,
		PCIeMaxWidth:  16,
	}
}

// Events delivers the injected events, in order, until ctx ends or the
// provider is closed; then the channel is closed. Every caller gets every
// event injected after its call.
func (p *Provider) Events(ctx context.Context) (<-chan gpu.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, gpurent.Errorf(gpurent.CodeUnavailable, "fake GPU provider is closed")
	}
	if p.done == nil {
		p.done = make(chan struct{})
	}
	s := &subscriber{notify: make(chan struct{}, 1), done: p.done}
	p.subs = append(p.subs, s)
	out := make(chan gpu.Event)
	go p.pump(ctx, s, out)
	return out, nil
}

// pump moves a subscriber's queue to its channel.
func (p *Provider) pump(ctx context.Context, s *subscriber, out chan<- gpu.Event) {
	defer close(out)
	defer p.unsubscribe(s)
	for {
		p.mu.Lock()
		var next gpu.Event
		have := len(s.queue) > 0
		if have {
			next = s.queue[0]
			s.queue = s.queue[1:]
		}
		p.mu.Unlock()
		if !have {
			select {
			case <-s.notify:
				continue
			case <-ctx.Done():
				return
			case <-s.done:
				return
			}
		}
		select {
		case out <- next:
		case <-ctx.Done():
			return
		case <-s.done:
			return
		}
	}
}

func (p *Provider) unsubscribe(s *subscriber) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.subs = slices.DeleteFunc(p.subs, func(x *subscriber) bool { return x == s })
}

// publishLocked queues ev for every subscriber. p.mu is held.
func (p *Provider) publishLocked(ev gpu.Event) {
	if ev.At.IsZero() {
		ev.At = p.now()
	}
	for _, s := range p.subs {
		s.queue = append(s.queue, ev)
		select {
		case s.notify <- struct{}{}:
		default:
		}
	}
}

func (p *Provider) now() time.Time {
	if p.clock != nil {
		return p.clock().UTC()
	}
	return time.Now().UTC()
}

// telemetryLocked returns the stored telemetry of uuid, starting from a
// healthy sample of its device. p.mu is held.
func (p *Provider) telemetryLocked(uuid string) *gpu.Sample {
	if s, ok := p.telemetry[uuid]; ok {
		return s
	}
	if p.telemetry == nil {
		p.telemetry = map[string]*gpu.Sample{}
	}
	dev := gpu.Device{UUID: uuid}
	for _, d := range p.devices {
		if d.UUID == uuid {
			dev = d
		}
	}
	s := healthySample(dev)
	p.telemetry[uuid] = &s
	return &s
}

// InjectXid scripts an Xid on uuid: an EventXid with the driver's text
// detail, counted in the GPU's XidErrorsTotal.
func (p *Provider) InjectXid(uuid string, xid int, detail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.telemetryLocked(uuid).XidErrorsTotal++
	p.publishLocked(gpu.Event{UUID: uuid, Kind: gpu.EventXid, Xid: xid, Detail: detail})
}

// InjectECC scripts an ECC error on uuid: uncorrectable (doubleBit) or
// corrected. The GPU's volatile count grows by one; the event's Detail is
// the new count.
func (p *Provider) InjectECC(uuid string, doubleBit bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.telemetryLocked(uuid)
	kind, count := gpu.EventECCSingleBit, &s.ECCSingleBit
	if doubleBit {
		kind, count = gpu.EventECCDoubleBit, &s.ECCDoubleBit
	}
	*count++
	p.publishLocked(gpu.Event{UUID: uuid, Kind: kind, Detail: strconv.FormatInt(*count, 10)})
}

// Lose scripts a GPU that fell off the bus: Devices and Samples no longer
// list it, and an EventGPULost goes out.
func (p *Provider) Lose(uuid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.devices = slices.DeleteFunc(p.devices, func(d gpu.Device) bool { return d.UUID == uuid })
	delete(p.telemetry, uuid)
	p.publishLocked(gpu.Event{UUID: uuid, Kind: gpu.EventGPULost, Detail: "GPU is lost"})
}

// InjectRecoveryAction scripts the driver asking for a recovery action on
// uuid: "None", "Reset", "Drain and Reset" or "Node Reboot Required".
func (p *Provider) InjectRecoveryAction(uuid, action string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.publishLocked(gpu.Event{UUID: uuid, Kind: gpu.EventRecoveryAction, Detail: action})
}

// InjectRemapFailure scripts a failed row remapping on uuid: an
// EventRemapFailure, and RemapFailure set in its samples from now on.
func (p *Provider) InjectRemapFailure(uuid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.telemetryLocked(uuid).RemapFailure = true
	p.publishLocked(gpu.Event{UUID: uuid, Kind: gpu.EventRemapFailure, Detail: "row remapping failed"})
}

// SetSample changes uuid's telemetry from now on: f gets the current
// values (a healthy idle GPU until changed) and edits them. UUID and At are
// set by Samples whatever f does.
func (p *Provider) SetSample(uuid string, f func(*gpu.Sample)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p.telemetryLocked(uuid))
}

// Samples returns the telemetry of every listed device, in device order.
func (p *Provider) Samples(ctx context.Context) ([]gpu.Sample, error) {
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
	at := p.now()
	out := make([]gpu.Sample, 0, len(p.devices))
	for _, d := range p.devices {
		s := *p.telemetryLocked(d.UUID)
		s.UUID, s.At = d.UUID, at
		out = append(out, s)
	}
	return out, nil
}

// Watchers is how many Events subscriptions are open: a test injects an
// event once the agent watches, so that it is not dropped unseen.
func (p *Provider) Watchers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.subs)
}
