package move

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rental"
)

// Failover moves a running instance off GPUs a platform fault took (the
// system acting, for the health service): to healthy GPUs of the same
// type and count, on the same host unless leaveHost (the host's fault),
// through the same operation as an upgrade. It answers the operation, or
// nil with no error when there is nothing to do (not running, a move
// already under way).
func (s *Service) Failover(ctx context.Context, id string, leaveHost bool, why string) (*gpurent.Operation, error) {
	in, err := s.store.InstanceByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if in.State != gpurent.StateRunning && in.State != gpurent.StateProvisioning {
		return nil, nil
	}
	if _, err := s.store.ActiveOperation(ctx, in.ID); err == nil {
		return nil, nil
	} else if !gpurent.IsCode(err, gpurent.CodeNotFound) {
		return nil, err
	}
	t, _, err := s.shape(ctx, in.TypeID, in.GPUCount)
	if err != nil {
		return nil, err
	}
	t.kind, t.zoneID, t.sameHostFirst = gpurent.OpFailover, in.ZoneID, !leaveHost
	for attempt := 0; attempt < claimAttempts; attempt++ {
		p, res, err := s.placeTarget(ctx, in, t)
		if err != nil {
			return nil, err
		}
		var op *gpurent.Operation
		_, err = s.lc.Apply(ctx, nil, id, func(q gpurent.Queries, in *gpurent.Instance, now time.Time) (*gpurent.Event, error) {
			if in.State != gpurent.StateRunning && in.State != gpurent.StateProvisioning {
				return nil, gpurent.Errorf(gpurent.CodeConflict, "instance %s is %s now", in.ID, in.State)
			}
			o, err := s.newOperation(ctx, q, in, t, p, "", "", true, now)
			if err != nil {
				return nil, err
			}
			o.Message = why
			if err := q.UpdateOperation(ctx, o); err != nil {
				return nil, err
			}
			op = o
			where := "other GPUs on the same host"
			if o.CrossHost() {
				where = "host " + s.lc.HostName(o.ToHostID)
			}
			return rental.NewEvent(in.ID, now, "failover_started", "%s: failing over to %s, same GPU type and count (operation %s)", why, where, o.ID), nil
		})
		res.Done(err == nil)
		switch {
		case err == nil:
			s.afterOperationChange(op)
			s.log.Warn("failover started", "instance", id, "operation", op.ID, "to_host", op.ToHostID, "why", why)
			return op, nil
		case errors.Is(err, errGPUTaken):
			s.lc.Invalidate()
		default:
			return nil, err
		}
	}
	return nil, gpurent.Errorf(gpurent.CodeUnavailable, "no healthy %s free to fail instance %s over to", describeShape(t.typeID, t.count), id)
}

// failoverEvent says a failover finished.
func (s *Service) failoverEvent(in *gpurent.Instance, op *gpurent.Operation, fromHost string, now time.Time) *gpurent.Event {
	return rental.NewEvent(in.ID, now, "failed_over", "%s",
		fmt.Sprintf("failed over to %s on host %s (was host %s): same volume and file system (operation %s)",
			describeShape(op.ToTypeID, op.ToCount), s.lc.HostName(op.ToHostID), s.lc.HostName(fromHost), op.ID))
}
