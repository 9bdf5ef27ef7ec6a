package incident

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/faultrules"
	"github.com/gpurent/gpurent/internal/rental"
)

// Ingest takes an agent report's health events and telemetry: it stores the
// events (each once, by the agent's id), acts on the GPUs they touched,
// and answers the ids it stored, for the agent to drop.
func (s *Service) Ingest(ctx context.Context, host *gpurent.Host, rep agentproto.Report) ([]string, error) {
	s.keepSamples(host, rep.GPUs, rep.Samples)
	if len(rep.Health) == 0 {
		return nil, nil
	}
	evs := make([]gpurent.GPUEvent, 0, len(rep.Health))
	acked := make([]string, 0, len(rep.Health))
	touched := map[string]bool{}
	for _, h := range rep.Health {
		if h.ID == "" || len(h.ID) > 100 {
			continue // unusable: never acknowledged, the agent keeps it
		}
		evs = append(evs, gpurent.GPUEvent{ID: host.ID + "/" + h.ID, HostID: host.ID, GPUID: h.UUID, At: h.At.UTC(),
			Kind: h.Kind, Xid: h.Xid, Detail: truncate(h.Detail, 500)})
		acked = append(acked, h.ID)
		touched[h.UUID] = true
		if h.Kind == "xid" {
			s.noteXid(h.UUID, h.Xid)
		}
	}
	n, err := s.store.AddGPUEvents(ctx, evs)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return acked, nil // all seen before: acted on then
	}
	s.metrics.events.Add(float64(n))
	gpus := make([]string, 0, len(touched))
	for g := range touched {
		if g != "" {
			gpus = append(gpus, g)
		}
	}
	slices.Sort(gpus)
	for _, g := range gpus {
		if err := s.evaluate(ctx, host.ID, g); err != nil {
			return nil, err
		}
	}
	if touched[""] {
		// Host-wide events (a kernel-log Xid on a bus no GPU answers
		// for): each judged alone, on the whole host.
		full, err := s.store.HostByID(ctx, host.ID)
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			if ev.GPUID != "" {
				continue
			}
			v := s.cfg.Rules.Classify([]gpurent.GPUEvent{ev})
			if v.Class == gpurent.FaultInfo {
				continue
			}
			if err := s.act(ctx, full, "", v, "host-wide event", ev.At); err != nil {
				return nil, err
			}
		}
	}
	return acked, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// evaluate classifies the current burst of a GPU's events and acts when the
// verdict is new for the burst, or more severe than what was done.
func (s *Service) evaluate(ctx context.Context, hostID, gpuID string) error {
	now := s.now()
	recent, err := s.store.ListGPUEvents(ctx, gpurent.GPUEventFilter{HostID: hostID, GPUID: gpuID, Since: now.Add(-2 * time.Hour)})
	if err != nil {
		return err
	}
	if len(recent) == 0 {
		return nil
	}
	bursts := faultrules.Bursts(recent, faultrules.BurstSilence)
	burst := bursts[len(bursts)-1]
	v := s.cfg.Rules.Classify(burst)
	if v.Class == gpurent.FaultInfo {
		return nil // recorded; trends show on the GPU's page
	}
	history, err := s.store.ListIncidents(ctx, gpurent.IncidentFilter{GPUID: gpuID})
	if err != nil {
		return err
	}
	// The GPU's past is its incidents before this burst: one this burst
	// already opened (its first events came in an earlier report) is the
	// same fault, not a repeat to escalate.
	start := burst[0].At
	var past, this []gpurent.Incident
	for _, in := range history {
		if in.StartedAt.Before(start) {
			past = append(past, in)
		} else {
			this = append(this, in)
		}
	}
	v, why := faultrules.Escalate(v, past, gpuID, now)
	for _, in := range this {
		if severity(in.Class) >= severity(v.Class) {
			return nil // this burst was acted on
		}
	}
	host, err := s.store.HostByID(ctx, hostID)
	if err != nil {
		return err
	}
	return s.act(ctx, host, gpuID, v, why, start)
}

