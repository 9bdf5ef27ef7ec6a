package move

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/sched"
)

// preCopyPasses is how many live passes the source makes before the
// instance stops for the final one: the first copies everything, the
// second what changed meanwhile, so the final pass (the downtime) carries
// only what changed during the second.
const preCopyPasses = 2

// The agents converge to what an operation's step asks (desired state) and
// report what they did; ApplyReport moves the step on. Every step is in
// the store before an agent is asked to act on it.

// HostOps lists the unfinished operations touching a host.
func (s *Service) HostOps(ctx context.Context, hostID string) ([]gpurent.Operation, error) {
	return s.store.ListOperations(ctx, gpurent.OperationFilter{HostID: hostID, ActiveOnly: true})
}

// moving reports whether the op drives its instance's reports from host
// (the instance's usual transitions wait until it is over).
func moving(op *gpurent.Operation, hostID string) bool {
	switch op.Step {
	case gpurent.StepCopying, gpurent.StepFinal, gpurent.StepStarting:
		return hostID == op.FromHostID || hostID == op.ToHostID
	case gpurent.StepRollingBack:
		return hostID == op.ToHostID && op.CrossHost()
	}
	return false
}

// SourceView adjusts the desired entry of an instance on the host it is
// moving from, or (same host) growing on.
func (s *Service) SourceView(ctx context.Context, op *gpurent.Operation, in *gpurent.Instance, di *agentproto.DesiredInstance) error {
	if !op.CrossHost() {
		if op.Step == gpurent.StepStarting && di.AllocationID == op.ToAllocationID {
			di.CPUMilli, di.MemoryMiB = op.ToCPUMilli, op.ToMemoryMiB
		}
		return nil
	}
	switch op.Step {
	case gpurent.StepCopying, gpurent.StepFinal, gpurent.StepStarting:
	default:
		return nil
	}
	// The instance's newest open allocation is the claimed target: this
	// host keeps the one it had.
	di.AllocationID, di.GPUUUIDs = "", []string{}
	if op.FromAllocationID != "" {
		a, err := s.store.AllocationByID(ctx, op.FromAllocationID)
		if err != nil {
			return err
		}
		di.AllocationID, di.GPUUUIDs = a.ID, append([]string{}, a.GPUIDs...)
	}
	if di.AllocationID == "" || op.Step != gpurent.StepCopying {
		di.State = agentproto.StateStopped
	}
	if op.Step == gpurent.StepStarting {
		return nil
	}
	to, err := s.store.HostByID(ctx, op.ToHostID)
	if err != nil {
		return err
	}
	di.Move = &agentproto.Move{OperationID: op.ID, Role: agentproto.MoveSource,
		TargetAddr: to.AccessAddr, TargetHostKey: to.AccessHostKey, Token: op.Token,
		Final: op.Step == gpurent.StepFinal}
	return nil
}

// targetView is the desired entry of an instance on the host it moves to,
// before the switch (or while that host removes what it prepared).
func (s *Service) targetView(ctx context.Context, op *gpurent.Operation) (*agentproto.DesiredInstance, error) {
	in, err := s.store.InstanceByID(ctx, op.InstanceID)
	if err != nil {
		return nil, err
	}
	di := &agentproto.DesiredInstance{InstanceID: in.ID, Image: in.Image, GPUUUIDs: []string{},
		CPUMilli: op.ToCPUMilli, MemoryMiB: op.ToMemoryMiB, Startup: in.StartupCommand}
	if in.VolumeID != "" {
		v, err := s.store.VolumeByID(ctx, in.VolumeID)
		if err != nil {
			return nil, err
		}
		di.VolumeName, di.VolumeGiB = v.Name, v.SizeGiB
	}
	if op.Step == gpurent.StepRollingBack {
		di.State = agentproto.StateAbsent
		return di, nil
	}
	a, err := s.store.AllocationByID(ctx, op.ToAllocationID)
	if err != nil {
		return nil, err
	}
	di.AllocationID, di.GPUUUIDs = a.ID, append([]string{}, a.GPUIDs...)
	if op.Step == gpurent.StepStarting {
		di.State = agentproto.StateRunning
		return di, nil
	}
	di.State = agentproto.StatePrepared
	di.Move = &agentproto.Move{OperationID: op.ID, Role: agentproto.MoveTarget, TokenHash: TokenHash(op.Token)}
	return di, nil
}

