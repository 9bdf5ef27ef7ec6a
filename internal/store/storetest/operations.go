package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

// The operations contract, run by Run once per function on a fresh store:
// every field round-trips (times in UTC), one unfinished operation per
// instance, idempotency keys unique per account, optimistic concurrency,
// the list filters and order, and the instance and volume writes an
// operation makes.

// newOperation is an active cross-host upgrade of in with every field set.
func newOperation(in *gpurent.Instance, key string) *gpurent.Operation {
	return &gpurent.Operation{
		InstanceID: in.ID, AccountID: in.AccountID, Kind: gpurent.OpUpgrade, Step: gpurent.StepCopying,
		FromAllocationID: "alloc-from", FromHostID: "host-a", ToAllocationID: "alloc-to", ToHostID: "host-b",
		ToTypeID: "h100-80g-sxm", ToCount: 8, ToCPUMilli: 128000, ToMemoryMiB: 1 << 20, ToZoneID: "cd-a",
		WasRunning: true, Token: "grant-secret", Passes: 2, BytesMoved: 5 << 40, Message: "pre-copying",
		IdempotencyKey: key, RequestHash: "rh-" + key, StepDeadline: at(600), CreatedAt: at(1), UpdatedAt: at(2),
	}
}

func testOperationRoundTrip(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "op-rt@example.com")
	in := SeedInstance(t, s, acc.ID, "rt")
	op := newOperation(in, "k-rt")
	must(t, s.CreateOperation(ctx, op), "create operation")
	if !strings.HasPrefix(op.ID, gpurent.PrefixOperation+"-") {
		t.Fatalf("operation id %q not generated with prefix", op.ID)
	}
	if op.Version != 1 {
		t.Fatalf("new operation version %d, want 1", op.Version)
	}
	want := *newOperation(in, "k-rt")
	want.ID, want.Version = op.ID, 1
	want.StepDeadline = at(600).UTC().Truncate(time.Microsecond)
	want.CreatedAt = at(1).UTC().Truncate(time.Microsecond)
	want.UpdatedAt = at(2).UTC().Truncate(time.Microsecond)
	same(t, "created operation as stored", *op, want)

	got, err := s.OperationByID(ctx, op.ID)
	must(t, err, "operation by id")
	same(t, "operation by id", *got, want)
	for name, tm := range map[string]time.Time{"created_at": got.CreatedAt, "updated_at": got.UpdatedAt,
		"step_deadline": got.StepDeadline} {
		if tm.Location() != time.UTC {
			t.Fatalf("%s read back in %v, want UTC", name, tm.Location())
		}
	}
	got, err = s.OperationByIdempotencyKey(ctx, acc.ID, "k-rt")
	must(t, err, "operation by idempotency key")
	same(t, "operation by idempotency key", *got, want)
	got, err = s.ActiveOperation(ctx, in.ID)
	must(t, err, "active operation")
	same(t, "active operation", *got, want)

	// A finished one, and one with no deadline, no target and defaults.
	other := SeedInstance(t, s, acc.ID, "rt2")
	fin := at(50)
	done := &gpurent.Operation{InstanceID: other.ID, AccountID: acc.ID, Kind: gpurent.OpMigrate,
		Step: gpurent.StepRolledBack, Message: "target failed", CreatedAt: at(3), FinishedAt: &fin}
	must(t, s.CreateOperation(ctx, done), "create finished operation")
	if !done.UpdatedAt.Equal(done.CreatedAt) || done.FinishedAt == nil || done.FinishedAt.Location() != time.UTC {
		t.Fatalf("defaults of a created operation: %+v", done)
	}
	got, err = s.OperationByID(ctx, done.ID)
	must(t, err, "finished operation by id")
	same(t, "finished operation round trip", *got, *done)
	if !got.StepDeadline.IsZero() || got.FinishedAt == nil || !got.FinishedAt.Equal(fin.Truncate(time.Microsecond)) {
		t.Fatalf("finished operation times: deadline %v finished %v", got.StepDeadline, got.FinishedAt)
	}
	queued := &gpurent.Operation{InstanceID: other.ID, AccountID: acc.ID, Kind: gpurent.OpStart,
		Step: gpurent.StepQueued, ToTypeID: "rtx4090-24g", ToCount: 1}
	must(t, s.CreateOperation(ctx, queued), "create queued start")
	if queued.CreatedAt.IsZero() || queued.CreatedAt.Location() != time.UTC || queued.FinishedAt != nil {
		t.Fatalf("queued start as stored: %+v", queued)
	}
	got, err = s.ActiveOperation(ctx, other.ID)
	must(t, err, "active queued start")
	same(t, "queued start round trip", *got, *queued)

	_, err = s.OperationByID(ctx, "op-missing")
	wantCode(t, err, gpurent.CodeNotFound, "missing operation")
	_, err = s.OperationByIdempotencyKey(ctx, acc.ID, "k-unused")
	wantCode(t, err, gpurent.CodeNotFound, "unused idempotency key")
	_, err = s.OperationByIdempotencyKey(ctx, acc.ID, "")
	wantCode(t, err, gpurent.CodeNotFound, "empty idempotency key")
	_, err = s.ActiveOperation(ctx, SeedInstance(t, s, acc.ID, "idle").ID)
	wantCode(t, err, gpurent.CodeNotFound, "instance without an operation")
	wantCode(t, s.CreateOperation(ctx, &gpurent.Operation{ID: op.ID, InstanceID: SeedInstance(t, s, acc.ID, "x").ID,
		AccountID: acc.ID, Kind: gpurent.OpMigrate, Step: gpurent.StepCopying}), gpurent.CodeConflict, "same operation id")
}

