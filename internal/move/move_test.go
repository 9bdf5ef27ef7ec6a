package move_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/move"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/rental/rentaltest"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

func intp(n int) *int { return &n }

// withAccess records an access server for the host, as its agent's report
// would: a move's source pushes there.
func (e *env) withAccess(h *gpurent.Host) {
	e.T.Helper()
	if err := e.St.SetHostAccess(e.Ctx, h.ID, "127.0.0.1:2223", "ssh-ed25519 AAAAkey-"+h.Name); err != nil {
		e.T.Fatal(err)
	}
}

func (e *env) operation(id string) *gpurent.Operation {
	e.T.Helper()
	op, err := e.St.OperationByID(e.Ctx, id)
	if err != nil {
		e.T.Fatalf("read operation %s: %v", id, err)
	}
	return op
}

// runningOn is the report entry of a running container of allocation.
func runningOn(instanceID, allocationID string) agentproto.ActualInstance {
	return agentproto.ActualInstance{InstanceID: instanceID, AllocationID: allocationID, State: agentproto.StateRunning}
}

// TestUpgradeSameHost: the target is claimed beside the old GPUs, the
// agent runs the new allocation (carrying the file system), and the
// switch ends the old allocation; a failed target rolls back to the old
// allocation.
func TestUpgradeSameHost(t *testing.T) {
	rentaltest.Backends(t, func(t *testing.T, st gpurent.Store) {
		e := newEnv(t, st)
		h := e.Register("node-1", zoneA, h100, 8)
		in := e.MustRent(e.Alice, rentaltest.Req(h100, 1)).Instance
		e.Report(h.ID, rentaltest.Running(&in))
		oldAlloc, oldGPUs := in.AllocationID, in.GPUIDs

		plan, err := e.Moves.PlanUpgrade(e.Ctx, e.Alice, in.ID, rental.UpgradeRequest{Count: intp(4)})
		if err != nil || !plan.SameHost || !plan.Available || plan.To.Count != 4 || plan.From.Count != 1 || plan.To.BF16TFLOPS != 4*plan.From.BF16TFLOPS {
			t.Fatalf("plan: %+v, %v", plan, err)
		}
		od, created, err := e.Moves.Upgrade(e.Ctx, e.Alice, in.ID, rental.UpgradeRequest{Count: intp(4), IdempotencyKey: "up-1"})
		if err != nil || !created {
			t.Fatalf("upgrade: %v (created %v)", err, created)
		}
		op := od.Operation
		if op.Step != gpurent.StepStarting || op.ToHostID != h.ID || op.FromAllocationID != oldAlloc || op.CrossHost() {
			t.Fatalf("operation %+v", op)
		}
		// The same key answers the same operation; another request under it is refused.
		again, created, err := e.Moves.Upgrade(e.Ctx, e.Alice, in.ID, rental.UpgradeRequest{Count: intp(4), IdempotencyKey: "up-1"})
		if err != nil || created || again.Operation.ID != op.ID {
			t.Fatalf("replay: %+v, %v, %v", again, created, err)
		}
		_, _, err = e.Moves.Upgrade(e.Ctx, e.Alice, in.ID, rental.UpgradeRequest{Count: intp(2), IdempotencyKey: "up-1"})
		rentaltest.WantCode(t, err, gpurent.CodeConflict, "key reused for another request")
		_, _, err = e.Moves.Upgrade(e.Ctx, e.Alice, in.ID, rental.UpgradeRequest{Count: intp(2)})
		rentaltest.WantCode(t, err, gpurent.CodeConflict, "second operation")
		_, err = e.Rent.Stop(e.Ctx, e.Alice, in.ID)
		rentaltest.WantCode(t, err, gpurent.CodeConflict, "stop while upgrading")

		// Both allocations are held: nobody can take the instance's place.
		if got := rentaltest.HeldBy(e.Host(h.ID), in.ID); len(got) != 5 {
			t.Fatalf("held while upgrading: %v, want the old 1 and the new 4", got)
		}
		di := rentaltest.DesiredOf(t, e.DesiredNow(h.ID), in.ID)
		if di.State != agentproto.StateRunning || di.AllocationID != op.ToAllocationID || len(di.GPUUUIDs) != 4 ||
			di.CPUMilli != op.ToCPUMilli || di.Move != nil {
			t.Fatalf("desired while upgrading: %+v", di)
		}
		// The agent still shows the old container (stopped mid-carry): nothing changes.
		e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, AllocationID: oldAlloc, State: agentproto.StateStopped})
		if got := e.operation(op.ID); got.Step != gpurent.StepStarting {
			t.Fatalf("a report of the old container moved the operation to %s", got.Step)
		}
		e.Report(h.ID, runningOn(in.ID, op.ToAllocationID))
		got := e.Instance(in.ID)
		if got.TypeID != h100 || got.GPUCount != 4 || got.State != gpurent.StateRunning || got.AllocationID != op.ToAllocationID ||
			got.CPUMilli != op.ToCPUMilli {
			t.Fatalf("after the switch: %+v", got)
		}
		if a := e.Allocation(oldAlloc); a.EndedAt == nil || a.EndReason != gpurent.AllocEndUpgrade {
			t.Errorf("old allocation %+v, want ended by the upgrade", a)
		}
		if o := e.operation(op.ID); o.Step != gpurent.StepDone || o.FinishedAt == nil {
			t.Errorf("operation after the switch: %+v", o)
		}
		held := rentaltest.HeldBy(e.Host(h.ID), in.ID)
		if len(held) != 4 || slices.Contains(held, oldGPUs[0]) {
			t.Errorf("held after the switch %v (old GPU %s)", held, oldGPUs[0])
		}
		if ev := e.LastEvent(in.ID); ev.Kind != "upgraded" || !strings.Contains(ev.Message, "4 x "+h100) {
			t.Errorf("last event %+v", ev)
		}

		// Down to no-GPU mode; the target fails: rolled back to 4 GPUs.
		od, _, err = e.Moves.Upgrade(e.Ctx, e.Alice, in.ID, rental.UpgradeRequest{Count: intp(0)})
		if err != nil {
			t.Fatal(err)
		}
		op = od.Operation
		if di := rentaltest.DesiredOf(t, e.DesiredNow(h.ID), in.ID); di.AllocationID != op.ToAllocationID || len(di.GPUUUIDs) != 0 {
			t.Fatalf("desired for no-GPU mode: %+v", di)
		}
		e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, AllocationID: op.ToAllocationID, State: agentproto.StateFailed, Message: "exec format error"})
		o := e.operation(op.ID)
		if o.Step != gpurent.StepRolledBack || !strings.Contains(o.Message, "exec format error") {
			t.Fatalf("operation after the target failed: %+v", o)
		}
		if a := e.Allocation(op.ToAllocationID); a.EndedAt == nil || a.EndReason != gpurent.AllocEndRolledBack {
			t.Errorf("target allocation %+v, want rolled back", a)
		}
		got = e.Instance(in.ID)
		if got.State != gpurent.StateProvisioning || got.AllocationID != od.Operation.FromAllocationID || got.GPUCount != 4 {
			t.Fatalf("after the rollback: %+v", got)
		}
		if di := rentaltest.DesiredOf(t, e.DesiredNow(h.ID), in.ID); di.AllocationID != got.AllocationID || len(di.GPUUUIDs) != 4 {
			t.Fatalf("desired after the rollback: %+v", di)
		}
		e.Report(h.ID, rentaltest.Running(got))
		if got := e.Instance(in.ID); got.State != gpurent.StateRunning {
			t.Fatalf("resumed: %s", got.State)
		}
	})
}

