package move

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/sched"
)

// target is what an operation moves an instance to.
type target struct {
	kind      gpurent.OperationKind
	typeID    string
	count     int
	cpuMilli  int64
	memoryMiB int64
	bf16      float64
	zoneID    string
	hostID    string // a named target host (operators' migrate)
	// sameHostFirst places on the instance's host when it fits there (the
	// file system is carried, not copied): upgrades and GPU-level failovers.
	sameHostFirst bool
}

// hash identifies an operation request for its idempotency key.
func (t target) hash(extra string) string {
	b, _ := json.Marshal([]any{t.kind, t.typeID, t.count, t.zoneID, t.hostID, extra})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// shape sizes count GPUs of typeID as an instance gets them.
func (s *Service) shape(ctx context.Context, typeID string, count int) (target, *gpurent.GPUType, error) {
	sh, gt, err := s.lc.Shape(ctx, typeID, count)
	if err != nil {
		return target{}, nil, err
	}
	return target{typeID: sh.TypeID, count: sh.Count, cpuMilli: sh.CPUMilli, memoryMiB: sh.MemoryMiB, bf16: sh.BF16TFLOPS}, gt, nil
}

// upgradeTarget validates an upgrade request against the instance.
func (s *Service) upgradeTarget(ctx context.Context, in *gpurent.Instance, r rental.UpgradeRequest) (target, *gpurent.GPUType, error) {
	typeID, count := strings.TrimSpace(r.TypeID), in.GPUCount
	if typeID == "" {
		typeID = in.TypeID
	}
	if r.Count != nil {
		count = *r.Count
	}
	t, gt, err := s.shape(ctx, typeID, count)
	if err != nil {
		return target{}, nil, err
	}
	if t.typeID == in.TypeID && t.count == in.GPUCount {
		return target{}, nil, gpurent.Errorf(gpurent.CodeInvalid, "instance %s already has %s; name another GPU type or count", in.ID, describeShape(t.typeID, t.count))
	}
	if in.Plan != gpurent.PlanHourly {
		return target{}, nil, gpurent.Errorf(gpurent.CodeInvalid,
			"instance %s is on the %s package, which is paid for its GPU type: upgrades are billed by the second, so switch it to the hourly plan first (`gpurent plan %s --to hourly`, effective at the end of the paid period)",
			in.ID, in.Plan, in.ID)
	}
	t.kind, t.zoneID, t.sameHostFirst = gpurent.OpUpgrade, strings.TrimSpace(r.ZoneID), true
	return t, gt, nil
}

func describeShape(typeID string, count int) string {
	if count == 0 {
		return "no GPU (no-GPU mode)"
	}
	return fmt.Sprintf("%d x %s", count, typeID)
}

// PlanUpgrade says what Upgrade would do now, without claiming anything.
func (s *Service) PlanUpgrade(ctx context.Context, acc *gpurent.Account, id string, r rental.UpgradeRequest) (*rental.UpgradePlan, error) {
	in, err := s.lc.Owned(ctx, acc, id)
	if err != nil {
		return nil, err
	}
	t, _, err := s.upgradeTarget(ctx, in, r)
	if err != nil {
		return nil, err
	}
	from, _, err := s.shape(ctx, in.TypeID, in.GPUCount)
	if err != nil {
		return nil, err
	}
	p := &rental.UpgradePlan{InstanceID: in.ID,
		From: rental.Shape{TypeID: in.TypeID, Count: in.GPUCount, CPUMilli: in.CPUMilli, MemoryMiB: in.MemoryMiB, BF16TFLOPS: from.bf16},
		To:   rental.Shape{TypeID: t.typeID, Count: t.count, CPUMilli: t.cpuMilli, MemoryMiB: t.memoryMiB, BF16TFLOPS: t.bf16},
	}
	if in.State != gpurent.StateRunning {
		// A stopped instance only changes what it starts with.
		p.SameHost, p.Available, p.HostID, p.HostName = true, true, in.HostID, s.lc.HostName(in.HostID)
		p.Reason = "the instance is " + string(in.State) + ": it gets the new GPUs when it starts"
		return p, nil
	}
	req := t.request()
	req.HostID = in.HostID
	if _, err := s.lc.Peek(ctx, req); err == nil {
		p.SameHost, p.Available, p.HostID, p.HostName = true, true, in.HostID, s.lc.HostName(in.HostID)
		return p, nil
	}
	req.HostID, req.ExcludeHostID, req.ZoneID = "", in.HostID, t.zoneID
	pl, err := s.lc.Peek(ctx, req)
	if err != nil {
		p.Reason = gpurent.ErrorMessage(err)
		return p, nil
	}
	p.Available, p.HostID, p.HostName = true, pl.HostID, s.lc.HostName(pl.HostID)
	return p, nil
}

// request is the scheduler request for t.
func (t target) request() sched.Request {
	return sched.Request{TypeID: t.typeID, Count: t.count, ZoneID: t.zoneID, CPUMilli: t.cpuMilli, MemoryMiB: t.memoryMiB}
}

// Upgrade moves the instance to other GPUs: the target is claimed first,
// then the instance switches (same host: its file system carried; another
// host: copied while it runs, then a short stop and a final delta) and is
// billed at the new price from the instant the new container starts. A
// stopped hourly instance just changes what it will start with. created is
// false when an earlier request with the same key made the operation.
func (s *Service) Upgrade(ctx context.Context, acc *gpurent.Account, id string, r rental.UpgradeRequest) (d *rental.OperationDetail, created bool, err error) {
	in, err := s.lc.Owned(ctx, acc, id)
	if err != nil {
		return nil, false, err
	}
	t, gt, err := s.upgradeTarget(ctx, in, r)
	if err != nil {
		return nil, false, err
	}
	return s.begin(ctx, acc, in, t, gt, r.IdempotencyKey, "")
}

// Migrate moves the instance, same GPU type and count, to another host.
func (s *Service) Migrate(ctx context.Context, acc *gpurent.Account, id string, r rental.MigrateRequest) (d *rental.OperationDetail, created bool, err error) {
	in, err := s.lc.Owned(ctx, acc, id)
	if err != nil {
		return nil, false, err
	}
	r.HostID, r.ZoneID = strings.TrimSpace(r.HostID), strings.TrimSpace(r.ZoneID)
	if r.HostID != "" && acc.Role != gpurent.RoleOperator {
		return nil, false, gpurent.Errorf(gpurent.CodeForbidden, "only operators name the host to migrate to; customers may name a zone")
	}
	if r.HostID != "" && r.HostID == in.HostID {
		return nil, false, gpurent.Errorf(gpurent.CodeInvalid, "instance %s is on host %s already", in.ID, r.HostID)
	}
	t, gt, err := s.shape(ctx, in.TypeID, in.GPUCount)
	if err != nil {
		return nil, false, err
	}
	t.kind, t.zoneID, t.hostID = gpurent.OpMigrate, r.ZoneID, r.HostID
	return s.begin(ctx, acc, in, t, gt, r.IdempotencyKey, "")
}

// begin answers a repeated key, checks funds, then claims the target.
func (s *Service) begin(ctx context.Context, acc *gpurent.Account, in *gpurent.Instance, t target, gt *gpurent.GPUType, key, extra string) (*rental.OperationDetail, bool, error) {
	hash := t.hash(in.ID + extra)
	if key != "" {
		defer s.keys.Lock(acc.ID + "\x00op\x00" + key)()
		if d, err := s.opByKey(ctx, acc, key, hash); d != nil || err != nil {
			return d, false, err
		}
	}
	if err := s.lc.CheckHourFunds(ctx, acc, in.ID, gt, t.count); err != nil {
		return nil, false, err
	}
	switch in.State {
	case gpurent.StateRunning:
	case gpurent.StateStopped, gpurent.StateFailed:
		if t.kind == gpurent.OpUpgrade && in.AllocationID == "" {
			return s.resizeStopped(ctx, acc, in.ID, t, key, hash)
		}
		if t.kind == gpurent.OpMigrate {
			return nil, false, gpurent.Errorf(gpurent.CodeConflict,
				"instance %s is %s: start it on another host with `gpurent start %s --move` instead", in.ID, in.State, in.ID)
		}
		return nil, false, gpurent.Errorf(gpurent.CodeConflict, "instance %s is %s and holds its GPUs; start it first", in.ID, in.State)
	default:
		return nil, false, gpurent.Errorf(gpurent.CodeConflict, "instance %s is %s; it can be moved once it runs", in.ID, in.State)
	}
	if op, err := s.store.ActiveOperation(ctx, in.ID); err == nil {
		return nil, false, gpurent.Errorf(gpurent.CodeConflict, "instance %s has an operation in progress (%s %s, %s)", in.ID, op.Kind, op.ID, op.Step)
	} else if !gpurent.IsCode(err, gpurent.CodeNotFound) {
		return nil, false, err
	}
	for attempt := 0; attempt < claimAttempts; attempt++ {
		p, res, err := s.placeTarget(ctx, in, t)
		if err != nil {
			return nil, false, err
		}
		d, err := s.claimTarget(ctx, acc, in.ID, t, p, true, key, hash)
		res.Done(err == nil)
		switch {
		case err == nil:
			return d, true, nil
		case errors.Is(err, errGPUTaken):
			s.lc.Invalidate()
		case errors.Is(err, errKeyTaken):
			d, err := s.opByKey(ctx, acc, key, hash)
			if d == nil && err == nil {
				err = gpurent.Errorf(gpurent.CodeConflict, "a request with this idempotency key is in progress")
			}
			return d, false, err
		default:
			return nil, false, err
		}
	}
	return nil, false, gpurent.Errorf(gpurent.CodeUnavailable, "the free GPUs were taken by concurrent requests; try again")
}

// placeTarget plans the target: on the instance's host when it fits there
// and t.sameHostFirst (the file system is carried on the host), else on
// another host whose runtime can receive the instance's data.
func (s *Service) placeTarget(ctx context.Context, in *gpurent.Instance, t target) (sched.Placement, *rental.Reservation, error) {
	req := t.request()
	if t.sameHostFirst {
		same := req
		same.HostID, same.ZoneID = in.HostID, ""
		if p, res, err := s.lc.Reserve(ctx, same); err == nil {
			return p, res, nil
		} else if !gpurent.IsCode(err, gpurent.CodeUnavailable) {
			return sched.Placement{}, nil, err
		}
	}
	req.HostID, req.ExcludeHostID = t.hostID, in.HostID
	p, res, err := s.lc.Reserve(ctx, req)
	if err != nil {
		if gpurent.IsCode(err, gpurent.CodeUnavailable) {
			return sched.Placement{}, nil, gpurent.Errorf(gpurent.CodeUnavailable,
				"no host can take %s now: %s", describeShape(t.typeID, t.count), gpurent.ErrorMessage(err))
		}
		return sched.Placement{}, nil, err
	}
	if err := s.canMove(ctx, in.HostID, p.HostID); err != nil {
		res.Done(false)
		return sched.Placement{}, nil, err
	}
	return p, res, nil
}

// canMove checks that the instance's data can go from one host to another:
// both run containers (the process runtime keeps no container file system)
// and the target's agent said where it takes copies.
func (s *Service) canMove(ctx context.Context, fromID, toID string) error {
	from, err := s.store.HostByID(ctx, fromID)
	if err != nil {
		return err
	}
	to, err := s.store.HostByID(ctx, toID)
	if err != nil {
		return err
	}
	switch {
	case from.Runtime != "docker" || to.Runtime != "docker":
		return gpurent.Errorf(gpurent.CodeUnavailable,
			"moving an instance between hosts needs the docker runtime on both (host %s runs %s, host %s runs %s)",
			from.Name, from.Runtime, to.Name, to.Runtime)
	case to.AccessAddr == "" || to.AccessHostKey == "":
		return gpurent.Errorf(gpurent.CodeUnavailable, "host %s has not said where it receives copies (its agent runs no access server)", to.Name)
	}
	return nil
}

// claimTarget claims p for the instance and records the operation, in one
// transaction: the database's one-open-allocation-per-GPU rule decides
// races, and nothing the instance holds is released yet.
func (s *Service) claimTarget(ctx context.Context, acc *gpurent.Account, id string, t target, p sched.Placement, wantRunning bool, key, hash string) (*rental.OperationDetail, error) {
	var op *gpurent.Operation
	in, err := s.lc.Apply(ctx, acc, id, func(q gpurent.Queries, in *gpurent.Instance, now time.Time) (*gpurent.Event, error) {
		if wantRunning && in.State != gpurent.StateRunning {
			return nil, gpurent.Errorf(gpurent.CodeConflict, "instance %s is %s now; try again once it runs", in.ID, in.State)
		}
		o, err := s.newOperation(ctx, q, in, t, p, key, hash, in.State == gpurent.StateRunning, now)
		if err != nil {
			return nil, err
		}
		op = o
		return s.claimedEvent(in, o, now), nil
	})
	if err != nil {
		return nil, err
	}
	s.afterOperationChange(op)
	return &rental.OperationDetail{Operation: *op, Instance: *in}, nil
}

// newOperation claims the target allocation and writes the operation
// record; the instance's reason says what goes on. wasRunning: the
// instance runs (a rollback starts it again on what it had).
func (s *Service) newOperation(ctx context.Context, q gpurent.Queries, in *gpurent.Instance, t target, p sched.Placement, key, hash string,
	wasRunning bool, now time.Time) (*gpurent.Operation, error) {
	from, err := q.OpenAllocation(ctx, in.ID)
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		from = nil
	} else if err != nil {
		return nil, err
	}
	a := &gpurent.Allocation{ID: gpurent.NewID(gpurent.PrefixAllocation), InstanceID: in.ID,
		HostID: p.HostID, GPUIDs: p.GPUIDs, StartedAt: now, StartReason: string(t.kind)}
	if err := q.CreateAllocation(ctx, a); err != nil {
		if gpurent.IsCode(err, gpurent.CodeConflict) {
			return nil, errGPUTaken
		}
		return nil, err
	}
	op := &gpurent.Operation{ID: gpurent.NewID(gpurent.PrefixOperation), InstanceID: in.ID, AccountID: in.AccountID,
		Kind: t.kind, FromHostID: in.HostID, ToAllocationID: a.ID, ToHostID: p.HostID,
		ToTypeID: t.typeID, ToCount: t.count, ToCPUMilli: t.cpuMilli, ToMemoryMiB: t.memoryMiB, ToZoneID: t.zoneID,
		WasRunning: wasRunning, IdempotencyKey: key, RequestHash: hash,
		CreatedAt: now, UpdatedAt: now}
	if from != nil {
		op.FromAllocationID = from.ID
	}
	switch {
	case !op.CrossHost():
		op.Step, op.StepDeadline = gpurent.StepStarting, now.Add(s.cfg.StartTimeout)
	case op.WasRunning:
		op.Step, op.StepDeadline = gpurent.StepCopying, now.Add(s.cfg.StallTimeout)
		op.Token = newToken()
	default: // stopped: one copy, no pre-copy
		op.Step, op.StepDeadline = gpurent.StepFinal, now.Add(s.cfg.StallTimeout)
		op.Token = newToken()
	}
	if err := q.CreateOperation(ctx, op); err != nil {
		if gpurent.IsCode(err, gpurent.CodeConflict) {
			if key != "" {
				if _, kerr := q.OperationByIdempotencyKey(ctx, in.AccountID, key); kerr == nil {
					return nil, errKeyTaken
				}
			}
			return nil, gpurent.Errorf(gpurent.CodeConflict, "instance %s has an operation in progress", in.ID)
		}
		return nil, err
	}
	in.StateReason = fmt.Sprintf("%s in progress (%s)", op.Kind, op.ID)
	if op.Kind == gpurent.OpStart {
		in.State = gpurent.StateProvisioning
	}
	if _, err := q.BumpHostGeneration(ctx, p.HostID); err != nil {
		return nil, err
	}
	return op, nil
}