func testOperationOneActive(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "op-one@example.com")
	in := SeedInstance(t, s, acc.ID, "one")
	first := newOperation(in, "")
	must(t, s.CreateOperation(ctx, first), "first operation")
	second := &gpurent.Operation{InstanceID: in.ID, AccountID: acc.ID, Kind: gpurent.OpMigrate,
		Step: gpurent.StepCopying, ToHostID: "host-c"}
	err := s.CreateOperation(ctx, second)
	wantCode(t, err, gpurent.CodeConflict, "second unfinished operation of one instance")
	if msg := gpurent.ErrorMessage(err); !strings.Contains(msg, "in progress") {
		t.Fatalf("conflict message %q does not say an operation is in progress", msg)
	}
	list, err := s.ListOperations(ctx, gpurent.OperationFilter{InstanceID: in.ID})
	must(t, err, "list")
	if len(list) != 1 || list[0].ID != first.ID {
		t.Fatalf("a refused create wrote: %+v", list)
	}
	// Finished history does not count.
	must(t, s.CreateOperation(ctx, &gpurent.Operation{InstanceID: in.ID, AccountID: acc.ID, Kind: gpurent.OpMigrate,
		Step: gpurent.StepDone}), "a finished operation beside an active one")

	first.Step = gpurent.StepDone
	fin := at(30)
	first.FinishedAt, first.UpdatedAt = &fin, at(30)
	must(t, s.UpdateOperation(ctx, first), "finish the first")
	_, err = s.ActiveOperation(ctx, in.ID)
	wantCode(t, err, gpurent.CodeNotFound, "active operation after finishing")
	second.ID = "" // the refused create had given it one
	must(t, s.CreateOperation(ctx, second), "new operation once the first finished")
	got, err := s.ActiveOperation(ctx, in.ID)
	must(t, err, "active operation")
	if got.ID != second.ID {
		t.Fatalf("active operation %s, want %s", got.ID, second.ID)
	}
	// Reopening the finished one would make two active: refused.
	first.Step, first.FinishedAt = gpurent.StepCleanup, nil
	wantCode(t, s.UpdateOperation(ctx, first), gpurent.CodeConflict, "reopen beside an active operation")
	if first.Version != 2 {
		t.Fatalf("a refused update changed the caller's version to %d", first.Version)
	}
	got, err = s.OperationByID(ctx, first.ID)
	must(t, err, "read the first")
	if got.Step != gpurent.StepDone || got.FinishedAt == nil || got.Version != 2 {
		t.Fatalf("a refused reopen wrote: %+v", got)
	}
}

