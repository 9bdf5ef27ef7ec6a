package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// maxRunsPerReport bounds the run events one report carries; the rest go
// with the next ones.
const maxRunsPerReport = 500

// heartbeatLoop reports at once and then every HeartbeatInterval.
func (a *Agent) heartbeatLoop(ctx context.Context) error {
	tick := time.NewTicker(a.cfg.HeartbeatInterval)
	defer tick.Stop()
	for {
		if err := a.report(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-a.health.kick: // a GPU health event: report it now
		}
	}
}

// report sends the actual state. A failed send is logged and left to the
// next report; only a refused re-registration is returned.
func (a *Agent) report(ctx context.Context) error {
	a.reportMu.Lock()
	defer a.reportMu.Unlock()
	rep, err := a.buildReport(ctx)
	if err != nil {
		if ctx.Err() == nil {
			// Sending no instances would look like every instance vanished.
			a.log.Error("agent: cannot read the actual state; skipping this report", "err", err)
		}
		return nil
	}
	for attempt := 0; ; attempt++ {
		token := a.token()
		var resp agentproto.ReportResponse
		_, err := a.call(ctx, "POST", agentproto.PathReport, token, requestTimeout, rep, &resp)
		if gpurent.IsCode(err, gpurent.CodeUnauthorized) && attempt == 0 {
			if err := a.reauth(ctx, token); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("agent: report failed; the next one repairs it", "err", err)
			}
			return nil
		}
		a.prepull.sent(rep.Images)
		if a.runs.ack(resp.RunsAcked) {
			if err := a.runs.save(); err != nil {
				a.log.Error("agent: cannot save the run journal; acknowledged events will be resent", "err", err)
			}
		}
		if err := a.health.ack(resp.HealthAcked); err != nil {
			a.log.Error("agent: cannot save the health journal; acknowledged events will be resent", "err", err)
		}
		if ac := a.cfg.Access; ac != nil && ac.SetGatewayKeys != nil && len(resp.GatewayKeys) > 0 {
			ac.SetGatewayKeys(resp.GatewayKeys)
		}
		if resp.Generation > a.generation.Load() {
			a.refetch()
		}
		return nil
	}
}

// buildReport reads the runtime and the GPUs. Every desired instance is
// accounted for: as the runtime holds it, as failed when its Run failed,
// as creating when it should run but the runtime does not hold it yet, or
// as absent.
func (a *Agent) buildReport(ctx context.Context) (agentproto.Report, error) {
	actual, err := a.cfg.Runtime.List(ctx)
	if err != nil {
		return agentproto.Report{}, err
	}
	gpus, err := a.inventory(ctx)
	if err != nil {
		return agentproto.Report{}, err
	}
	// Runs started or ended are journaled, durably, before they are sent.
	if changed, dropped := a.runs.observe(actual, a.now()); changed {
		if dropped > 0 {
			a.log.Error("agent: run journal full; oldest unacknowledged run events dropped", "dropped", dropped)
		}
		if err := a.runs.save(); err != nil {
			return agentproto.Report{}, fmt.Errorf("save the run journal: %w", err)
		}
	}
	rep := agentproto.Report{
		Runs:      a.runs.pending(maxRunsPerReport),
		Health:    a.health.pendingEvents(maxHealthPerReport),
		Samples:   a.health.latestSamples(),
		ReportID:  gpurent.NewID("rpt"),
		At:        a.now(),
		Runtime:   a.cfg.Runtime.Name(),
		GPUs:      gpus,
		Instances: make([]agentproto.ActualInstance, 0, len(actual)),
	}
	if ac := a.cfg.Access; ac != nil {
		rep.AccessAddr, rep.AccessHostKey = ac.Addr, ac.HostKey
	}
	rep.Images = a.prepull.forReport()
	a.mu.Lock()
	defer a.mu.Unlock()
	held := make(map[string]bool, len(actual))
	for _, st := range actual {
		held[st.InstanceID] = true
		ai := agentproto.ActualInstance{
			InstanceID:   st.InstanceID,
			AllocationID: st.AllocationID,
			State:        string(st.State),
			Message:      st.Message,
			StartedAt:    st.StartedAt.UTC(),
			Startup:      st.Startup,
			Move:         a.moveStatus(st.InstanceID),
		}
		if f := a.failures[st.InstanceID]; f != nil && (st.State != runtime.Running || st.AllocationID != f.allocationID) {
			ai = agentproto.ActualInstance{InstanceID: st.InstanceID, AllocationID: f.allocationID,
				State: agentproto.StateFailed, Message: f.message}
		}
		rep.Instances = append(rep.Instances, ai)
	}
	if a.desired != nil {
		for _, di := range a.desired.Instances {
			if held[di.InstanceID] {
				continue
			}
			held[di.InstanceID] = true
			ai := agentproto.ActualInstance{InstanceID: di.InstanceID, State: agentproto.StateAbsent}
			if di.State == agentproto.StateRunning {
				// Not converged yet (the Run may be pulling an image).
				ai.State, ai.AllocationID = agentproto.StateCreating, di.AllocationID
				if pr, ok := a.cfg.Runtime.(runtime.PullReporter); ok {
					ai.Message, _ = pr.PullProgress(di.Image)
				}
			}
			if f := a.failures[di.InstanceID]; f != nil {
				ai = agentproto.ActualInstance{InstanceID: di.InstanceID, AllocationID: f.allocationID,
					State: agentproto.StateFailed, Message: f.message}
			}
			rep.Instances = append(rep.Instances, ai)
		}
	}
	return rep, nil
}