// claimedEvent says what an operation claimed and what comes next.
func (s *Service) claimedEvent(in *gpurent.Instance, op *gpurent.Operation, now time.Time) *gpurent.Event {
	where := "on the same host: its file system is carried to a new container"
	if op.CrossHost() {
		where = "on host " + s.lc.HostName(op.ToHostID) + ": the volume and file system are copied"
		if op.WasRunning {
			where += " while it runs, then it stops briefly for the last changes"
		}
	}
	return rental.NewEvent(in.ID, now, string(op.Kind)+"_started", "%s %s: claimed %s %s (operation %s)",
		op.Kind, in.ID, describeShape(op.ToTypeID, op.ToCount), where, op.ID)
}

// afterOperationChange wakes both hosts' agents and refreshes the snapshot.
func (s *Service) afterOperationChange(op *gpurent.Operation) {
	s.lc.Invalidate()
	for _, h := range []string{op.FromHostID, op.ToHostID} {
		if h != "" {
			s.lc.Wake(h)
		}
	}
}

func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on Linux
	return hex.EncodeToString(b)
}

// claimAttempts bounds how often a request re-plans after losing a race.
const claimAttempts = 8

var (
	errGPUTaken = errors.New("gpu taken")
	errKeyTaken = errors.New("idempotency key taken")
)