func testOperationIdempotency(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "op-idem@example.com")
	other := SeedAccount(t, s, "op-idem2@example.com")
	a := SeedInstance(t, s, acc.ID, "a")
	b := SeedInstance(t, s, acc.ID, "b")
	c := SeedInstance(t, s, other.ID, "c")
	op := newOperation(a, "same-key")
	must(t, s.CreateOperation(ctx, op), "create with key")
	err := s.CreateOperation(ctx, newOperation(b, "same-key"))
	wantCode(t, err, gpurent.CodeConflict, "same key, same account, other instance")
	if msg := gpurent.ErrorMessage(err); !strings.Contains(msg, "idempotency key") {
		t.Fatalf("conflict message %q does not name the idempotency key", msg)
	}
	if _, err := s.ActiveOperation(ctx, b.ID); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Fatalf("a refused create left an operation on b: %v", err)
	}
	// A finished operation keeps its key.
	op.Step = gpurent.StepDone
	must(t, s.UpdateOperation(ctx, op), "finish")
	wantCode(t, s.CreateOperation(ctx, newOperation(b, "same-key")), gpurent.CodeConflict, "key of a finished operation")

	theirs := newOperation(c, "same-key")
	must(t, s.CreateOperation(ctx, theirs), "same key, other account")
	got, err := s.OperationByIdempotencyKey(ctx, other.ID, "same-key")
	must(t, err, "other account's key")
	if got.ID != theirs.ID {
		t.Fatalf("other account's key found %s, want %s", got.ID, theirs.ID)
	}
	got, err = s.OperationByIdempotencyKey(ctx, acc.ID, "same-key")
	must(t, err, "first account's key")
	if got.ID != op.ID {
		t.Fatalf("first account's key found %s, want %s", got.ID, op.ID)
	}
	// Without a key, any number may exist.
	must(t, s.CreateOperation(ctx, newOperation(b, "")), "no key")
	d := SeedInstance(t, s, acc.ID, "d")
	must(t, s.CreateOperation(ctx, newOperation(d, "")), "no key again")
}

func testOperationUpdate(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "op-upd@example.com")
	in := SeedInstance(t, s, acc.ID, "u")
	op := newOperation(in, "k-upd")
	must(t, s.CreateOperation(ctx, op), "create")
	created := *op
	stale := *op

	upd := *op
	upd.Step, upd.FromAllocationID, upd.FromHostID = gpurent.StepFinal, "alloc-from2", "host-a2"
	upd.ToAllocationID, upd.ToHostID, upd.ToTypeID = "alloc-to2", "host-b2", "a100-80g-sxm"
	upd.ToCount, upd.ToCPUMilli, upd.ToMemoryMiB, upd.ToZoneID = 4, 64000, 1<<19, "cd-b"
	upd.WasRunning, upd.Token, upd.Passes, upd.BytesMoved = false, "grant-2", 3, 6<<40
	upd.Message, upd.StepDeadline, upd.UpdatedAt = "final delta", at(900), at(40)
	// Fields UpdateOperation does not write.
	upd.AccountID, upd.Kind, upd.IdempotencyKey, upd.RequestHash, upd.CreatedAt =
		"acc-other", gpurent.OpMigrate, "k-other", "rh-other", at(99)
	must(t, s.UpdateOperation(ctx, &upd), "update")
	if upd.Version != 2 {
		t.Fatalf("version after update %d, want 2", upd.Version)
	}
	got, err := s.OperationByID(ctx, op.ID)
	must(t, err, "read back")
	want := upd
	want.AccountID, want.Kind, want.IdempotencyKey, want.RequestHash, want.CreatedAt =
		created.AccountID, created.Kind, created.IdempotencyKey, created.RequestHash, created.CreatedAt
	want.StepDeadline = at(900).UTC().Truncate(time.Microsecond)
	want.UpdatedAt = at(40).UTC().Truncate(time.Microsecond)
	same(t, "updated operation", *got, want)

	stale.Step = gpurent.StepRollingBack
	wantCode(t, s.UpdateOperation(ctx, &stale), gpurent.CodeConflict, "stale version")
	if stale.Version != 1 {
		t.Fatalf("a refused update changed the caller's version to %d", stale.Version)
	}
	got, err = s.OperationByID(ctx, op.ID)
	must(t, err, "read back after stale update")
	same(t, "operation after a stale update", *got, want)

	// A zero UpdatedAt is now; a zero deadline clears it; a finished step
	// without FinishedAt is finished at the update time.
	cur := *got
	cur.UpdatedAt, cur.StepDeadline, cur.Step = time.Time{}, time.Time{}, gpurent.StepDone
	before := time.Now().Add(-time.Second)
	must(t, s.UpdateOperation(ctx, &cur), "finish without a time")
	if cur.UpdatedAt.Before(before) || cur.UpdatedAt.Location() != time.UTC {
		t.Fatalf("UpdatedAt %v, want now in UTC", cur.UpdatedAt)
	}
	if cur.FinishedAt == nil || !cur.FinishedAt.Equal(cur.UpdatedAt) || cur.Version != 3 {
		t.Fatalf("finished operation as stored: finished %v updated %v version %d", cur.FinishedAt, cur.UpdatedAt, cur.Version)
	}
	got, err = s.OperationByID(ctx, op.ID)
	must(t, err, "read finished")
	same(t, "finished operation", *got, cur)

	missing := cur
	missing.ID = "op-missing"
	wantCode(t, s.UpdateOperation(ctx, &missing), gpurent.CodeNotFound, "update missing operation")
}

