package agent

import (
	"context"
	"net/url"
	"strconv"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// minQuietAnswer is the least time a long poll that brings no change is
// expected to have waited at the control plane.
const minQuietAnswer = time.Second

// pollLoop long-polls the desired state: each request waits at the control
// plane until the host's generation passes the last one seen, so a change
// reaches the agent at once. Every answer is handed to the converge loop.
func (a *Agent) pollLoop(ctx context.Context) error {
	bo := newBackoff(a.cfg.RetryMin, a.cfg.RetryMax)
	after := int64(0)
	for ctx.Err() == nil {
		token := a.token()
		sent := time.Now()
		reqCtx, cancel := context.WithCancel(ctx)
		a.setPollCancel(cancel)
		d, got, err := a.fetchDesired(reqCtx, token, after)
		refetch := a.clearPollCancel()
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && refetch:
			continue // cancelled on purpose: the control plane is ahead
		case gpurent.IsCode(err, gpurent.CodeUnauthorized):
			if err := a.reauth(ctx, token); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			continue
		case err != nil:
			delay := bo.next()
			a.log.Warn("agent: cannot fetch desired state; retrying", "err", err, "retry_in", delay)
			a.sleep(ctx, delay)
			continue
		}
		// An answer that brings nothing new should have waited at the
		// control plane; one that comes back at once means a misbehaving
		// server, and the agent must not spin on it.
		if !got || d.Generation <= after {
			if time.Since(sent) < minQuietAnswer {
				a.sleep(ctx, bo.next())
			} else {
				bo.reset()
			}
		} else {
			bo.reset()
		}
		if !got {
			continue // no content: nothing changed
		}
		if hid := a.hostID(); d.HostID != "" && d.HostID != hid {
			delay := bo.next()
			a.log.Error("agent: control plane sent the desired state of another host; ignoring it",
				"host_id", hid, "desired_host_id", d.HostID, "retry_in", delay)
			a.sleep(ctx, delay)
			continue
		}
		after = d.Generation
		a.setDesired(d)
	}
	return nil
}

func (a *Agent) fetchDesired(ctx context.Context, token string, after int64) (*agentproto.Desired, bool, error) {
	var d agentproto.Desired
	path := agentproto.PathDesired + "?" + url.Values{"after": {strconv.FormatInt(after, 10)}}.Encode()
	got, err := a.call(ctx, "GET", path, token, longPollTimeout, nil, &d)
	if err != nil || !got {
		return nil, false, err
	}
	return &d, true, nil
}

// setDesired keeps d as the state to converge to and wakes the converge
// loop; an older state still waiting is simply replaced. Its benchmark jobs
// go to the bench loop at once: a job it no longer lists is canceled now,
// not after the convergence.
func (a *Agent) setDesired(d *agentproto.Desired) {
	a.mu.Lock()
	a.desired = d
	a.mu.Unlock()
	a.generation.Store(d.Generation)
	a.takeRegistry(d.Registry)
	a.prepull.update(d.Prepull)
	a.bench.update(d.Bench)
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

func (a *Agent) setPollCancel(cancel context.CancelFunc) {
	a.pollMu.Lock()
	defer a.pollMu.Unlock()
	a.pollCancel = cancel
	a.refetchPending = false
	select { // this request fetches anyway
	case <-a.wake:
	default:
	}
}

// clearPollCancel ends a request's registration and reports whether a
// refetch was asked for meanwhile.
func (a *Agent) clearPollCancel() bool {
	a.pollMu.Lock()
	defer a.pollMu.Unlock()
	a.pollCancel = nil
	pending := a.refetchPending
	a.refetchPending = false
	return pending
}

// refetch makes the poll loop fetch the desired state now: it cancels the
// request in flight (which should have answered already) or cuts a retry
// wait short.
func (a *Agent) refetch() {
	a.pollMu.Lock()
	a.refetchPending = true
	if a.pollCancel != nil {
		a.pollCancel()
	}
	a.pollMu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}