// act does what a verdict asks and opens the incidents it makes.
func (s *Service) act(ctx context.Context, host *gpurent.Host, gpuID string, v faultrules.Verdict, why string, at time.Time) error {
	cause := v.Cause
	if why != "" {
		cause += " (" + why + ")"
	}
	s.log.Warn("GPU fault", "host", host.Name, "gpu", gpuID, "class", v.Class, "cause", cause)
	// The GPUs the fault takes, and the instances holding them.
	var taken []gpurent.GPU
	leaveHost := false
	switch v.Class {
	case gpurent.FaultNode, gpurent.FaultHost:
		taken, leaveHost = host.GPUs, true
	case gpurent.FaultDrainReset:
		g := gpuOf(host, gpuID)
		for _, p := range host.GPUs {
			if p.ID == gpuID || (g != nil && g.TopoGroup != "" && p.TopoGroup == g.TopoGroup) {
				taken = append(taken, p)
			}
		}
	default:
		if g := gpuOf(host, gpuID); g != nil {
			taken = []gpurent.GPU{*g}
		}
	}
	if err := s.markGPUs(ctx, host, v, taken, cause); err != nil {
		return err
	}
	instances := map[string]bool{}
	for _, g := range taken {
		if g.InstanceID != "" {
			instances[g.InstanceID] = true
		}
	}
	if len(instances) == 0 && v.Class != gpurent.FaultApp {
		// An idle GPU's fault: the operator's to see, nobody to credit.
		return s.open(ctx, &gpurent.Incident{HostID: host.ID, GPUID: gpuID, Class: v.Class, Attribution: v.Attribution,
			Cause: cause, StartedAt: at}, "detected on an idle GPU: "+string(v.Action))
	}
	ids := make([]string, 0, len(instances))
	for id := range instances {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := s.actOnInstance(ctx, host, gpuID, id, v, cause, at, leaveHost); err != nil {
			return err
		}
	}
	return nil
}

func gpuOf(h *gpurent.Host, id string) *gpurent.GPU {
	for i := range h.GPUs {
		if h.GPUs[i].ID == id {
			return &h.GPUs[i]
		}
	}
	return nil
}

// markGPUs takes the GPUs out of placement as the class asks.
func (s *Service) markGPUs(ctx context.Context, host *gpurent.Host, v faultrules.Verdict, gpus []gpurent.GPU, cause string) error {
	var to gpurent.GPUHealth
	switch v.Class {
	case gpurent.FaultReset, gpurent.FaultDrainReset:
		to = gpurent.GPUCordoned
	case gpurent.FaultRMA, gpurent.FaultNode, gpurent.FaultHost:
		to = gpurent.GPUFailed
	case gpurent.FaultDegraded:
		to = gpurent.GPUDegraded
	default:
		return nil // app, unknown: the GPU stays in service
	}
	for _, g := range gpus {
		if g.Health == gpurent.GPURetired || g.Health == to || g.Health == gpurent.GPUFailed {
			continue
		}
		if err := s.store.SetGPUHealth(ctx, g.ID, to, cause); err != nil {
			return err
		}
	}
	if v.Class == gpurent.FaultNode || v.Class == gpurent.FaultHost {
		if err := s.store.SetHostState(ctx, host.ID, gpurent.HostDraining); err != nil {
			return err
		}
	}
	if s.cfg.Mover != nil {
		s.cfg.Mover.Invalidate()
	}
	return nil
}

// actOnInstance opens the instance's incident and moves it, tells it, or
// (a tenant's fault) only tells it.
func (s *Service) actOnInstance(ctx context.Context, host *gpurent.Host, gpuID, instanceID string, v faultrules.Verdict, cause string,
	at time.Time, leaveHost bool) error {
	in, err := s.store.InstanceByID(ctx, instanceID)
	if err != nil {
		return err
	}
	inc := &gpurent.Incident{HostID: host.ID, GPUID: gpuID, InstanceID: in.ID, AccountID: in.AccountID, Class: v.Class,
		Attribution: v.Attribution, Cause: cause, StartedAt: at}
	if v.Class == gpurent.FaultApp || v.Attribution == gpurent.AttrTenant {
		// The tenant's program: nothing drained, nothing credited.
		end := at
		inc.EndedAt, inc.Attribution = &end, gpurent.AttrTenant
		msg := fmt.Sprintf("your program on GPU %s caused %s; the GPU stays yours and nothing was stopped; this is not a platform fault, so it is billed and not credited",
			gpuID, v.Cause)
		if err := s.open(ctx, inc, msg); err != nil {
			return err
		}
		return s.tell(ctx, in, "gpu_app_fault", msg)
	}
	if v.Attribution != gpurent.AttrHost {
		return s.open(ctx, inc, "recorded for review: "+string(v.Action)+"; no penalty")
	}
	if err := s.open(ctx, inc, "detected: "+string(v.Action)); err != nil {
		return err
	}
	s.metrics.incidents.WithLabelValues(string(v.Class)).Inc()
	if rental.FailoverOf(in) == gpurent.FailoverWait {
		msg := fmt.Sprintf("%s took GPU %s of instance %s; it waits where it is, as you chose (the time is not billed and is credited); `gpurent failover %s --auto` moves it",
			v.Cause, gpuID, in.ID, in.ID)
		if err := s.entry(ctx, inc.ID, "action", "waiting, as the customer chose"); err != nil {
			return err
		}
		return s.tell(ctx, in, "gpu_fault_waiting", msg)
	}
	if s.cfg.Mover == nil {
		return s.entry(ctx, inc.ID, "action", "no failover here: waiting")
	}
	op, err := s.cfg.Mover.Failover(ctx, in.ID, leaveHost, v.Cause)
	switch {
	case err != nil:
		msg := "failover not possible now: " + gpurent.ErrorMessage(err)
		if e2 := s.entry(ctx, inc.ID, "action", msg+"; retried on the next fault check"); e2 != nil {
			return e2
		}
		return s.tell(ctx, in, "gpu_fault_waiting", fmt.Sprintf("%s took GPU %s of instance %s; %s. The time is not billed and is credited.",
			v.Cause, gpuID, in.ID, msg))
	case op == nil:
		return s.entry(ctx, inc.ID, "action", "already being moved")
	}
	s.metrics.failovers.Inc()
	if err := s.entry(ctx, inc.ID, "failover", fmt.Sprintf("failover started (operation %s) to host %s", op.ID, op.ToHostID)); err != nil {
		return err
	}
	return s.tell(ctx, in, "gpu_fault_failover", fmt.Sprintf("%s took GPU %s of instance %s: it is moving to healthy GPUs with its data (operation %s); the time is not billed and is credited",
		v.Cause, gpuID, in.ID, op.ID))
}