func testOperationValidation(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "op-val@example.com")
	in := SeedInstance(t, s, acc.ID, "v")
	bad := func(what string, edit func(op *gpurent.Operation)) {
		t.Helper()
		op := newOperation(in, "")
		edit(op)
		wantCode(t, s.CreateOperation(ctx, op), gpurent.CodeInvalid, what)
	}
	bad("no instance", func(op *gpurent.Operation) { op.InstanceID = "" })
	bad("no account", func(op *gpurent.Operation) { op.AccountID = "" })
	bad("missing instance", func(op *gpurent.Operation) { op.InstanceID = "i-missing" })
	bad("unknown kind", func(op *gpurent.Operation) { op.Kind = "teleport" })
	bad("empty step", func(op *gpurent.Operation) { op.Step = "" })
	bad("unknown step", func(op *gpurent.Operation) { op.Step = "halfway" })
	bad("active step with a finish time", func(op *gpurent.Operation) { fin := at(9); op.FinishedAt = &fin })
	bad("negative count", func(op *gpurent.Operation) { op.ToCount = -1 })
	if _, err := s.ActiveOperation(ctx, in.ID); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Fatalf("an invalid create wrote an operation: %v", err)
	}

	op := newOperation(in, "")
	must(t, s.CreateOperation(ctx, op), "valid create")
	upd := *op
	fin := at(9)
	upd.FinishedAt = &fin
	wantCode(t, s.UpdateOperation(ctx, &upd), gpurent.CodeInvalid, "update: active step with a finish time")
	if upd.FinishedAt != &fin || upd.Version != op.Version {
		t.Fatalf("a refused update changed the caller's operation: %+v", upd)
	}
	upd = *op
	upd.Step = "sideways"
	wantCode(t, s.UpdateOperation(ctx, &upd), gpurent.CodeInvalid, "update: unknown step")
	got, err := s.OperationByID(ctx, op.ID)
	must(t, err, "read back")
	same(t, "operation after refused updates", *got, *op)
}