// TestMoveCrossHost walks a cross-host upgrade through every step: pre-copy
// while running, the final pass with the instance stopped, the start on the
// target, the switch and the old host's cleanup.
func TestMoveCrossHost(t *testing.T) {
	rentaltest.Backends(t, func(t *testing.T, st gpurent.Store) {
		e := newEnv(t, st)
		ha := e.Register("node-a", zoneA, h100, 1)
		hb := e.Register("node-b", zoneA, a100, 4)
		e.withAccess(ha)
		e.withAccess(hb)
		hb = e.Host(hb.ID)
		in := e.MustRent(e.Alice, rentaltest.Req(h100, 1)).Instance
		e.Report(ha.ID, rentaltest.Running(&in))
		from := in.AllocationID

		od, _, err := e.Moves.Upgrade(e.Ctx, e.Alice, in.ID, rental.UpgradeRequest{TypeID: a100, Count: intp(2)})
		if err != nil {
			t.Fatal(err)
		}
		op := od.Operation
		if op.Step != gpurent.StepCopying || op.ToHostID != hb.ID || !op.CrossHost() || op.Token == "" {
			t.Fatalf("operation %+v", op)
		}
		src := rentaltest.DesiredOf(t, e.DesiredNow(ha.ID), in.ID)
		if src.State != agentproto.StateRunning || src.AllocationID != from || src.Move == nil || src.Move.Role != agentproto.MoveSource ||
			src.Move.Token != op.Token || src.Move.TargetAddr != hb.AccessAddr || src.Move.TargetHostKey != hb.AccessHostKey || src.Move.Final {
			t.Fatalf("source desired %+v (move %+v)", src, src.Move)
		}
		dst := rentaltest.DesiredOf(t, e.DesiredNow(hb.ID), in.ID)
		if dst.State != agentproto.StatePrepared || dst.AllocationID != op.ToAllocationID || len(dst.GPUUUIDs) != 2 ||
			dst.Move == nil || dst.Move.Token != "" || dst.Move.TokenHash != move.TokenHash(op.Token) || dst.VolumeName == "" {
			t.Fatalf("target desired %+v (move %+v)", dst, dst.Move)
		}
		// One pass done: still copying; a stall of the second is reported.
		moving := func(st agentproto.MoveStatus, state string, alloc string) agentproto.ActualInstance {
			st.OperationID = op.ID
			return agentproto.ActualInstance{InstanceID: in.ID, AllocationID: alloc, State: state, Move: &st}
		}
		e.Report(ha.ID, moving(agentproto.MoveStatus{Passes: 1, Bytes: 1 << 30}, agentproto.StateRunning, from))
		if o := e.operation(op.ID); o.Step != gpurent.StepCopying || o.Passes != 1 || o.BytesMoved != 1<<30 {
			t.Fatalf("after pass 1: %+v", o)
		}
		if got := e.Instance(in.ID); got.State != gpurent.StateRunning || got.HostID != ha.ID {
			t.Fatalf("instance while copying: %+v", got)
		}
		e.Report(ha.ID, moving(agentproto.MoveStatus{Passes: 2, Bytes: 1<<30 + 1<<20}, agentproto.StateRunning, from))
		if o := e.operation(op.ID); o.Step != gpurent.StepFinal {
			t.Fatalf("after pass 2: %s", o.Step)
		}
		src = rentaltest.DesiredOf(t, e.DesiredNow(ha.ID), in.ID)
		if src.State != agentproto.StateStopped || src.Move == nil || !src.Move.Final {
			t.Fatalf("source desired for the final pass: %+v", src)
		}
		e.Report(ha.ID, moving(agentproto.MoveStatus{Passes: 2, Final: true, Bytes: 1<<30 + 2<<20}, agentproto.StateStopped, from))
		if o := e.operation(op.ID); o.Step != gpurent.StepStarting {
			t.Fatalf("after the final pass: %s", o.Step)
		}
		if dst := rentaltest.DesiredOf(t, e.DesiredNow(hb.ID), in.ID); dst.State != agentproto.StateRunning || dst.Move != nil {
			t.Fatalf("target desired to start: %+v", dst)
		}
		if src := rentaltest.DesiredOf(t, e.DesiredNow(ha.ID), in.ID); src.State != agentproto.StateStopped || src.Move != nil {
			t.Fatalf("source desired while the target starts: %+v", src)
		}
		e.Report(hb.ID, runningOn(in.ID, op.ToAllocationID))
		got := e.Instance(in.ID)
		if got.HostID != hb.ID || got.TypeID != a100 || got.GPUCount != 2 || got.State != gpurent.StateRunning {
			t.Fatalf("after the switch: %+v", got)
		}
		if v, _ := e.St.VolumeByID(e.Ctx, got.VolumeID); v.HostID != hb.ID {
			t.Errorf("volume on %s after the move, want %s", v.HostID, hb.ID)
		}
		if a := e.Allocation(from); a.EndedAt == nil || a.EndReason != gpurent.AllocEndUpgrade {
			t.Errorf("old allocation %+v", a)
		}
		if o := e.operation(op.ID); o.Step != gpurent.StepCleanup {
			t.Fatalf("after the switch: %s", o.Step)
		}
		if src := rentaltest.DesiredOf(t, e.DesiredNow(ha.ID), in.ID); src.State != agentproto.StateAbsent || src.VolumeName == "" {
			t.Fatalf("old host after the switch: %+v", src)
		}
		if dst := rentaltest.DesiredOf(t, e.DesiredNow(hb.ID), in.ID); dst.State != agentproto.StateRunning || dst.AllocationID != op.ToAllocationID {
			t.Fatalf("new host after the switch: %+v", dst)
		}
		e.Report(ha.ID) // the old copy is gone
		if o := e.operation(op.ID); o.Step != gpurent.StepDone {
			t.Fatalf("after cleanup: %s", o.Step)
		}
		for _, di := range e.DesiredNow(ha.ID).Instances {
			if di.InstanceID == in.ID {
				t.Errorf("old host still lists the instance: %+v", di)
			}
		}
		if n := len(rentaltest.HeldBy(e.Host(ha.ID), in.ID)); n != 0 {
			t.Errorf("old host holds %d GPUs for the instance", n)
		}
	})
}

