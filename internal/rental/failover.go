package rental

import (
	"context"
	"time"

	"github.com/gpurent/gpurent"
)

// SetFailover sets what happens to the instance when a platform fault
// takes its GPUs: gpurent.FailoverAuto moves it to healthy GPUs of the
// same type; gpurent.FailoverWait keeps it and tells the customer.
func (s *Service) SetFailover(ctx context.Context, acc *gpurent.Account, id string, f gpurent.Failover) (*Detail, error) {
	switch f {
	case gpurent.FailoverAuto, gpurent.FailoverWait:
	default:
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "failover must be auto or wait, got %q", f)
	}
	in, err := s.apply(ctx, acc, id, func(q gpurent.Queries, in *gpurent.Instance, now time.Time) (*gpurent.Event, error) {
		if FailoverOf(in) == f {
			return nil, nil
		}
		in.Failover = f
		if f == gpurent.FailoverAuto {
			return NewEvent(in.ID, now, "failover_policy", "on a GPU or host fault the instance moves to healthy GPUs by itself"), nil
		}
		return NewEvent(in.ID, now, "failover_policy", "on a GPU or host fault the instance waits where it is; you are told"), nil
	})
	if err != nil {
		return nil, err
	}
	return s.detail(ctx, in)
}

// FailoverOf is the instance's failover choice ("" reads as auto).
func FailoverOf(in *gpurent.Instance) gpurent.Failover {
	if in.Failover == "" {
		return gpurent.FailoverAuto
	}
	return in.Failover
}