func testOperationList(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "op-list@example.com")
	mk := func(name string, created int, from, to string, step gpurent.OperationStep) gpurent.Operation {
		t.Helper()
		in := SeedInstance(t, s, acc.ID, name)
		op := &gpurent.Operation{InstanceID: in.ID, AccountID: acc.ID, Kind: gpurent.OpMigrate, Step: step,
			FromHostID: from, ToHostID: to, CreatedAt: at(created)}
		must(t, s.CreateOperation(ctx, op), "create "+name)
		return *op
	}
	// Inserted out of time order; o3 and o4 share a creation time.
	o1 := mk("o1", 1, "h1", "h2", gpurent.StepCopying)
	o3 := mk("o3", 3, "h2", "h3", gpurent.StepDone)
	o2 := mk("o2", 2, "h3", "h1", gpurent.StepDone)
	o4 := mk("o4", 3, "h3", "h3", gpurent.StepStarting)
	o5 := mk("o5", 5, "", "h1", gpurent.StepQueued)
	o6 := mk("o6", 4, "h2", "h2", gpurent.StepCopying)
	// A second, finished operation of o1's instance, newest of all.
	o7 := gpurent.Operation{InstanceID: o1.InstanceID, AccountID: acc.ID, Kind: gpurent.OpUpgrade,
		Step: gpurent.StepRolledBack, FromHostID: "h0", ToHostID: "h4", CreatedAt: at(9)}
	must(t, s.CreateOperation(ctx, &o7), "create o7")

	names := map[string]string{}
	for name, op := range map[string]gpurent.Operation{"o1": o1, "o2": o2, "o3": o3, "o4": o4, "o5": o5, "o6": o6, "o7": o7} {
		names[op.ID] = name
	}
	ids := func(list []gpurent.Operation) string {
		out := make([]string, len(list))
		for i, op := range list {
			out[i] = names[op.ID]
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		name string
		f    gpurent.OperationFilter
		want []gpurent.Operation
	}{
		{"all, newest first, ties newest inserted first", gpurent.OperationFilter{}, []gpurent.Operation{o7, o5, o6, o4, o3, o2, o1}},
		{"host as source or target", gpurent.OperationFilter{HostID: "h1"}, []gpurent.Operation{o5, o2, o1}},
		{"host only as source", gpurent.OperationFilter{HostID: "h0"}, []gpurent.Operation{o7}},
		{"host only as target", gpurent.OperationFilter{HostID: "h4"}, []gpurent.Operation{o7}},
		{"host on both sides, once", gpurent.OperationFilter{HostID: "h3"}, []gpurent.Operation{o4, o3, o2}},
		{"active only", gpurent.OperationFilter{ActiveOnly: true}, []gpurent.Operation{o5, o6, o4, o1}},
		{"active on a host", gpurent.OperationFilter{HostID: "h1", ActiveOnly: true}, []gpurent.Operation{o5, o1}},
		{"active on a host, both sides", gpurent.OperationFilter{HostID: "h3", ActiveOnly: true}, []gpurent.Operation{o4}},
		{"active on a host as target and as source", gpurent.OperationFilter{HostID: "h2", ActiveOnly: true}, []gpurent.Operation{o6, o1}},
		{"step", gpurent.OperationFilter{Step: gpurent.StepDone}, []gpurent.Operation{o3, o2}},
		{"active step", gpurent.OperationFilter{Step: gpurent.StepCopying}, []gpurent.Operation{o6, o1}},
		{"finished step, active only", gpurent.OperationFilter{Step: gpurent.StepDone, ActiveOnly: true}, nil},
		{"instance", gpurent.OperationFilter{InstanceID: o1.InstanceID}, []gpurent.Operation{o7, o1}},
		{"instance, active only", gpurent.OperationFilter{InstanceID: o1.InstanceID, ActiveOnly: true}, []gpurent.Operation{o1}},
		{"instance and host", gpurent.OperationFilter{InstanceID: o1.InstanceID, HostID: "h4"}, []gpurent.Operation{o7}},
		{"unknown host", gpurent.OperationFilter{HostID: "h9"}, nil},
	} {
		got, err := s.ListOperations(ctx, c.f)
		must(t, err, "list "+c.name)
		if ids(got) != ids(c.want) {
			t.Fatalf("%s:\n got  %s\n want %s", c.name, ids(got), ids(c.want))
		}
		if len(c.want) > 0 {
			same(t, c.name+": full rows", got, c.want)
		}
	}

	// An operation moves out of the active lists when it finishes.
	o1.Step = gpurent.StepRolledBack
	must(t, s.UpdateOperation(ctx, &o1), "roll back o1")
	got, err := s.ListOperations(ctx, gpurent.OperationFilter{HostID: "h1", ActiveOnly: true})
	must(t, err, "active on h1 after rollback")
	if ids(got) != ids([]gpurent.Operation{o5}) {
		t.Fatalf("active on h1 after rollback: %s", ids(got))
	}
}