// TokenHash is what the target agent is told of a grant's token.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// resizeStopped changes what a stopped hourly instance (it holds no GPUs)
// will start with; the operation is done at once.
func (s *Service) resizeStopped(ctx context.Context, acc *gpurent.Account, id string, t target, key, hash string) (*rental.OperationDetail, bool, error) {
	var op *gpurent.Operation
	in, err := s.lc.Apply(ctx, acc, id, func(q gpurent.Queries, in *gpurent.Instance, now time.Time) (*gpurent.Event, error) {
		if (in.State != gpurent.StateStopped && in.State != gpurent.StateFailed) || in.AllocationID != "" {
			return nil, gpurent.Errorf(gpurent.CodeConflict, "instance %s is %s now; try again", in.ID, in.State)
		}
		from := describeShape(in.TypeID, in.GPUCount)
		fin := now
		op = &gpurent.Operation{ID: gpurent.NewID(gpurent.PrefixOperation), InstanceID: in.ID, AccountID: in.AccountID,
			Kind: t.kind, Step: gpurent.StepDone, FromHostID: in.HostID, ToHostID: in.HostID,
			ToTypeID: t.typeID, ToCount: t.count, ToCPUMilli: t.cpuMilli, ToMemoryMiB: t.memoryMiB, ToZoneID: t.zoneID,
			Message: "the instance was stopped: it gets the new GPUs when it starts", IdempotencyKey: key, RequestHash: hash,
			CreatedAt: now, UpdatedAt: now, FinishedAt: &fin}
		if err := q.CreateOperation(ctx, op); err != nil {
			if gpurent.IsCode(err, gpurent.CodeConflict) && key != "" {
				return nil, errKeyTaken
			}
			return nil, err
		}
		in.TypeID, in.GPUCount, in.CPUMilli, in.MemoryMiB = t.typeID, t.count, t.cpuMilli, t.memoryMiB
		return rental.NewEvent(in.ID, now, "upgraded", "changed from %s to %s while stopped: it gets them when it starts (operation %s)",
			from, describeShape(t.typeID, t.count), op.ID), nil
	})
	if errors.Is(err, errKeyTaken) {
		d, err := s.opByKey(ctx, acc, key, hash)
		return d, false, err
	}
	if err != nil {
		return nil, false, err
	}
	return &rental.OperationDetail{Operation: *op, Instance: *in}, true, nil
}