// TestMoveStallRollsBack: a copy that makes no progress is given up; the
// instance resumes on its old allocation and the target removes what it
// prepared. A target that fails to prepare rolls back at once.
func TestMoveStallRollsBack(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	ha := e.Register("node-a", zoneA, h100, 2)
	hb := e.Register("node-b", zoneA, h100, 2)
	e.withAccess(ha)
	e.withAccess(hb)
	in := e.MustRent(e.Alice, rentaltest.Req(h100, 2)).Instance
	if in.HostID != ha.ID {
		ha, hb = hb, ha
	}
	e.Report(ha.ID, rentaltest.Running(&in))
	od, _, err := e.Moves.Migrate(e.Ctx, e.Alice, in.ID, rental.MigrateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	op := od.Operation
	if op.ToHostID != hb.ID || op.Kind != gpurent.OpMigrate {
		t.Fatalf("migrate: %+v", op)
	}
	e.Clock.Advance(time.Minute)
	if err := e.Moves.Tick(e.Ctx); err != nil {
		t.Fatal(err)
	}
	if o := e.operation(op.ID); o.Step != gpurent.StepCopying {
		t.Fatalf("rolled back too early: %+v", o)
	}
	e.Clock.Advance(2 * time.Minute)
	if err := e.Moves.Tick(e.Ctx); err != nil {
		t.Fatal(err)
	}
	o := e.operation(op.ID)
	if o.Step != gpurent.StepRollingBack || !strings.Contains(o.Message, "no progress") {
		t.Fatalf("after the stall: %+v", o)
	}
	got := e.Instance(in.ID)
	if got.HostID != ha.ID || got.AllocationID != in.AllocationID || got.State != gpurent.StateProvisioning {
		t.Fatalf("instance after the rollback: %+v", got)
	}
	if di := rentaltest.DesiredOf(t, e.DesiredNow(hb.ID), in.ID); di.State != agentproto.StateAbsent {
		t.Fatalf("target desired after the rollback: %+v", di)
	}
	if n := len(rentaltest.HeldBy(e.Host(hb.ID), in.ID)); n != 0 {
		t.Fatalf("target GPUs still held: %d", n)
	}
	e.Report(hb.ID, agentproto.ActualInstance{InstanceID: in.ID, State: agentproto.StateAbsent})
	if o := e.operation(op.ID); o.Step != gpurent.StepRolledBack {
		t.Fatalf("after the target cleaned up: %s", o.Step)
	}
	e.Report(ha.ID, rentaltest.Running(got))
	if got := e.Instance(in.ID); got.State != gpurent.StateRunning {
		t.Fatalf("resumed: %s", got.State)
	}

	// A target that cannot prepare: rolled back on its report.
	e.Heartbeat(ha.ID)
	e.Heartbeat(hb.ID)
	od, _, err = e.Moves.Migrate(e.Ctx, e.Alice, in.ID, rental.MigrateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	e.Report(hb.ID, agentproto.ActualInstance{InstanceID: in.ID, AllocationID: od.Operation.ToAllocationID,
		State: agentproto.StateFailed, Message: "image not present"})
	if o := e.operation(od.Operation.ID); o.Step != gpurent.StepRollingBack || !strings.Contains(o.Message, "image not present") {
		t.Fatalf("after a failed prepare: %+v", o)
	}
	// Delete while the target cleans up: every allocation is released.
	if _, err := e.Rent.Delete(e.Ctx, e.Alice, in.ID); err != nil {
		t.Fatal(err)
	}
	if n := len(rentaltest.HeldBy(e.Host(ha.ID), in.ID)) + len(rentaltest.HeldBy(e.Host(hb.ID), in.ID)); n != 0 {
		t.Fatalf("GPUs held after delete: %d", n)
	}
}

// TestDeleteDuringMove: deleting mid-copy releases both allocations and the
// target removes what it prepared.
func TestDeleteDuringMove(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	ha := e.Register("node-a", zoneA, h100, 1)
	hb := e.Register("node-b", zoneA, h100, 1)
	e.withAccess(ha)
	e.withAccess(hb)
	in := e.MustRent(e.Alice, rentaltest.Req(h100, 1)).Instance
	if in.HostID != ha.ID {
		ha, hb = hb, ha
	}
	e.Report(ha.ID, rentaltest.Running(&in))
	od, _, err := e.Moves.Migrate(e.Ctx, e.Alice, in.ID, rental.MigrateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Rent.Delete(e.Ctx, e.Alice, in.ID); err != nil {
		t.Fatal(err)
	}
	if n := rentaltest.Held(e.Host(ha.ID)) + rentaltest.Held(e.Host(hb.ID)); n != 0 {
		t.Fatalf("GPUs held after delete mid-move: %d", n)
	}
	if o := e.operation(od.Operation.ID); o.Step != gpurent.StepRollingBack {
		t.Fatalf("operation after delete: %+v", o)
	}
	if di := rentaltest.DesiredOf(t, e.DesiredNow(hb.ID), in.ID); di.State != agentproto.StateAbsent {
		t.Errorf("target after delete: %+v", di)
	}
	if di := rentaltest.DesiredOf(t, e.DesiredNow(ha.ID), in.ID); di.State != agentproto.StateAbsent || di.Move != nil {
		t.Errorf("source after delete: %+v", di)
	}
}

// TestUpgradeRefusals: bad requests get clear errors and claim nothing.
func TestUpgradeRefusals(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, h100, 2)
	in := e.MustRent(e.Alice, rentaltest.Req(h100, 1)).Instance
	e.Report(h.ID, rentaltest.Running(&in))
	for _, c := range []struct {
		r    rental.UpgradeRequest
		code gpurent.Code
		msg  string
	}{
		{rental.UpgradeRequest{Count: intp(1)}, gpurent.CodeInvalid, "already has"},
		{rental.UpgradeRequest{Count: intp(-1)}, gpurent.CodeInvalid, "gpu_count"},
		{rental.UpgradeRequest{Count: intp(9)}, gpurent.CodeInvalid, "gpu_count"},
		{rental.UpgradeRequest{TypeID: "v100"}, gpurent.CodeInvalid, "unknown GPU type"},
		{rental.UpgradeRequest{Count: intp(8)}, gpurent.CodeUnavailable, "no host"},
	} {
		_, _, err := e.Moves.Upgrade(e.Ctx, e.Alice, in.ID, c.r)
		rentaltest.WantCode(t, err, c.code, c.msg)
		rentaltest.WantMessage(t, err, c.msg)
	}
	_, _, err := e.Moves.Upgrade(e.Ctx, e.Bob, in.ID, rental.UpgradeRequest{Count: intp(2)})
	rentaltest.WantCode(t, err, gpurent.CodeNotFound, "another account's instance")
	_, _, err = e.Moves.Migrate(e.Ctx, e.Alice, in.ID, rental.MigrateRequest{HostID: h.ID})
	rentaltest.WantCode(t, err, gpurent.CodeForbidden, "a customer naming a host")
	if n := len(rentaltest.HeldBy(e.Host(h.ID), in.ID)); n != 1 {
		t.Fatalf("refusals claimed GPUs: %d held", n)
	}
	// A host of the process runtime cannot receive a moved instance.
	if _, err := e.Fleet.Register(e.Ctx, agentproto.RegisterRequest{JoinToken: e.JoinToken(zoneA, "node-p"), Name: "node-p", Zone: zoneA,
		CPUMilli: 256_000, MemoryMiB: 4 << 20, DiskGiB: 7680, Runtime: "process", AgentVersion: "test",
		GPUs: rentaltest.GPUInfos("node-p", h100, 8)}); err != nil {
		t.Fatal(err)
	}
	_, _, err = e.Moves.Upgrade(e.Ctx, e.Alice, in.ID, rental.UpgradeRequest{Count: intp(8)})
	rentaltest.WantCode(t, err, gpurent.CodeUnavailable, "a move to a process-runtime host")
	rentaltest.WantMessage(t, err, "docker runtime")
	if n := len(rentaltest.HeldBy(e.Host(h.ID), in.ID)); n != 1 {
		t.Fatalf("a refused move claimed GPUs: %d held", n)
	}
}

// TestQueuedAndMovedStart: a stopped instance whose host is full waits in
// the queue and starts by itself when its GPUs free up (with a notice), or
// starts on another host with its data moved.
func TestQueuedAndMovedStart(t *testing.T) {
	rentaltest.Backends(t, func(t *testing.T, st gpurent.Store) {
		e := newEnv(t, st)
		ha := e.Register("node-a", zoneA, h100, 1)
		in := e.MustRent(e.Alice, rentaltest.Req(h100, 1)).Instance
		e.Report(ha.ID, rentaltest.Running(&in))
		if _, err := e.Rent.Stop(e.Ctx, e.Alice, in.ID); err != nil {
			t.Fatal(err)
		}
		e.Report(ha.ID, agentproto.ActualInstance{InstanceID: in.ID, State: agentproto.StateStopped})
		bobs := e.MustRent(e.Bob, rentaltest.Req(h100, 1)).Instance

		_, _, err := e.Moves.StartWith(e.Ctx, e.Alice, in.ID, rental.StartOptions{})
		rentaltest.WantCode(t, err, gpurent.CodeConflict, "plain start on a full host")
		d, op, err := e.Moves.StartWith(e.Ctx, e.Alice, in.ID, rental.StartOptions{Queue: true})
		if err != nil || op == nil || op.Step != gpurent.StepQueued || d.Instance.State != gpurent.StateStopped {
			t.Fatalf("queue: %+v, %+v, %v", d, op, err)
		}
		if _, again, err := e.Moves.StartWith(e.Ctx, e.Alice, in.ID, rental.StartOptions{Queue: true}); err != nil || again.ID != op.ID {
			t.Fatalf("queue again: %+v, %v", again, err)
		}
		if err := e.Moves.Tick(e.Ctx); err != nil {
			t.Fatal(err)
		}
		if o := e.operation(op.ID); o.Step != gpurent.StepQueued {
			t.Fatalf("started while the host is full: %+v", o)
		}
		if _, err := e.Rent.Delete(e.Ctx, e.Bob, bobs.ID); err != nil {
			t.Fatal(err)
		}
		e.Report(ha.ID, agentproto.ActualInstance{InstanceID: in.ID, State: agentproto.StateStopped})
		if err := e.Moves.Tick(e.Ctx); err != nil {
			t.Fatal(err)
		}
		o := e.operation(op.ID)
		got := e.Instance(in.ID)
		if o.Step != gpurent.StepDone || got.State != gpurent.StateProvisioning || got.HostID != ha.ID || got.AllocationID == "" {
			t.Fatalf("after the GPU freed up: op %+v, instance %+v", o, got)
		}
		evs, err := e.St.ListAccountEvents(e.Ctx, e.Alice.ID, 10)
		if err != nil || len(evs) == 0 || evs[0].Kind != "instance_starting" {
			t.Fatalf("account events %+v, %v; want a notice of the start", evs, err)
		}
		e.Report(ha.ID, rentaltest.Running(got))

		// Stopped again, host taken again, and now moved to another host.
		if _, err := e.Rent.Stop(e.Ctx, e.Alice, in.ID); err != nil {
			t.Fatal(err)
		}
		e.Report(ha.ID, agentproto.ActualInstance{InstanceID: in.ID, State: agentproto.StateStopped})
		e.MustRent(e.Bob, rentaltest.Req(h100, 1))
		hb := e.Register("node-b", zoneA, h100, 2)
		e.withAccess(ha)
		e.withAccess(hb)
		d, op, err = e.Moves.StartWith(e.Ctx, e.Alice, in.ID, rental.StartOptions{Move: true})
		if err != nil || op == nil || op.Step != gpurent.StepFinal || op.ToHostID != hb.ID || op.FromAllocationID != "" {
			t.Fatalf("moved start: %+v, %v", op, err)
		}
		if d.Instance.State != gpurent.StateProvisioning {
			t.Errorf("instance while moving to start: %s", d.Instance.State)
		}
		src := rentaltest.DesiredOf(t, e.DesiredNow(ha.ID), in.ID)
		if src.State != agentproto.StateStopped || src.AllocationID != "" || src.Move == nil || !src.Move.Final {
			t.Fatalf("source desired for a moved start: %+v", src)
		}
		e.Report(ha.ID, agentproto.ActualInstance{InstanceID: in.ID, State: agentproto.StateStopped,
			Move: &agentproto.MoveStatus{OperationID: op.ID, Final: true, Bytes: 4096}})
		e.Report(hb.ID, runningOn(in.ID, op.ToAllocationID))
		if got := e.Instance(in.ID); got.HostID != hb.ID || got.State != gpurent.StateRunning {
			t.Fatalf("after the moved start: %+v", got)
		}
	})
}

// TestOperatorMigrateToHost: an operator moves a running instance to a
// named host (maintenance); the host must be another and have room.
func TestOperatorMigrateToHost(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	ha := e.Register("node-a", zoneA, h100, 2)
	hb := e.Register("node-b", zoneA, h100, 2)
	hc := e.Register("node-c", zoneB, h100, 2)
	for _, h := range []*gpurent.Host{ha, hb, hc} {
		e.withAccess(h)
	}
	in := e.MustRent(e.Alice, rentaltest.Req(h100, 2)).Instance
	e.Report(in.HostID, rentaltest.Running(&in))
	target := hc
	if in.HostID == hc.ID {
		target = hb
	}
	_, _, err := e.Moves.Migrate(e.Ctx, e.Op, in.ID, rental.MigrateRequest{HostID: in.HostID})
	rentaltest.WantCode(t, err, gpurent.CodeInvalid, "migrate to its own host")
	od, created, err := e.Moves.Migrate(e.Ctx, e.Op, in.ID, rental.MigrateRequest{HostID: target.ID, IdempotencyKey: "maint-1"})
	if err != nil || !created {
		t.Fatalf("operator migrate: %v", err)
	}
	if od.Operation.ToHostID != target.ID || od.Operation.Kind != gpurent.OpMigrate || od.Operation.ToCount != 2 {
		t.Fatalf("operation %+v, want a migrate of 2 GPUs to %s", od.Operation, target.Name)
	}
	if n := len(rentaltest.HeldBy(e.Host(target.ID), in.ID)); n != 2 {
		t.Fatalf("target holds %d GPUs for the instance, want 2", n)
	}
}
