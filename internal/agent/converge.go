package agent

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"maps"
	"time"

	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// runFailure is the last failed Run of an instance.
type runFailure struct {
	fingerprint  [32]byte // of the desired instance that failed
	allocationID string
	message      string
	attempts     int
	retryAt      time.Time
}

// convergeLoop converges to each new desired state, one at a time, then
// reports. Failed Runs are retried when their backoff ends.
func (a *Agent) convergeLoop(ctx context.Context) error {
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.kick:
		case <-retry.C:
		}
		a.mu.Lock()
		d := a.desired
		a.mu.Unlock()
		if d == nil {
			continue
		}
		next := a.converge(ctx, d)
		if ctx.Err() != nil {
			return nil
		}
		if err := a.report(ctx); err != nil {
			return err
		}
		retry.Stop()
		if !next.IsZero() {
			retry.Reset(max(next.Sub(a.now()), 0))
		}
	}
}

// converge makes the runtime hold what d asks for, and returns when a
// failed instance is next due for a retry (zero: none is). It never touches
// an instance d does not name.
func (a *Agent) converge(ctx context.Context, d *agentproto.Desired) time.Time {
	actual, err := a.cfg.Runtime.List(ctx)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Error("agent: cannot list the runtime's instances; will retry", "runtime", a.cfg.Runtime.Name(), "err", err)
		}
		return a.now().Add(a.cfg.RunRetryMin)
	}
	byID := make(map[string]runtime.Status, len(actual))
	for _, st := range actual {
		byID[st.InstanceID] = st
	}
	desired := make(map[string]bool, len(d.Instances))
	var next time.Time
	due := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, di := range d.Instances {
		if ctx.Err() != nil {
			return time.Time{}
		}
		if desired[di.InstanceID] {
			a.log.Error("agent: instance listed twice in the desired state; using the first", "instance", di.InstanceID)
			continue
		}
		desired[di.InstanceID] = true
		st, exists := byID[di.InstanceID]
		switch di.State {
		case agentproto.StateRunning:
			due(a.ensureRunning(ctx, di, st, exists))
		case agentproto.StateStopped:
			a.clearFailure(di.InstanceID)
			if exists && (st.State == runtime.Running || st.State == runtime.Failed) {
				if err := a.cfg.Runtime.Stop(ctx, di.InstanceID); err != nil {
					a.log.Error("agent: stop failed; will retry", "instance", di.InstanceID, "err", err)
					due(a.now().Add(a.cfg.RunRetryMin))
				} else {
					a.log.Info("agent: instance stopped", "instance", di.InstanceID)
				}
			}
		case agentproto.StatePrepared:
			due(a.prepareTarget(ctx, di))
		case agentproto.StateAbsent:
			a.clearFailure(di.InstanceID)
			a.mu.Lock()
			done := a.removed[di.InstanceID]
			a.mu.Unlock()
			if exists || !done {
				if err := a.cfg.Runtime.Remove(ctx, di.InstanceID, di.VolumeName, true); err != nil {
					a.log.Error("agent: remove failed; will retry", "instance", di.InstanceID, "err", err)
					due(a.now().Add(a.cfg.RunRetryMin))
				} else {
					a.mu.Lock()
					a.removed[di.InstanceID] = true
					a.mu.Unlock()
					if exists {
						a.log.Info("agent: instance removed with its volume", "instance", di.InstanceID, "volume", di.VolumeName)
					}
				}
			}
		default:
			a.log.Error("agent: unknown desired state; leaving the instance alone", "instance", di.InstanceID, "state", di.State)
		}
		if di.Move != nil && di.Move.Role == agentproto.MoveSource {
			a.driveSource(ctx, di)
		}
	}
	a.settleMoves(d)

	a.mu.Lock()
	defer a.mu.Unlock()
	for _, st := range actual {
		if !desired[st.InstanceID] && !a.ignored[st.InstanceID] {
			a.ignored[st.InstanceID] = true
			a.log.Warn("agent: runtime holds an instance the control plane does not list; leaving it alone",
				"instance", st.InstanceID, "state", st.State)
		}
	}
	// Forget what the control plane no longer mentions, so memory stays
	// bounded by the desired list.
	for _, m := range []map[string]bool{a.removed, a.ignored} {
		maps.DeleteFunc(m, func(id string, _ bool) bool { _, held := byID[id]; return !desired[id] && !held })
	}
	maps.DeleteFunc(a.failures, func(id string, _ *runFailure) bool { return !desired[id] })
	return next
}