// opByKey returns the operation an earlier request with this key made.
func (s *Service) opByKey(ctx context.Context, acc *gpurent.Account, key, hash string) (*rental.OperationDetail, error) {
	op, err := s.store.OperationByIdempotencyKey(ctx, acc.ID, key)
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if op.RequestHash != hash {
		return nil, gpurent.Errorf(gpurent.CodeConflict, "idempotency key already used for a different request")
	}
	in, err := s.store.InstanceByID(ctx, op.InstanceID)
	if err != nil {
		return nil, err
	}
	return &rental.OperationDetail{Operation: *op, Instance: *in}, nil
}

// StartWith starts a stopped instance as the lifecycle's Start does and,
// when its host has no free GPU, moves or queues it as o says. op is the
// operation made, if any (moved or queued start).
func (s *Service) StartWith(ctx context.Context, acc *gpurent.Account, id string, o rental.StartOptions) (*rental.Detail, *gpurent.Operation, error) {
	d, err := s.lc.Start(ctx, acc, id)
	if err == nil || (!o.Move && !o.Queue) || !gpurent.IsCode(err, gpurent.CodeConflict) {
		return d, nil, err
	}
	in, ierr := s.lc.Owned(ctx, acc, id)
	if ierr != nil {
		return nil, nil, ierr
	}
	if (in.State != gpurent.StateStopped && in.State != gpurent.StateFailed) || in.AllocationID != "" {
		return nil, nil, err
	}
	if op, aerr := s.store.ActiveOperation(ctx, in.ID); aerr == nil {
		if op.Step == gpurent.StepQueued {
			d, err := s.lc.Detail(ctx, in)
			return d, op, err
		}
		return nil, nil, gpurent.Errorf(gpurent.CodeConflict, "instance %s has an operation in progress (%s %s, %s)", in.ID, op.Kind, op.ID, op.Step)
	} else if !gpurent.IsCode(aerr, gpurent.CodeNotFound) {
		return nil, nil, aerr
	}
	t, _, serr := s.shape(ctx, in.TypeID, in.GPUCount)
	if serr != nil {
		return nil, nil, serr
	}
	t.kind, t.zoneID = gpurent.OpStart, in.ZoneID
	if o.Move {
		for attempt := 0; attempt < claimAttempts; attempt++ {
			p, res, perr := s.placeTarget(ctx, in, t)
			if perr != nil {
				if o.Queue && gpurent.IsCode(perr, gpurent.CodeUnavailable) {
					break
				}
				return nil, nil, perr
			}
			od, cerr := s.claimTarget(ctx, acc, id, t, p, false, "", "")
			res.Done(cerr == nil)
			if errors.Is(cerr, errGPUTaken) {
				s.lc.Invalidate()
				continue
			}
			if cerr != nil {
				return nil, nil, cerr
			}
			d, err := s.lc.Detail(ctx, &od.Instance)
			return d, &od.Operation, err
		}
	}
	return s.enqueue(ctx, acc, id, t, o.Move)
}

