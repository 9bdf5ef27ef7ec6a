package agent

import (
	"context"
	"sync"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// Transfers carries an instance's state between agents when it moves to
// another host (internal/transfer over the access server; the app wires
// it). The target expects a push; the source pushes.
type Transfers interface {
	// Expect lets the operation's source push into trees, proving the
	// token whose SHA-256 (hex) is tokenHash. A second call replaces the
	// first.
	Expect(operationID, tokenHash string, trees runtime.Trees)
	// Forget withdraws the grant.
	Forget(operationID string)
	// Push sends trees to the target m names, a live pass or (final) the
	// last one with the instance stopped, and returns the bytes it sent;
	// progress, while it runs, is told the bytes sent so far.
	Push(ctx context.Context, m agentproto.Move, trees runtime.Trees, final bool, progress func(int64)) (int64, error)
	// NotReady reports whether a Push failed only because the target does
	// not expect the operation yet (it refused the login): the target is
	// still preparing, and the source tries again soon.
	NotReady(err error) bool
}

// Pauses of a source between live passes, and its backoff after a failed
// pass.
const (
	passPause      = 2 * time.Second
	pushRetryFirst = time.Second
	pushRetryMax   = 15 * time.Second
)

// notReadyMessage is a source's status while its target does not yet
// expect the push.
const notReadyMessage = "waiting for the target host to prepare for the copy"

// moveWorker pushes one instance's state for one operation, live passes
// until the final one is asked for, then that one.
type moveWorker struct {
	opID   string
	move   agentproto.Move // what it was started for
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	status agentproto.MoveStatus
}

func (w *moveWorker) snapshot() agentproto.MoveStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status
}

func (w *moveWorker) update(f func(st *agentproto.MoveStatus)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(&w.status)
}

// prepareTarget makes the target end of a move ready to receive: the
// volume and the container of the new allocation, not started, and the
// grant for the source's push. It returns when a failed prepare is next due.
func (a *Agent) prepareTarget(ctx context.Context, di agentproto.DesiredInstance) time.Time {
	mover, ok := a.cfg.Runtime.(runtime.Mover)
	var err error
	switch {
	case di.Move == nil || di.Move.Role != agentproto.MoveTarget || di.Move.TokenHash == "":
		err = gpurent.Errorf(gpurent.CodeInvalid, "the control plane asked to prepare instance %s without a move grant", di.InstanceID)
	case !ok:
		err = gpurent.Errorf(gpurent.CodeUnavailable, "the %s runtime cannot receive a moved instance", a.cfg.Runtime.Name())
	case a.cfg.Transfers == nil:
		err = gpurent.Errorf(gpurent.CodeUnavailable, "this agent runs no access server, so it cannot receive a moved instance")
	}
	if err == nil {
		if next, wait := a.backingOff(di); wait {
			return next
		}
		var trees runtime.Trees
		if err = a.images().Check(di.Image); err != nil {
			return a.recordFailure(di, err)
		}
		if trees, err = mover.Prepare(ctx, specFor(di)); err == nil {
			a.clearFailure(di.InstanceID)
			a.cfg.Transfers.Expect(di.Move.OperationID, di.Move.TokenHash, trees)
			a.mu.Lock()
			a.expects[di.Move.OperationID] = true
			a.mu.Unlock()
			return time.Time{}
		}
		if ctx.Err() != nil {
			return time.Time{}
		}
	}
	return a.recordFailure(di, err)
}

// driveSource starts, switches or keeps the push of an instance moving
// away, as di.Move asks.
func (a *Agent) driveSource(ctx context.Context, di agentproto.DesiredInstance) {
	m := *di.Move
	a.mu.Lock()
	w := a.moves[di.InstanceID]
	// The same move as before keeps its worker; a new target address
	// (the target agent restarted) or the final pass starts a new one.
	if w != nil && w.move == m {
		a.mu.Unlock()
		return
	}
	var carried agentproto.MoveStatus
	if w != nil {
		w.cancel()
		if w.opID == m.OperationID {
			carried = w.snapshot()
		}
	}
	a.mu.Unlock()
	if w != nil {
		<-w.done
	}
	carried.OperationID, carried.Final, carried.Error = m.OperationID, false, ""
	a.mu.Lock()
	life := a.life
	a.mu.Unlock()
	wctx, cancel := context.WithCancel(life)
	nw := &moveWorker{opID: m.OperationID, move: m, cancel: cancel, done: make(chan struct{}), status: carried}
	a.mu.Lock()
	a.moves[di.InstanceID] = nw
	a.mu.Unlock()
	go func() {
		defer close(nw.done)
		a.push(wctx, nw, di.InstanceID, m)
	}()
}

