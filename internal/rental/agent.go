package rental

import (
	"context"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// How often a long poll re-reads the host's generation when other
// control-plane replicas may change it (PostgreSQL): often without a change
// feed, rarely (a safety net) while Watch relays the store's.
const (
	recheckInterval         = time.Second
	recheckIntervalWatching = 30 * time.Second
)

// Watch relays the store's host change feed (gpurent.HostWatcher, on
// PostgreSQL) to the long polls of this process until ctx ends, so that a
// change made through another control-plane replica reaches the agent at
// once. Stores without a feed return at once.
func (s *Service) Watch(ctx context.Context) {
	w, ok := s.store.(gpurent.HostWatcher)
	if !ok {
		return
	}
	s.watching.Store(true)
	defer s.watching.Store(false)
	_ = w.WatchHosts(ctx, func(hostID string) {
		if hostID == "" {
			s.hub.notifyAll()
			return
		}
		s.hub.notify(hostID)
	})
}

// Drain makes every long poll answer at once, and later ones not wait:
// the process is shutting down.
func (s *Service) Drain() {
	s.draining.Store(true)
	s.hub.notifyAll()
}

// Desired returns the host's desired state, waiting up to PollWait for its
// generation to pass after. A negative after answers at once.
func (s *Service) Desired(ctx context.Context, hostID string, after int64) (*agentproto.Desired, error) {
	deadline := time.NewTimer(s.cfg.PollWait)
	defer deadline.Stop()
	var recheck <-chan time.Time
	if !s.store.SoleWriter() { // another process may bump a generation: recheck
		every := recheckInterval
		if s.watching.Load() {
			every = recheckIntervalWatching
		}
		t := time.NewTicker(every)
		defer t.Stop()
		recheck = t.C
	}
	for {
		wake := s.hub.wait(hostID) // before the read, so no change is missed
		h, err := s.store.HostByID(ctx, hostID)
		if err != nil {
			return nil, err
		}
		if h.Generation > after || s.draining.Load() {
			return s.desired(ctx, h)
		}
		select {
		case <-wake:
		case <-recheck:
		case <-deadline.C:
			return s.desired(ctx, h)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// desired lists what the host should hold now.
func (s *Service) desired(ctx context.Context, h *gpurent.Host) (*agentproto.Desired, error) {
	list, err := s.store.ListInstances(ctx, gpurent.InstanceFilter{HostID: h.ID, ActiveOnly: true})
	if err != nil {
		return nil, err
	}
	ops, err := s.hostOps(ctx, h.ID)
	if err != nil {
		return nil, err
	}
	opOf := make(map[string]*gpurent.Operation, len(ops))
	for i := range ops {
		opOf[ops[i].InstanceID] = &ops[i]
	}
	d := &agentproto.Desired{HostID: h.ID, Generation: h.Generation, Instances: []agentproto.DesiredInstance{}, Registry: s.cfg.Registry}
	if d.Prepull, err = s.prepulled(ctx); err != nil {
		return nil, err
	}
	for _, in := range list {
		di := agentproto.DesiredInstance{
			InstanceID: in.ID, AllocationID: in.AllocationID, Image: in.Image,
			GPUUUIDs: in.GPUIDs, CPUMilli: in.CPUMilli, MemoryMiB: in.MemoryMiB, Startup: in.StartupCommand,
		}
		if di.GPUUUIDs == nil {
			di.GPUUUIDs = []string{}
		}
		switch in.State {
		case gpurent.StateProvisioning, gpurent.StateRunning:
			di.State = agentproto.StateRunning
			if in.AllocationID == "" {
				di.State = agentproto.StateStopped
			}
		case gpurent.StateStopping, gpurent.StateStopped, gpurent.StateFailed:
			di.State = agentproto.StateStopped
		case gpurent.StateDeleting:
			di.State = agentproto.StateAbsent
		default:
			continue
		}
		if in.VolumeID != "" {
			v, err := s.store.VolumeByID(ctx, in.VolumeID)
			if err != nil {
				return nil, err
			}
			di.VolumeName, di.VolumeGiB = v.Name, v.SizeGiB
		}
		if op := opOf[in.ID]; op != nil && in.State != gpurent.StateDeleting {
			if err := s.moves.SourceView(ctx, op, &in, &di); err != nil {
				return nil, err
			}
		}
		d.Instances = append(d.Instances, di)
	}
	if s.moves != nil {
		if err := s.moves.AddMoves(ctx, h, ops, d); err != nil {
			return nil, err
		}
	}
	jobs, err := s.store.ListBenchJobs(ctx, gpurent.BenchJobFilter{HostID: h.ID, OpenOnly: true})
	if err != nil {
		return nil, err
	}
	for i := len(jobs) - 1; i >= 0; i-- { // oldest first: the agent runs them in order
		j := jobs[i]
		d.Bench = append(d.Bench, agentproto.BenchJob{JobID: j.ID, Tier: j.Tier, GPUType: j.GPUType,
			GPUUUIDs: j.GPUIDs, InstanceID: j.InstanceID, Options: s.cfg.BenchOptions})
	}
	return d, nil
}

// ApplyReport moves instances along their lifecycle from an agent's report:
// provisioning → running when the container of the current allocation runs;
// → failed when it cannot; stopping → stopped (GPUs released on the hourly
// plan) once it stopped; deleting → deleted once container and volume are gone.
func (s *Service) ApplyReport(ctx context.Context, host *gpurent.Host, rep agentproto.Report) (agentproto.ReportResponse, error) {
	actual := make(map[string]agentproto.ActualInstance, len(rep.Instances))
	for _, a := range rep.Instances {
		actual[a.InstanceID] = a
	}
	busy := map[string]bool{}
	if s.moves != nil {
		var err error
		if busy, err = s.moves.ApplyMoves(ctx, host, actual); err != nil {
			return agentproto.ReportResponse{}, err
		}
	}
	list, err := s.store.ListInstances(ctx, gpurent.InstanceFilter{HostID: host.ID, ActiveOnly: true})
	if err != nil {
		return agentproto.ReportResponse{}, err
	}
	for _, in := range list {
		if busy[in.ID] {
			continue // an operation reads this host's reports of it
		}
		a, ok := actual[in.ID]
		if !ok {
			a = agentproto.ActualInstance{InstanceID: in.ID, State: agentproto.StateAbsent}
		}
		if pulling(&in, a) {
			if err := s.setPullProgress(ctx, in.ID, a); err != nil {
				return agentproto.ReportResponse{}, err
			}
			continue
		}
		if needsChange(&in, a) {
			if _, err := s.apply(ctx, nil, in.ID, func(q gpurent.Queries, in *gpurent.Instance, now time.Time) (*gpurent.Event, error) {
				return s.transition(ctx, q, in, a, host, now)
			}); err != nil {
				return agentproto.ReportResponse{}, err
			}
		}
		// After the transition, so that "running" comes before what the
		// startup command did since.
		if err := s.recordStartup(ctx, &in, a); err != nil {
			return agentproto.ReportResponse{}, err
		}
	}
	h, err := s.store.HostByID(ctx, host.ID)
	if err != nil {
		return agentproto.ReportResponse{}, err
	}
	return agentproto.ReportResponse{Generation: h.Generation}, nil
}

// pulling reports whether a says how the pull of the provisioning
// instance's image stands, and that is news.
func pulling(in *gpurent.Instance, a agentproto.ActualInstance) bool {
	return in.State == gpurent.StateProvisioning && a.State == agentproto.StateCreating && in.AllocationID != "" &&
		a.AllocationID == in.AllocationID && a.Message != "" && progressText(a.Message) != in.StateReason
}

// progressText bounds an agent's progress message.
func progressText(m string) string {
	if len(m) > 200 {
		m = m[:200]
	}
	return strings.ToValidUTF8(m, "")
}

// setPullProgress shows how the pull of the instance's image stands as its
// state reason (no event, no new desired state: it is only news).
func (s *Service) setPullProgress(ctx context.Context, id string, a agentproto.ActualInstance) error {
	return s.store.InTx(ctx, func(q gpurent.Queries) error {
		in, err := q.InstanceByID(ctx, id)
		if err != nil {
			return err
		}
		if !pulling(in, a) {
			return nil
		}
		in.StateReason, in.UpdatedAt = progressText(a.Message), s.now().UTC()
		err = q.UpdateInstance(ctx, in)
		if gpurent.IsCode(err, gpurent.CodeConflict) {
			return nil // changed meanwhile: the next report tells again
		}
		return err
	})
}

// needsChange is a cheap first look, outside any transaction.
func needsChange(in *gpurent.Instance, a agentproto.ActualInstance) bool {
	switch in.State {
	case gpurent.StateProvisioning, gpurent.StateRunning:
		return a.AllocationID == in.AllocationID && in.AllocationID != "" &&
			(a.State == agentproto.StateFailed || a.State == agentproto.StateRunning && in.State == gpurent.StateProvisioning)
	case gpurent.StateStopping:
		return a.State == agentproto.StateStopped || a.State == agentproto.StateAbsent
	case gpurent.StateDeleting:
		return a.State == agentproto.StateAbsent
	}
	return false
}

// transition applies one report entry to the current instance.
func (s *Service) transition(ctx context.Context, q gpurent.Queries, in *gpurent.Instance, a agentproto.ActualInstance, host *gpurent.Host, now time.Time) (*gpurent.Event, error) {
	if !needsChange(in, a) { // re-checked on the fresh row
		return nil, nil
	}
	switch in.State {
	case gpurent.StateProvisioning, gpurent.StateRunning:
		if a.State == agentproto.StateRunning {
			in.State, in.StateReason = gpurent.StateRunning, ""
			return NewEvent(in.ID, now, "running", "running on host %s (%s runtime)", host.Name, host.Runtime), nil
		}
		if err := endAllocation(ctx, q, in, now, "failed"); err != nil {
			return nil, err
		}
		in.State, in.StateReason = gpurent.StateFailed, FailedReason(a.Message)
		return NewEvent(in.ID, now, "failed", "failed on host %s: %s; GPUs released, volume kept", host.Name, in.StateReason), nil
	case gpurent.StateStopping:
		if in.Plan == gpurent.PlanHourly {
			if err := endAllocation(ctx, q, in, now, "stop"); err != nil {
				return nil, err
			}
		}
		in.State, in.StateReason = gpurent.StateStopped, ""
		msg := "stopped; GPUs released, volume kept"
		if in.AllocationID != "" {
			msg = "stopped; GPUs stay reserved for the " + string(in.Plan) + " package, volume kept"
		}
		return NewEvent(in.ID, now, "stopped", "%s", msg), nil
	case gpurent.StateDeleting:
		if err := finishDelete(ctx, q, in, now); err != nil {
			return nil, err
		}
		return NewEvent(in.ID, now, "deleted", "container and volume removed"), nil
	}
	return nil, nil
}