// enqueue records a queued start: nothing is claimed until GPUs free up
// (on the instance's host, or anywhere when anywhere is set).
func (s *Service) enqueue(ctx context.Context, acc *gpurent.Account, id string, t target, anywhere bool) (*rental.Detail, *gpurent.Operation, error) {
	var op *gpurent.Operation
	in, err := s.lc.Apply(ctx, acc, id, func(q gpurent.Queries, in *gpurent.Instance, now time.Time) (*gpurent.Event, error) {
		if (in.State != gpurent.StateStopped && in.State != gpurent.StateFailed) || in.AllocationID != "" {
			return nil, gpurent.Errorf(gpurent.CodeConflict, "instance %s is %s now", in.ID, in.State)
		}
		op = &gpurent.Operation{ID: gpurent.NewID(gpurent.PrefixOperation), InstanceID: in.ID, AccountID: in.AccountID,
			Kind: gpurent.OpStart, Step: gpurent.StepQueued, FromHostID: in.HostID,
			ToTypeID: t.typeID, ToCount: t.count, ToCPUMilli: t.cpuMilli, ToMemoryMiB: t.memoryMiB, ToZoneID: t.zoneID,
			CreatedAt: now, UpdatedAt: now}
		where := "on its host " + s.lc.HostName(in.HostID)
		if anywhere {
			where = "on any host (its data is copied there)"
		} else {
			op.ToHostID = in.HostID // host-bound: the data stays
		}
		op.Message = "waiting for " + describeShape(t.typeID, t.count) + " " + where
		if err := q.CreateOperation(ctx, op); err != nil {
			if gpurent.IsCode(err, gpurent.CodeConflict) {
				return nil, gpurent.Errorf(gpurent.CodeConflict, "instance %s has an operation in progress", in.ID)
			}
			return nil, err
		}
		in.StateReason = "queued for start (" + op.ID + ")"
		return rental.NewEvent(in.ID, now, "queued", "queued: it starts by itself when %s frees up %s; you will be notified (operation %s)",
			describeShape(t.typeID, t.count), where, op.ID), nil
	})
	if err != nil {
		return nil, nil, err
	}
	d, err := s.lc.Detail(ctx, in)
	return d, op, err
}

