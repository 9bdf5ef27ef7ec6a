package docker

import (
	"context"

	"github.com/gpurent/gpurent"
)

// lockInstance serialises the operations on one instance within this
// process, so that a Run racing a Stop or another Run of the same instance
// does not interleave with it; it waits at most until ctx ends. Other
// processes are handled by the daemon's name uniqueness and Run's retries.
func (r *Runtime) lockInstance(ctx context.Context, instanceID string) (unlock func(), err error) {
	unlock, err = r.locks.LockContext(ctx, instanceID)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeUnavailable, err, "instance %s is busy with another operation", instanceID)
	}
	return unlock, nil
}
