package docker

import (
	"context"
	"sync"

	"github.com/gpurent/gpurent"
)

// keyLock serialises the operations on one instance within this process,
// so that a Run racing a Stop or another Run of the same instance does not
// interleave with it. Other processes are handled by the daemon's name
// uniqueness and Run's retries.
type keyLock struct {
	mu   sync.Mutex
	held map[string]*keyEntry
}

type keyEntry struct {
	sem  chan struct{} // capacity 1: holding the key is having sent into it
	refs int
}

// lock takes key, waiting at most until ctx ends, and returns its release.
func (k *keyLock) lock(ctx context.Context, key string) (unlock func(), err error) {
	k.mu.Lock()
	if k.held == nil {
		k.held = make(map[string]*keyEntry)
	}
	e := k.held[key]
	if e == nil {
		e = &keyEntry{sem: make(chan struct{}, 1)}
		k.held[key] = e
	}
	e.refs++
	k.mu.Unlock()

	release := func() {
		k.mu.Lock()
		e.refs--
		if e.refs == 0 {
			delete(k.held, key)
		}
		k.mu.Unlock()
	}
	select {
	case e.sem <- struct{}{}:
		return func() { <-e.sem; release() }, nil
	case <-ctx.Done():
		release()
		return nil, gpurent.WrapError(gpurent.CodeUnavailable, ctx.Err(), "instance %s is busy with another operation", key)
	}
}