// AddMoves adds to d the entries operations ask of host h beyond its own
// instances: the targets it prepares or starts, and the old copies it
// removes after a move away.
func (s *Service) AddMoves(ctx context.Context, h *gpurent.Host, ops []gpurent.Operation, d *agentproto.Desired) error {
	listed := make(map[string]bool, len(d.Instances))
	for _, di := range d.Instances {
		listed[di.InstanceID] = true
	}
	for i := range ops {
		op := &ops[i]
		if !op.CrossHost() || listed[op.InstanceID] {
			continue
		}
		var di *agentproto.DesiredInstance
		switch {
		case op.ToHostID == h.ID && op.Step != gpurent.StepCleanup && op.Step != gpurent.StepQueued:
			var err error
			if di, err = s.targetView(ctx, op); err != nil {
				return err
			}
		case op.FromHostID == h.ID && op.Step == gpurent.StepCleanup:
			in, err := s.store.InstanceByID(ctx, op.InstanceID)
			if err != nil {
				return err
			}
			di = &agentproto.DesiredInstance{InstanceID: in.ID, State: agentproto.StateAbsent, Image: in.Image, GPUUUIDs: []string{}}
			if in.VolumeID != "" {
				v, err := s.store.VolumeByID(ctx, in.VolumeID)
				if err != nil {
					return err
				}
				di.VolumeName, di.VolumeGiB = v.Name, v.SizeGiB
			}
		default:
			continue
		}
		listed[di.InstanceID] = true
		d.Instances = append(d.Instances, *di)
	}
	return nil
}

// ApplyMoves moves the host's operations on from its report and returns
// the instances whose reports the operations consumed.
func (s *Service) ApplyMoves(ctx context.Context, host *gpurent.Host, actual map[string]agentproto.ActualInstance) (map[string]bool, error) {
	ops, err := s.HostOps(ctx, host.ID)
	if err != nil {
		return nil, err
	}
	busy := map[string]bool{}
	for i := range ops {
		if ops[i].Step == gpurent.StepQueued {
			continue
		}
		a, seen := actual[ops[i].InstanceID]
		op, err := s.opTx(ctx, ops[i].ID, func(q gpurent.Queries, op *gpurent.Operation, in *gpurent.Instance, now time.Time) (*opChange, error) {
			return s.onReport(ctx, q, op, in, host, a, seen, now)
		})
		if err != nil {
			return nil, err
		}
		if op != nil && !op.Step.Finished() && moving(op, host.ID) {
			busy[op.InstanceID] = true
		}
	}
	return busy, nil
}

// opChange is what one step of an operation changed.
type opChange struct {
	op       bool // the operation record changed
	instance bool // the instance changed
	events   []*gpurent.Event
	notify   *gpurent.AccountEvent
}