// ensureRunning runs di unless it already runs with its allocation or a
// Run of the same desired instance failed and is not yet due again. It
// returns when the instance is next due for a retry, if it failed.
func (a *Agent) ensureRunning(ctx context.Context, di agentproto.DesiredInstance, st runtime.Status, exists bool) time.Time {
	if exists && st.State == runtime.Running && st.AllocationID == di.AllocationID {
		a.clearFailure(di.InstanceID)
		return time.Time{}
	}
	if next, wait := a.backingOff(di); wait {
		return next
	}
	// The agent pulls as root on the host: it checks the image itself,
	// whatever the control plane says.
	if err := a.images().Check(di.Image); err != nil {
		return a.recordFailure(di, err)
	}
	got, err := a.cfg.Runtime.Run(ctx, specFor(di))
	if err == nil {
		a.clearFailure(di.InstanceID)
		a.log.Info("agent: instance running", "instance", di.InstanceID, "allocation", got.AllocationID)
		return time.Time{}
	}
	if ctx.Err() != nil {
		return time.Time{} // shutting down; not the instance's fault
	}
	return a.recordFailure(di, err)
}

// backingOff reports whether the same desired instance failed and is not
// due again yet (then when it is); otherwise the caller acts on it, and
// it is no longer counted as removed.
func (a *Agent) backingOff(di agentproto.DesiredInstance) (time.Time, bool) {
	fp := fingerprint(di)
	a.mu.Lock()
	defer a.mu.Unlock()
	if f := a.failures[di.InstanceID]; f != nil && f.fingerprint == fp && a.now().Before(f.retryAt) {
		return f.retryAt, true
	}
	delete(a.removed, di.InstanceID)
	return time.Time{}, false
}

// recordFailure notes a failed Run (or prepare) of di, reported as failed
// until it succeeds, and returns when it is due again: a doubling,
// jittered backoff while di stays the same.
func (a *Agent) recordFailure(di agentproto.DesiredInstance, err error) time.Time {
	fp := fingerprint(di)
	a.mu.Lock()
	f := a.failures[di.InstanceID]
	a.mu.Unlock()
	attempts := 1
	if f != nil && f.fingerprint == fp {
		attempts = f.attempts + 1
	}
	delay := a.cfg.RunRetryMin
	for i := 1; i < attempts && delay < a.cfg.RunRetryMax; i++ {
		delay *= 2
	}
	delay = jitter(min(delay, a.cfg.RunRetryMax))
	nf := &runFailure{fingerprint: fp, allocationID: di.AllocationID, message: err.Error(), attempts: attempts, retryAt: a.now().Add(delay)}
	a.mu.Lock()
	a.failures[di.InstanceID] = nf
	a.mu.Unlock()
	a.log.Error("agent: instance failed to run", "instance", di.InstanceID, "allocation", di.AllocationID,
		"attempt", attempts, "retry_in", delay, "err", err)
	return nf.retryAt
}

func (a *Agent) clearFailure(id string) {
	a.mu.Lock()
	delete(a.failures, id)
	a.mu.Unlock()
}

// specFor is the runtime spec of a desired instance. The container's
// environment is the desired Env plus GPURENT_INSTANCE_ID.
func specFor(di agentproto.DesiredInstance) runtime.Spec {
	env := make(map[string]string, len(di.Env)+1)
	maps.Copy(env, di.Env)
	env["GPURENT_INSTANCE_ID"] = di.InstanceID
	return runtime.Spec{
		InstanceID:   di.InstanceID,
		AllocationID: di.AllocationID,
		Image:        di.Image,
		GPUUUIDs:     append([]string(nil), di.GPUUUIDs...),
		CPUMilli:     di.CPUMilli,
		MemoryMiB:    di.MemoryMiB,
		VolumeName:   di.VolumeName,
		VolumeGiB:    di.VolumeGiB,
		Env:          env,
		Startup:      di.Startup,
	}
}

// fingerprint identifies a desired instance's content, so a changed one is
// retried at once and an unchanged failing one waits out its backoff.
func fingerprint(di agentproto.DesiredInstance) [32]byte {
	b, _ := json.Marshal(di) // plain data: cannot fail; map keys come sorted
	return sha256.Sum256(b)
}