// Operations lists the instance's operations, newest first.
func (s *Service) Operations(ctx context.Context, acc *gpurent.Account, id string) ([]gpurent.Operation, error) {
	in, err := s.lc.Owned(ctx, acc, id)
	if err != nil {
		return nil, err
	}
	return s.store.ListOperations(ctx, gpurent.OperationFilter{InstanceID: in.ID})
}

// CancelQueued cancels the instance's queued start; nothing was claimed.
func (s *Service) CancelQueued(ctx context.Context, acc *gpurent.Account, id string) (*gpurent.Operation, error) {
	var op *gpurent.Operation
	_, err := s.lc.Apply(ctx, acc, id, func(q gpurent.Queries, in *gpurent.Instance, now time.Time) (*gpurent.Event, error) {
		o, err := q.ActiveOperation(ctx, in.ID)
		if gpurent.IsCode(err, gpurent.CodeNotFound) || (err == nil && o.Step != gpurent.StepQueued) {
			return nil, gpurent.Errorf(gpurent.CodeConflict, "instance %s has no queued start", in.ID)
		} else if err != nil {
			return nil, err
		}
		o.Step, o.Message, o.UpdatedAt, o.FinishedAt = gpurent.StepRolledBack, "canceled by the customer", now, &now
		if err := q.UpdateOperation(ctx, o); err != nil {
			return nil, err
		}
		op = o
		in.StateReason = ""
		return rental.NewEvent(in.ID, now, "queue_canceled", "queued start canceled (operation %s)", o.ID), nil
	})
	return op, err
}