// testOperationConflictInTx: a refused create inside a transaction leaves
// the transaction usable (PostgreSQL aborts a transaction on a raw unique
// violation), so the caller can read what is in the way and go on.
func testOperationConflictInTx(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "op-tx@example.com")
	in := SeedInstance(t, s, acc.ID, "tx")
	first := newOperation(in, "k-tx")
	must(t, s.CreateOperation(ctx, first), "first")
	err := s.InTx(ctx, func(q gpurent.Queries) error {
		err := q.CreateOperation(ctx, newOperation(in, "k-tx2"))
		if !gpurent.IsCode(err, gpurent.CodeConflict) {
			return fmt.Errorf("second active: got %v, want a conflict", err)
		}
		err = q.CreateOperation(ctx, newOperation(SeedInstance(t, q, acc.ID, "tx2"), "k-tx"))
		if !gpurent.IsCode(err, gpurent.CodeConflict) {
			return fmt.Errorf("reused key: got %v, want a conflict", err)
		}
		cur, err := q.ActiveOperation(ctx, in.ID)
		if err != nil {
			return fmt.Errorf("read after the conflicts: %w", err)
		}
		cur.Message = "seen in tx"
		return q.UpdateOperation(ctx, cur)
	})
	must(t, err, "transaction with refused creates")
	got, err := s.OperationByID(ctx, first.ID)
	must(t, err, "read back")
	if got.Message != "seen in tx" || got.Version != 2 {
		t.Fatalf("update after refused creates in a transaction: %+v", got)
	}
}

func testUpdateInstanceResources(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "op-inst@example.com")
	in := SeedInstance(t, s, acc.ID, "r")
	upd := *in
	upd.TypeID, upd.GPUCount, upd.CPUMilli, upd.MemoryMiB = "rtx4090-24g", 4, 48000, 256*1024
	upd.HostID, upd.VolumeID, upd.UpdatedAt = "host-b", "vol-b", at(20)
	must(t, s.UpdateInstance(ctx, &upd), "upgrade the instance's resources")
	got, err := s.InstanceByID(ctx, in.ID)
	must(t, err, "read back")
	want := *in
	want.TypeID, want.GPUCount, want.CPUMilli, want.MemoryMiB = "rtx4090-24g", 4, 48000, 256*1024
	want.HostID, want.VolumeID = "host-b", "vol-b"
	want.UpdatedAt, want.Version = at(20).UTC().Truncate(time.Microsecond), in.Version+1
	same(t, "instance after an upgrade", *got, want)

	// No-GPU mode and back.
	upd.TypeID, upd.GPUCount, upd.CPUMilli, upd.MemoryMiB = "", 0, 2000, 4096
	must(t, s.UpdateInstance(ctx, &upd), "to no-GPU mode")
	got, err = s.InstanceByID(ctx, in.ID)
	must(t, err, "read back no-GPU")
	if got.TypeID != "" || got.GPUCount != 0 || got.CPUMilli != 2000 || got.MemoryMiB != 4096 {
		t.Fatalf("instance in no-GPU mode: %+v", got)
	}
	neg := *got
	neg.GPUCount = -1
	wantCode(t, s.UpdateInstance(ctx, &neg), gpurent.CodeInvalid, "negative GPU count")
}

func testSetVolumeHost(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "op-vol@example.com")
	v := &gpurent.Volume{InstanceID: "i-1", AccountID: acc.ID, HostID: "host-a", SizeGiB: 100, Name: "vol-1", CreatedAt: at(1)}
	must(t, s.CreateVolume(ctx, v), "create volume")
	w := &gpurent.Volume{InstanceID: "i-2", AccountID: acc.ID, HostID: "host-a", SizeGiB: 50, Name: "vol-2", CreatedAt: at(2)}
	must(t, s.CreateVolume(ctx, w), "create another volume")
	must(t, s.SetVolumeHost(ctx, v.ID, "host-b"), "move volume")
	must(t, s.SetVolumeHost(ctx, v.ID, "host-b"), "move volume to where it is")
	got, err := s.VolumeByID(ctx, v.ID)
	must(t, err, "read volume")
	want := *v
	want.HostID = "host-b"
	same(t, "moved volume", *got, want)
	got, err = s.VolumeByID(ctx, w.ID)
	must(t, err, "read other volume")
	same(t, "other volume", *got, *w)
	wantCode(t, s.SetVolumeHost(ctx, "vol-missing", "host-b"), gpurent.CodeNotFound, "unknown volume")
	wantCode(t, s.SetVolumeHost(ctx, v.ID, ""), gpurent.CodeInvalid, "empty host")
}
