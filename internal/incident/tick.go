package incident

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rental"
)

// Tick does what waits for no report: it marks silent hosts down and back,
// ends incidents whose instance is whole again, and posts the credits due.
// The control plane calls it every few seconds (Run).
func (s *Service) Tick(ctx context.Context) error {
	return errors.Join(s.hostsDown(ctx), s.resolve(ctx), s.credit(ctx), s.monthly(ctx))
}

// Run calls Tick every interval until ctx ends.
func (s *Service) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("incidents: tick failed; retrying", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// hostsDown opens a host_down incident for each running instance of a host
// silent longer than HostDownAfter. Its data is on that host, so it waits
// for it; the runs were closed at the last heartbeat (not billed).
func (s *Service) hostsDown(ctx context.Context) error {
	// A host is down after HostDownAfter of silence: looking a few times
	// in that span is enough (the fleet list is the tick's largest read).
	now := s.now()
	s.mu.Lock()
	due := now.Sub(s.hostsCheckedAt) >= s.cfg.HostDownAfter/6
	if due {
		s.hostsCheckedAt = now
	}
	s.mu.Unlock()
	if !due {
		return nil
	}
	hosts, err := s.store.ListHosts(ctx)
	if err != nil {
		return err
	}
	for i := range hosts {
		h := &hosts[i]
		if h.LastSeenAt == nil || now.Sub(*h.LastSeenAt) <= s.cfg.HostDownAfter {
			continue
		}
		open, err := s.store.ListIncidents(ctx, gpurent.IncidentFilter{HostID: h.ID, OpenOnly: true})
		if err != nil {
			return err
		}
		have := map[string]bool{}
		for _, in := range open {
			if in.Class == gpurent.FaultHostDown {
				have[in.InstanceID] = true
			}
		}
		list, err := s.store.ListInstances(ctx, gpurent.InstanceFilter{HostID: h.ID, ActiveOnly: true})
		if err != nil {
			return err
		}
		for _, in := range list {
			if have[in.ID] || (in.State != gpurent.StateRunning && in.State != gpurent.StateProvisioning) {
				continue
			}
			inc := &gpurent.Incident{HostID: h.ID, InstanceID: in.ID, AccountID: in.AccountID, Class: gpurent.FaultHostDown,
				Attribution: gpurent.AttrHost, Cause: fmt.Sprintf("host %s silent since %s", h.Name, h.LastSeenAt.Format(time.RFC3339)),
				StartedAt: *h.LastSeenAt}
			if err := s.open(ctx, inc, "the host's agent went silent; the instance's data is on that host, so it waits for it; the time is not billed"); err != nil {
				return err
			}
			s.metrics.incidents.WithLabelValues(string(gpurent.FaultHostDown)).Inc()
			if err := s.tell(ctx, &in, "host_down", fmt.Sprintf("host %s of instance %s stopped answering at %s: the instance waits for it with its data; the time is not billed and is credited",
				h.Name, in.ID, h.LastSeenAt.Format(time.RFC3339))); err != nil {
				return err
			}
		}
	}
	return nil
}

// resolve ends open incidents whose cause is over for their instance: it
// runs on healthy GPUs again (a failover finished, the GPU was repaired,
// the host came back), or the customer stopped or deleted it.
func (s *Service) resolve(ctx context.Context) error {
	open, err := s.store.ListIncidents(ctx, gpurent.IncidentFilter{OpenOnly: true})
	if err != nil {
		return err
	}
	now := s.now()
	s.mu.Lock()
	s.openCount = len(open)
	s.mu.Unlock()
	for i := range open {
		inc := &open[i]
		end, why, err := s.over(ctx, inc, now)
		if err != nil {
			return err
		}
		if end.IsZero() {
			if err := s.retryFailover(ctx, inc); err != nil {
				return err
			}
			continue
		}
		inc.State, inc.EndedAt, inc.UpdatedAt = gpurent.IncidentResolved, &end, now
		if err := s.store.UpdateIncident(ctx, inc); err != nil {
			return err
		}
		if err := s.entry(ctx, inc.ID, "resolved", why); err != nil {
			return err
		}
		s.log.Info("incident resolved", "incident", inc.ID, "instance", inc.InstanceID, "why", why,
			"down", end.Sub(inc.StartedAt).Round(time.Second))
	}
	return nil
}

// over says when an open incident ended (zero: it has not) and why.
func (s *Service) over(ctx context.Context, inc *gpurent.Incident, now time.Time) (time.Time, string, error) {
	if inc.Class == gpurent.FaultHostDown {
		h, err := s.store.HostByID(ctx, inc.HostID)
		if err != nil {
			return time.Time{}, "", err
		}
		if h.LastSeenAt != nil && now.Sub(*h.LastSeenAt) <= s.cfg.HostDownAfter && h.LastSeenAt.After(inc.StartedAt) {
			return now, "the host is back", nil
		}
		return time.Time{}, "", nil
	}
	if inc.InstanceID == "" { // an idle GPU's fault: over once repaired
		g, err := s.gpu(ctx, inc.HostID, inc.GPUID)
		if err != nil || g == nil || g.Health != gpurent.GPUHealthy {
			return time.Time{}, "", err
		}
		return now, "the GPU was repaired", nil
	}
	in, err := s.store.InstanceByID(ctx, inc.InstanceID)
	if err != nil {
		return time.Time{}, "", err
	}
	switch in.State {
	case gpurent.StateStopped, gpurent.StateStopping, gpurent.StateDeleting, gpurent.StateDeleted, gpurent.StateFailed:
		return now, "the instance was " + string(in.State), nil
	case gpurent.StateRunning:
	default:
		return time.Time{}, "", nil
	}
	if op, err := s.store.ActiveOperation(ctx, in.ID); err == nil && op.Step != gpurent.StepCleanup {
		return time.Time{}, "", nil // being moved
	} else if err != nil && !gpurent.IsCode(err, gpurent.CodeNotFound) {
		return time.Time{}, "", err
	}
	if in.HostID != inc.HostID || (inc.GPUID != "" && !slices.Contains(in.GPUIDs, inc.GPUID)) {
		// Moved off the fault: over when the switch was.
		end := now
		if ops, err := s.store.ListOperations(ctx, gpurent.OperationFilter{InstanceID: in.ID}); err == nil {
			for _, op := range ops {
				if op.Kind == gpurent.OpFailover && !op.CreatedAt.Before(inc.StartedAt) && op.ToAllocationID == in.AllocationID {
					end = op.UpdatedAt
					if op.FinishedAt != nil && op.Step == gpurent.StepDone {
						end = *op.FinishedAt
					}
					break
				}
			}
		} else {
			return time.Time{}, "", err
		}
		return end, "the instance runs on healthy GPUs again", nil
	}
	g, err := s.gpu(ctx, inc.HostID, inc.GPUID)
	if err != nil {
		return time.Time{}, "", err
	}
	if g != nil && g.Health == gpurent.GPUHealthy {
		return now, "the GPU was repaired", nil
	}
	return time.Time{}, "", nil
}

func (s *Service) gpu(ctx context.Context, hostID, gpuID string) (*gpurent.GPU, error) {
	if gpuID == "" {
		return nil, nil
	}
	h, err := s.store.HostByID(ctx, hostID)
	if err != nil {
		return nil, err
	}
	return gpuOf(h, gpuID), nil
}

// retryFailover tries again to move an instance a platform fault holds,
// when its choice is to fail over and nothing moves it yet (no healthy
// GPUs were free at the fault; some may be now).
func (s *Service) retryFailover(ctx context.Context, inc *gpurent.Incident) error {
	if inc.Attribution != gpurent.AttrHost || inc.InstanceID == "" || s.cfg.Mover == nil || inc.Class == gpurent.FaultHostDown {
		return nil // a silent host's data cannot be reached: the instance waits
	}
	in, err := s.store.InstanceByID(ctx, inc.InstanceID)
	if err != nil {
		return err
	}
	if rental.FailoverOf(in) != gpurent.FailoverAuto || in.State != gpurent.StateRunning {
		return nil
	}
	if _, err := s.store.ActiveOperation(ctx, in.ID); err == nil {
		return nil
	} else if !gpurent.IsCode(err, gpurent.CodeNotFound) {
		return err
	}
	leave := inc.Class == gpurent.FaultNode || inc.Class == gpurent.FaultHost
	op, err := s.cfg.Mover.Failover(ctx, in.ID, leave, inc.Cause)
	if err != nil || op == nil {
		return nil // still no room: the next tick tries again
	}
	s.metrics.failovers.Inc()
	return s.entry(ctx, inc.ID, "failover", fmt.Sprintf("failover started (operation %s) to host %s", op.ID, op.ToHostID))
}