// push runs a worker: live passes while the instance runs, each followed by
// a report; or the final pass once the container stopped.
func (a *Agent) push(ctx context.Context, w *moveWorker, instanceID string, m agentproto.Move) {
	mover, ok := a.cfg.Runtime.(runtime.Mover)
	if !ok || a.cfg.Transfers == nil {
		w.update(func(st *agentproto.MoveStatus) {
			st.Error = "this host's runtime or agent cannot move instances"
		})
		return
	}
	retry := pushRetryFirst
	for ctx.Err() == nil {
		err := a.onePass(ctx, w, mover, instanceID, m)
		if ctx.Err() != nil {
			return
		}
		if err != nil && a.cfg.Transfers.NotReady(err) {
			// The target has not prepared yet (the control plane told both
			// ends at once): no backoff, the push starts as soon as the
			// target expects it.
			a.log.Info("agent: the target does not expect the move yet; trying again", "instance", instanceID,
				"operation", m.OperationID, "retry_in", pushRetryFirst)
			w.update(func(st *agentproto.MoveStatus) { st.Error = notReadyMessage })
			_ = a.report(ctx)
			if !sleepCtx(ctx, pushRetryFirst) {
				return
			}
			continue
		}
		if err != nil {
			a.log.Warn("agent: push of a moving instance failed; retrying", "instance", instanceID, "operation", m.OperationID,
				"final", m.Final, "retry_in", retry, "err", err)
			w.update(func(st *agentproto.MoveStatus) { st.Error = err.Error() })
			_ = a.report(ctx)
			if !sleepCtx(ctx, jitter(retry)) {
				return
			}
			retry = min(retry*2, pushRetryMax)
			continue
		}
		retry = pushRetryFirst
		_ = a.report(ctx)
		if m.Final {
			return
		}
		if !sleepCtx(ctx, passPause) {
			return
		}
	}
}

// onePass pushes the instance's trees once.
func (a *Agent) onePass(ctx context.Context, w *moveWorker, mover runtime.Mover, instanceID string, m agentproto.Move) error {
	if m.Final {
		list, err := a.cfg.Runtime.List(ctx)
		if err != nil {
			return err
		}
		for _, st := range list {
			if st.InstanceID == instanceID && st.State == runtime.Running {
				return gpurent.Errorf(gpurent.CodeUnavailable, "the container still runs; the final pass waits for it to stop")
			}
		}
	}
	trees, err := mover.Trees(ctx, instanceID)
	if err != nil {
		return err
	}
	start := a.now()
	base := w.snapshot().Bytes
	// The bytes so far go out with every report: a long pass shows it is
	// alive (the control plane gives up a copy that makes no progress).
	n, err := a.cfg.Transfers.Push(ctx, m, trees, m.Final, func(sent int64) {
		w.update(func(st *agentproto.MoveStatus) { st.Bytes = base + sent })
	})
	w.update(func(st *agentproto.MoveStatus) { st.Bytes = base + n })
	if err != nil {
		return err
	}
	w.update(func(st *agentproto.MoveStatus) {
		st.Error, st.LastPassBytes = "", n
		if m.Final {
			st.Final = true
		} else {
			st.Passes++
		}
	})
	a.log.Info("agent: pushed a moving instance", "instance", instanceID, "operation", m.OperationID,
		"final", m.Final, "bytes", n, "took", a.now().Sub(start).Round(time.Millisecond))
	return nil
}

// settleMoves ends the pushes and grants the desired state no longer asks
// for.
func (a *Agent) settleMoves(d *agentproto.Desired) {
	sources := map[string]string{}
	targets := map[string]bool{}
	for _, di := range d.Instances {
		if di.Move == nil {
			continue
		}
		switch di.Move.Role {
		case agentproto.MoveSource:
			sources[di.InstanceID] = di.Move.OperationID
		case agentproto.MoveTarget:
			targets[di.Move.OperationID] = true
		}
	}
	var stopped []*moveWorker
	a.mu.Lock()
	for id, w := range a.moves {
		if sources[id] != w.opID {
			w.cancel()
			stopped = append(stopped, w)
			delete(a.moves, id)
		}
	}
	var forget []string
	for op := range a.expects {
		if !targets[op] {
			forget = append(forget, op)
			delete(a.expects, op)
		}
	}
	a.mu.Unlock()
	for _, op := range forget {
		if a.cfg.Transfers != nil {
			a.cfg.Transfers.Forget(op)
		}
	}
	for _, w := range stopped {
		<-w.done
	}
}

// moveStatus is the push progress of an instance, nil when none. a.mu is held.
func (a *Agent) moveStatus(instanceID string) *agentproto.MoveStatus {
	w := a.moves[instanceID]
	if w == nil {
		return nil
	}
	st := w.snapshot()
	return &st
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// stopMoves ends every push when the agent stops.
func (a *Agent) stopMoves() {
	a.mu.Lock()
	ws := make([]*moveWorker, 0, len(a.moves))
	for id, w := range a.moves {
		w.cancel()
		ws = append(ws, w)
		delete(a.moves, id)
	}
	a.mu.Unlock()
	for _, w := range ws {
		<-w.done
	}
}
