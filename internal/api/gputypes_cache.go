package api

import (
	"context"
	"sync"
	"time"
)

// typesCache keeps the answer of the public GET /api/v1/gpu-types (the
// fleet's types and totals, every host and GPU read from the store, and
// the scheduler's free counts) for a short time, so that it does not read
// the whole fleet per request. A rent never relies on it: the rental
// service decides on its own snapshot. The answer is dropped when the fleet changes
// (Server.InvalidateGPUTypes, and after every API change that succeeds). At
// most one reading is in flight; requests meanwhile wait for it.
type typesCache struct {
	ttl  time.Duration
	load func(context.Context) ([]byte, error)

	mu   sync.Mutex // held while reading: one reading at a time
	body []byte     // the encoded answer
	at   time.Time  // monotonic
}

// get returns a reading no older than the TTL (with ttl 0, a fresh one).
func (c *typesCache) get(ctx context.Context) ([]byte, error) {
	if c.ttl <= 0 {
		return c.load(ctx)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.body != nil && time.Since(c.at) < c.ttl {
		return c.body, nil
	}
	body, err := c.load(ctx)
	if err != nil {
		return nil, err
	}
	c.body, c.at = body, time.Now()
	return body, nil
}

// invalidate drops the reading: the next request reads the fleet again.
func (c *typesCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.body = nil
}