// opTx runs fn on the current operation and its instance in a transaction,
// retrying when another writer changed either meanwhile. It returns the
// operation as it is afterwards.
func (s *Service) opTx(ctx context.Context, opID string, fn func(q gpurent.Queries, op *gpurent.Operation, in *gpurent.Instance, now time.Time) (*opChange, error)) (*gpurent.Operation, error) {
	for attempt := 0; ; attempt++ {
		var out *gpurent.Operation
		var ch *opChange
		var converge bool // the agents have something new to converge to
		err := s.store.InTx(ctx, func(q gpurent.Queries) error {
			op, err := q.OperationByID(ctx, opID)
			if err != nil {
				return err
			}
			out = op
			if op.Step.Finished() {
				return nil
			}
			in, err := q.InstanceByID(ctx, op.InstanceID)
			if err != nil {
				return err
			}
			now := s.now().UTC()
			step, alloc, host := op.Step, op.ToAllocationID, op.ToHostID
			if ch, err = fn(q, op, in, now); err != nil || ch == nil {
				return err
			}
			// What the hosts are asked follows from the step, the target
			// and the instance; progress, messages and deadlines change
			// none of it, so they wake no agent.
			converge = ch.instance || op.Step != step || op.ToAllocationID != alloc || op.ToHostID != host
			if ch.op {
				op.UpdatedAt = now
				if err := q.UpdateOperation(ctx, op); err != nil {
					return staleOr(err)
				}
			}
			if ch.instance {
				in.UpdatedAt = now
				if err := q.UpdateInstance(ctx, in); err != nil {
					return staleOr(err)
				}
			}
			for _, e := range ch.events {
				if err := q.AddEvent(ctx, e); err != nil {
					return err
				}
			}
			if ch.notify != nil {
				if err := q.AddAccountEvent(ctx, ch.notify); err != nil {
					return err
				}
			}
			if !converge {
				return nil
			}
			for _, h := range []string{op.FromHostID, op.ToHostID} {
				if h != "" {
					if _, err := q.BumpHostGeneration(ctx, h); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if errors.Is(err, rental.ErrStale) && attempt < 3 {
			continue
		}
		if err != nil {
			return nil, err
		}
		if ch != nil {
			if converge {
				s.afterOperationChange(out)
			}
			if ch.notify != nil && s.cfg.Notify != nil {
				s.cfg.Notify.Notice(ctx, ch.notify.AccountID, ch.notify.Kind, ch.notify.Message)
			}
		}
		return out, nil
	}
}

func staleOr(err error) error {
	if gpurent.IsCode(err, gpurent.CodeConflict) {
		return fmt.Errorf("%w: %w", rental.ErrStale, err)
	}
	return err
}

// onReport is one host's report applied to an operation.
func (s *Service) onReport(ctx context.Context, q gpurent.Queries, op *gpurent.Operation, in *gpurent.Instance,
	host *gpurent.Host, a agentproto.ActualInstance, seen bool, now time.Time) (*opChange, error) {
	isFrom, isTo := host.ID == op.FromHostID, host.ID == op.ToHostID
	switch op.Step {
	case gpurent.StepCopying, gpurent.StepFinal, gpurent.StepStarting:
		if isTo && seen && a.AllocationID == op.ToAllocationID && a.State == agentproto.StateFailed {
			return s.rollback(ctx, q, op, in, now, fmt.Sprintf("host %s could not run the instance on the new GPUs: %s", host.Name, a.Message))
		}
		if isFrom && op.CrossHost() && op.FromAllocationID != "" && seen && a.AllocationID == op.FromAllocationID &&
			a.State == agentproto.StateFailed {
			return s.rollback(ctx, q, op, in, now, fmt.Sprintf("the instance failed on host %s during the move: %s", host.Name, a.Message))
		}
	}
	switch op.Step {
	case gpurent.StepCopying, gpurent.StepFinal:
		if isTo && op.CrossHost() {
			return s.onTargetPreparing(op, a, seen, now), nil
		}
		if !isFrom || !op.CrossHost() || a.Move == nil || a.Move.OperationID != op.ID {
			return nil, nil
		}
		return s.onCopyProgress(op, in, a.Move, now), nil
	case gpurent.StepStarting:
		if isTo && seen && a.AllocationID == op.ToAllocationID && a.State == agentproto.StateRunning {
			return s.commit(ctx, q, op, in, now)
		}
	case gpurent.StepCleanup:
		if isFrom && (!seen || a.State == agentproto.StateAbsent) {
			finish(op, gpurent.StepDone, now)
			op.Message = "the old host removed its copy"
			return &opChange{op: true}, nil
		}
	case gpurent.StepRollingBack:
		if isTo && (!seen || a.State == agentproto.StateAbsent) {
			finish(op, gpurent.StepRolledBack, now)
			return &opChange{op: true}, nil
		}
	}
	return nil, nil
}

func finish(op *gpurent.Operation, step gpurent.OperationStep, now time.Time) {
	op.Step, op.FinishedAt, op.StepDeadline = step, &now, time.Time{}
}

// onTargetPreparing keeps the copy's stall clock from running while the
// target host reports that it is still preparing (its volume and container
// not made yet): the source cannot push before the target expects the
// operation, so no copy can make progress then, and a slow target is not a
// dead one. A target that stops reporting, or that has prepared, no longer
// holds the clock, nor does any target once the copy has moved bytes or
// MoveStartTimeout has passed since the operation began.
func (s *Service) onTargetPreparing(op *gpurent.Operation, a agentproto.ActualInstance, seen bool, now time.Time) *opChange {
	prepared := seen && a.AllocationID == op.ToAllocationID && a.State == agentproto.StateStopped
	if prepared || op.Step != gpurent.StepCopying || op.Passes != 0 || op.BytesMoved != 0 ||
		now.After(op.CreatedAt.Add(s.cfg.StartTimeout)) {
		return nil
	}
	// Extended by halves, so that a target reporting often does not write
	// the operation at every report.
	if op.StepDeadline.Sub(now) > s.cfg.StallTimeout/2 {
		return nil
	}
	op.StepDeadline = now.Add(s.cfg.StallTimeout)
	return &opChange{op: true}
}

// onCopyProgress records the source's progress and moves to the final
// pass, then to the start, as the passes complete.
func (s *Service) onCopyProgress(op *gpurent.Operation, in *gpurent.Instance, st *agentproto.MoveStatus, now time.Time) *opChange {
	ch := &opChange{}
	if st.Passes != op.Passes || st.Bytes != op.BytesMoved || (st.Final && op.Step == gpurent.StepFinal) {
		op.Passes, op.BytesMoved = st.Passes, st.Bytes
		op.StepDeadline = now.Add(s.cfg.StallTimeout)
		ch.op = true
	}
	msg := op.Message
	if st.Error != "" {
		msg = "copy retrying after: " + st.Error
	} else if op.Step == gpurent.StepCopying {
		msg = fmt.Sprintf("pre-copy: %d of %d live passes, %s sent", st.Passes, preCopyPasses, mib(st.Bytes))
	}
	if msg != op.Message {
		op.Message, ch.op = msg, true
	}
	switch {
	case op.Step == gpurent.StepCopying && st.Passes >= preCopyPasses && st.Error == "":
		op.Step, op.StepDeadline, op.Message, ch.op = gpurent.StepFinal, now.Add(s.cfg.StallTimeout), "final pass", true
		ch.events = append(ch.events, rental.NewEvent(in.ID, now, "move_final",
			"pre-copy done (%s in %d passes): stopping the instance for the last changes (operation %s)", mib(st.Bytes), st.Passes, op.ID))
	case op.Step == gpurent.StepFinal && st.Final:
		op.Step, op.StepDeadline, op.Message, ch.op = gpurent.StepStarting, now.Add(s.cfg.StartTimeout), "starting on the new host", true
		ch.events = append(ch.events, rental.NewEvent(in.ID, now, "move_copied",
			"final pass done (%s in all): starting on host %s (operation %s)", mib(st.Bytes), s.lc.HostName(op.ToHostID), op.ID))
	}
	if !ch.op {
		return nil
	}
	return ch
}

// mib says a byte count for people: KiB below a MiB, else MiB.
func mib(b int64) string {
	if b < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// commit switches the instance to its target: the old allocation ends,
// the instance takes the new shape and host. Metering already prices each
// run at its allocation's GPUs: the old price up to the old container's
// stop, the new from the new one's start, nothing in between.
func (s *Service) commit(ctx context.Context, q gpurent.Queries, op *gpurent.Operation, in *gpurent.Instance, now time.Time) (*opChange, error) {
	if op.FromAllocationID != "" {
		reason := gpurent.AllocEndMigrate
		switch op.Kind {
		case gpurent.OpUpgrade:
			reason = gpurent.AllocEndUpgrade
		case gpurent.OpFailover:
			reason = gpurent.AllocEndFailover
		}
		if err := q.EndAllocation(ctx, op.FromAllocationID, now, reason); err != nil {
			return nil, err
		}
	}
	from, fromHost := describeShape(in.TypeID, in.GPUCount), in.HostID
	in.TypeID, in.GPUCount, in.CPUMilli, in.MemoryMiB = op.ToTypeID, op.ToCount, op.ToCPUMilli, op.ToMemoryMiB
	in.HostID, in.State, in.StateReason = op.ToHostID, gpurent.StateRunning, ""
	if op.CrossHost() {
		if in.VolumeID != "" {
			if err := q.SetVolumeHost(ctx, in.VolumeID, op.ToHostID); err != nil {
				return nil, err
			}
		}
		op.Step, op.StepDeadline = gpurent.StepCleanup, now.Add(s.cfg.CleanupTimeout)
		op.Message = "running on the new host; the old host removes its copy"
	} else {
		finish(op, gpurent.StepDone, now)
		op.Message = ""
	}
	ch := &opChange{op: true, instance: true}
	switch op.Kind {
	case gpurent.OpUpgrade:
		ch.events = append(ch.events, rental.NewEvent(in.ID, now, "upgraded",
			"now running on %s on host %s (was %s on host %s): billed at the new price from the new container's start; the old GPUs are released (operation %s)",
			describeShape(op.ToTypeID, op.ToCount), s.lc.HostName(op.ToHostID), from, s.lc.HostName(fromHost), op.ID))
	case gpurent.OpFailover:
		ch.events = append(ch.events, s.failoverEvent(in, op, fromHost, now))
	case gpurent.OpMigrate:
		ch.events = append(ch.events, rental.NewEvent(in.ID, now, "migrated",
			"now running on host %s (was host %s), same volume and file system (operation %s)", s.lc.HostName(op.ToHostID), s.lc.HostName(fromHost), op.ID))
	default:
		msg := fmt.Sprintf("instance %s started on host %s with %s (its data was moved from host %s)",
			in.ID, s.lc.HostName(op.ToHostID), describeShape(op.ToTypeID, op.ToCount), s.lc.HostName(fromHost))
		ch.events = append(ch.events, rental.NewEvent(in.ID, now, "started_elsewhere", "%s (operation %s)", msg, op.ID))
		ch.notify = &gpurent.AccountEvent{AccountID: in.AccountID, At: now, Kind: "instance_started", Message: msg}
	}
	return ch, nil
}

// rollback gives the target up: its allocation ends (its runs, if any,
// are not billed) and the instance resumes on what it had; on another
// host the target removes what it prepared.
func (s *Service) rollback(ctx context.Context, q gpurent.Queries, op *gpurent.Operation, in *gpurent.Instance, now time.Time, why string) (*opChange, error) {
	if op.ToAllocationID != "" {
		if err := q.EndAllocation(ctx, op.ToAllocationID, now, gpurent.AllocEndRolledBack); err != nil && !gpurent.IsCode(err, gpurent.CodeNotFound) {
			return nil, err
		}
	}
	op.Message = why
	if op.CrossHost() {
		op.Step, op.StepDeadline = gpurent.StepRollingBack, now.Add(s.cfg.CleanupTimeout)
	} else {
		finish(op, gpurent.StepRolledBack, now)
	}
	ch := &opChange{op: true}
	if in.Active() {
		ch.instance = true
		if op.WasRunning {
			in.State, in.StateReason = gpurent.StateProvisioning, "resuming after a failed "+string(op.Kind)
		} else {
			in.State, in.StateReason = gpurent.StateStopped, why
		}
		where := fmt.Sprintf("it resumes on %s on host %s", describeShape(in.TypeID, in.GPUCount), s.lc.HostName(in.HostID))
		if !op.WasRunning {
			where = "it stays stopped, its data on host " + s.lc.HostName(in.HostID)
		}
		ch.events = append(ch.events, rental.NewEvent(in.ID, now, string(op.Kind)+"_rolled_back", "%s rolled back: %s; %s; the attempt is not billed (operation %s)",
			op.Kind, why, where, op.ID))
		if op.Kind == gpurent.OpStart {
			ch.notify = &gpurent.AccountEvent{AccountID: in.AccountID, At: now, Kind: "instance_start_failed",
				Message: fmt.Sprintf("instance %s could not be started on host %s: %s", in.ID, s.lc.HostName(op.ToHostID), why)}
		}
	}
	return ch, nil
}

// Tick moves operations on that wait for no report: it gives up steps past
// their deadline and starts queued instances whose GPUs freed up. The
// control plane calls it every few seconds (RunOperations).
func (s *Service) Tick(ctx context.Context) error {
	ops, err := s.store.ListOperations(ctx, gpurent.OperationFilter{ActiveOnly: true})
	if err != nil {
		return err
	}
	now := s.now()
	var errs []error
	for i := range ops {
		op := &ops[i]
		switch {
		case op.Step == gpurent.StepQueued:
			errs = append(errs, s.tryQueued(ctx, op))
		case !op.StepDeadline.IsZero() && now.After(op.StepDeadline):
			_, err := s.opTx(ctx, op.ID, s.expire)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RunOperations calls Tick every interval until ctx ends. It first gives
// the moves in progress their full time again: while the control plane was
// away it could not see their agents' progress, which is no fault of theirs.
func (s *Service) RunOperations(ctx context.Context, interval time.Duration) {
	if err := s.graceAfterStart(ctx); err != nil && ctx.Err() == nil {
		s.log.Error("operations: extending deadlines after the start failed", "err", err)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("operations: tick failed; retrying", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// expire gives up a step past its deadline.
func (s *Service) expire(q gpurent.Queries, op *gpurent.Operation, in *gpurent.Instance, now time.Time) (*opChange, error) {
	if op.StepDeadline.IsZero() || !now.After(op.StepDeadline) {
		return nil, nil
	}
	last := ""
	if op.Message != "" {
		last = " (last: " + op.Message + ")"
	}
	switch op.Step {
	case gpurent.StepCopying, gpurent.StepFinal:
		return s.rollback(context.Background(), q, op, in, now,
			fmt.Sprintf("the copy to host %s made no progress for %s%s", s.lc.HostName(op.ToHostID), s.cfg.StallTimeout, last))
	case gpurent.StepStarting:
		return s.rollback(context.Background(), q, op, in, now,
			fmt.Sprintf("the instance did not run on host %s within %s%s", s.lc.HostName(op.ToHostID), s.cfg.StartTimeout, last))
	case gpurent.StepCleanup:
		finish(op, gpurent.StepDone, now)
		op.Message = "host " + s.lc.HostName(op.FromHostID) + " did not confirm removing the old copy; it is removed when the host reports"
		return &opChange{op: true}, nil
	case gpurent.StepRollingBack:
		finish(op, gpurent.StepRolledBack, now)
		op.Message += "; host " + s.lc.HostName(op.ToHostID) + " did not confirm removing what it prepared"
		return &opChange{op: true}, nil
	}
	return nil, nil
}

// tryQueued starts a queued instance if GPUs for it are free: on its host
// (nothing to copy), else, when the customer allowed it, on another host.
func (s *Service) tryQueued(ctx context.Context, queued *gpurent.Operation) error {
	in, err := s.store.InstanceByID(ctx, queued.InstanceID)
	if err != nil {
		return err
	}
	if (in.State != gpurent.StateStopped && in.State != gpurent.StateFailed) || in.AllocationID != "" {
		_, err := s.opTx(ctx, queued.ID, func(q gpurent.Queries, op *gpurent.Operation, in *gpurent.Instance, now time.Time) (*opChange, error) {
			if op.Step != gpurent.StepQueued {
				return nil, nil
			}
			finish(op, gpurent.StepRolledBack, now)
			op.Message = "the instance is " + string(in.State) + " now: nothing to start"
			return &opChange{op: true}, nil
		})
		return err
	}
	acc, err := s.store.AccountByID(ctx, in.AccountID)
	if err != nil {
		return err
	}
	t, gt, err := s.shape(ctx, queued.ToTypeID, queued.ToCount)
	if err != nil {
		return err
	}
	if err := s.lc.CheckHourFunds(ctx, acc, "", gt, t.count); err != nil {
		return s.queueNote(ctx, queued.ID, "waiting: "+gpurent.ErrorMessage(err))
	}
	t.kind, t.zoneID = gpurent.OpStart, queued.ToZoneID
	req := t.request()
	req.HostID, req.ZoneID = in.HostID, ""
	p, res, err := s.lc.Reserve(ctx, req)
	if err != nil && gpurent.IsCode(err, gpurent.CodeUnavailable) && queued.ToHostID == "" {
		p, res, err = s.placeTarget(ctx, in, t)
	}
	if gpurent.IsCode(err, gpurent.CodeUnavailable) {
		return nil // still waiting
	} else if err != nil {
		return err
	}
	_, err = s.opTx(ctx, queued.ID, func(q gpurent.Queries, op *gpurent.Operation, in *gpurent.Instance, now time.Time) (*opChange, error) {
		return s.startQueued(ctx, q, op, in, p, now)
	})
	res.Done(err == nil)
	if errors.Is(err, errGPUTaken) {
		s.lc.Invalidate()
		return nil // the next tick plans again
	}
	return err
}

func (s *Service) queueNote(ctx context.Context, opID, msg string) error {
	_, err := s.opTx(ctx, opID, func(q gpurent.Queries, op *gpurent.Operation, in *gpurent.Instance, now time.Time) (*opChange, error) {
		if op.Step != gpurent.StepQueued || op.Message == msg {
			return nil, nil
		}
		op.Message = msg
		return &opChange{op: true}, nil
	})
	return err
}

// startQueued claims p for a queued instance: on its own host it simply
// starts; on another the queued operation becomes a moved start.
func (s *Service) startQueued(ctx context.Context, q gpurent.Queries, op *gpurent.Operation, in *gpurent.Instance, p sched.Placement, now time.Time) (*opChange, error) {
	if op.Step != gpurent.StepQueued || (in.State != gpurent.StateStopped && in.State != gpurent.StateFailed) || in.AllocationID != "" {
		return nil, nil
	}
	a := &gpurent.Allocation{ID: gpurent.NewID(gpurent.PrefixAllocation), InstanceID: in.ID,
		HostID: p.HostID, GPUIDs: p.GPUIDs, StartedAt: now, StartReason: "start"}
	if err := q.CreateAllocation(ctx, a); err != nil {
		if gpurent.IsCode(err, gpurent.CodeConflict) {
			return nil, errGPUTaken
		}
		return nil, err
	}
	waited := now.Sub(op.CreatedAt).Round(time.Second)
	ch := &opChange{op: true, instance: true}
	in.State = gpurent.StateProvisioning
	op.ToAllocationID, op.ToHostID = a.ID, p.HostID
	if p.HostID == in.HostID {
		finish(op, gpurent.StepDone, now)
		op.Message = fmt.Sprintf("started after %s in the queue", waited)
		in.StateReason = "start requested (queued)"
		msg := fmt.Sprintf("instance %s is starting: %s freed up on host %s after %s in the queue",
			in.ID, describeShape(in.TypeID, in.GPUCount), s.lc.HostName(p.HostID), waited)
		ch.events = append(ch.events, rental.NewEvent(in.ID, now, "starting", "%s (operation %s)", msg, op.ID))
		ch.notify = &gpurent.AccountEvent{AccountID: in.AccountID, At: now, Kind: "instance_starting", Message: msg}
		return ch, nil
	}
	op.Token = newToken()
	op.Step, op.StepDeadline = gpurent.StepFinal, now.Add(s.cfg.StallTimeout)
	op.Message = "moving the data to host " + s.lc.HostName(p.HostID)
	in.StateReason = fmt.Sprintf("start in progress (%s)", op.ID)
	msg := fmt.Sprintf("instance %s is starting on host %s after %s in the queue: %s freed up there; its data is being copied",
		in.ID, s.lc.HostName(p.HostID), waited, describeShape(in.TypeID, in.GPUCount))
	ch.events = append(ch.events, rental.NewEvent(in.ID, now, "start_started", "%s (operation %s)", msg, op.ID))
	ch.notify = &gpurent.AccountEvent{AccountID: in.AccountID, At: now, Kind: "instance_starting", Message: msg}
	return ch, nil
}

// Abandon ends the instance's unfinished operation because the instance
// is being deleted: the target allocation ends, a target host removes what
// it prepared, and every allocation the instance holds is released.
func (s *Service) Abandon(ctx context.Context, q gpurent.Queries, in *gpurent.Instance, now time.Time) error {
	op, err := q.ActiveOperation(ctx, in.ID)
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	switch {
	case op.Step == gpurent.StepCleanup:
		return nil // switched: the old host removes its copy either way
	case op.Step == gpurent.StepQueued || !op.CrossHost():
		finish(op, gpurent.StepRolledBack, now)
	default:
		op.Step, op.StepDeadline = gpurent.StepRollingBack, now.Add(s.cfg.CleanupTimeout)
	}
	op.Message, op.UpdatedAt = "the instance is being deleted", now
	for _, id := range []string{op.ToAllocationID, op.FromAllocationID} {
		if id == "" {
			continue
		}
		if err := q.EndAllocation(ctx, id, now, "delete"); err != nil && !gpurent.IsCode(err, gpurent.CodeNotFound) {
			return err
		}
	}
	in.AllocationID, in.GPUIDs = "", nil
	if err := q.UpdateOperation(ctx, op); err != nil {
		return staleOr(err)
	}
	if op.ToHostID != "" && op.ToHostID != in.HostID {
		if _, err := q.BumpHostGeneration(ctx, op.ToHostID); err != nil {
			return err
		}
		s.lc.Wake(op.ToHostID)
	}
	return nil
}

// graceAfterStart moves every unfinished step's deadline to at least its
// full timeout from now.
func (s *Service) graceAfterStart(ctx context.Context) error {
	ops, err := s.store.ListOperations(ctx, gpurent.OperationFilter{ActiveOnly: true})
	if err != nil {
		return err
	}
	var errs []error
	for i := range ops {
		if ops[i].StepDeadline.IsZero() {
			continue
		}
		_, err := s.opTx(ctx, ops[i].ID, func(q gpurent.Queries, op *gpurent.Operation, in *gpurent.Instance, now time.Time) (*opChange, error) {
			timeout := s.cfg.StallTimeout
			switch op.Step {
			case gpurent.StepStarting:
				timeout = s.cfg.StartTimeout
			case gpurent.StepCleanup, gpurent.StepRollingBack:
				timeout = s.cfg.CleanupTimeout
			}
			if op.StepDeadline.IsZero() || !op.StepDeadline.Before(now.Add(timeout)) {
				return nil, nil
			}
			op.StepDeadline = now.Add(timeout)
			return &opChange{op: true}, nil
		})
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