// open writes an incident and its first entry. When the same fault (a
// burst whose first events came in an earlier report) already opened an
// incident on the same instance or idle GPU and the burst now classes
// worse, that incident is escalated in place, so that one fault is one
// incident, credited once.
func (s *Service) open(ctx context.Context, inc *gpurent.Incident, first string) error {
	now := s.now()
	if inc.EndedAt == nil {
		f := gpurent.IncidentFilter{InstanceID: inc.InstanceID, OpenOnly: true}
		if inc.InstanceID == "" {
			f = gpurent.IncidentFilter{GPUID: inc.GPUID, OpenOnly: true}
		}
		open, err := s.store.ListIncidents(ctx, f)
		if err != nil {
			return err
		}
		for i := range open {
			old := &open[i]
			if old.HostID != inc.HostID || old.GPUID != inc.GPUID || !old.StartedAt.Equal(inc.StartedAt) ||
				old.InstanceID != inc.InstanceID || old.Attribution == gpurent.AttrTenant {
				continue
			}
			from := old.Class
			old.Class, old.Attribution, old.Cause, old.UpdatedAt = inc.Class, inc.Attribution, inc.Cause, now
			if err := s.store.UpdateIncident(ctx, old); err != nil {
				return err
			}
			*inc = *old
			return s.entry(ctx, inc.ID, "detected", fmt.Sprintf("escalated from %s: %s", from, first))
		}
	}
	inc.State = gpurent.IncidentOpen
	if inc.EndedAt != nil {
		inc.State = gpurent.IncidentResolved
	}
	inc.CreatedAt, inc.UpdatedAt = now, now
	if err := s.store.CreateIncident(ctx, inc); err != nil {
		return err
	}
	return s.entry(ctx, inc.ID, "detected", first)
}

func (s *Service) entry(ctx context.Context, incidentID, kind, msg string) error {
	return s.store.AddIncidentEntry(ctx, &gpurent.IncidentEntry{IncidentID: incidentID, At: s.now(), Kind: kind, Message: msg})
}

// tell records an instance event and an account event, and posts the
// account's webhook.
func (s *Service) tell(ctx context.Context, in *gpurent.Instance, kind, msg string) error {
	now := s.now()
	if err := s.store.AddEvent(ctx, &gpurent.Event{ID: gpurent.NewID(gpurent.PrefixEvent), InstanceID: in.ID, At: now,
		Kind: kind, Message: msg}); err != nil {
		return err
	}
	if err := s.store.AddAccountEvent(ctx, &gpurent.AccountEvent{AccountID: in.AccountID, At: now, Kind: kind, Message: msg}); err != nil {
		return err
	}
	if s.cfg.Notify != nil {
		s.cfg.Notify.Notice(ctx, in.AccountID, kind, msg)
	}
	return nil
}

// keepSamples keeps each GPU's latest telemetry for the metrics and views,
// and appends it to the GPU's recent history for the instance charts.
func (s *Service) keepSamples(host *gpurent.Host, inventory []agentproto.GPUInfo, samples []agentproto.GPUSample) {
	if len(samples) == 0 {
		return
	}
	info := make(map[string]agentproto.GPUInfo, len(inventory))
	for _, g := range inventory {
		info[g.UUID] = g
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range samples {
		prev := s.samples[x.UUID]
		prev.host = host
		if g, ok := info[x.UUID]; ok {
			prev.index, prev.model = g.Index, g.Name
		}
		prev.sample = Sample{At: x.At, UtilPercent: x.UtilPercent, MemUsedMiB: x.MemUsedMiB, TemperatureC: x.TemperatureC,
			PowerW: x.PowerW, ThrottleMask: x.ThrottleMask, ECCSingleBit: x.ECCSingleBit, ECCDoubleBit: x.ECCDoubleBit,
			XidLast: prev.sample.XidLast}
		s.samples[x.UUID] = prev
		s.history.record(x.UUID, prev.index, info[x.UUID].MemoryMiB, x.At, x.UtilPercent, x.MemUsedMiB)
	}
}
