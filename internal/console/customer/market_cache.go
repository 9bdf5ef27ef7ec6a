package customer

import (
	"context"
	"sync"
	"time"

	"github.com/gpurent/gpurent"
)

// marketCacheTTL is how long the market and the rent form show the same
// reading of the fleet. Reading it (the fleet's types and the scheduler's
// availability, as GET /api/v1/gpu-types does) means reading every host
// and GPU twice; on a fleet of 1,000 hosts that is most of a page's time.
// A rent is never refused from this reading: the rent form checks a fresh
// one, and the rental service decides.
const marketCacheTTL = 2 * time.Second

// marketMaxStale is how old a reading may be served while a new one is
// read in the background; older ones make the request wait for a reading.
const marketMaxStale = 30 * time.Second

// marketFleet is one reading of the fleet for the market's pages.
type marketFleet struct {
	types []marketType
	zones []gpurent.Zone
}

// marketCache keeps the last reading of the fleet for marketCacheTTL. At
// most one reading is in flight; requests that come meanwhile wait for it.
// One per console Server (made in marketRoutes).
type marketCache struct {
	ttl time.Duration

	mu      sync.Mutex
	fleet   *marketFleet
	at      time.Time     // when fleet was read (monotonic clock)
	loading chan struct{} // closed when the reading in flight ends; nil when none
}

func newMarketCache(ttl time.Duration) *marketCache { return &marketCache{ttl: ttl} }

// get returns a reading no older than the cache's TTL, reading the fleet
// with load when it has none. The caller owns the returned slices' first
// level (the types are copied), so it may set fields of each type.
func (c *marketCache) get(ctx context.Context, load func(context.Context) ([]marketType, []gpurent.Zone, error)) ([]marketType, []gpurent.Zone, error) {
	for {
		c.mu.Lock()
		if c.fleet != nil && time.Since(c.at) < c.ttl {
			f := c.fleet
			c.mu.Unlock()
			return append([]marketType(nil), f.types...), f.zones, nil
		}
		if c.fleet != nil && time.Since(c.at) < marketMaxStale {
			// Stale but recent: answer with it now and read the fleet
			// again in the background, so that no page waits for a
			// reading while traffic keeps the cache warm.
			f := c.fleet
			if c.loading == nil {
				ch := make(chan struct{})
				c.loading = ch
				go c.refresh(context.WithoutCancel(ctx), load, ch)
			}
			c.mu.Unlock()
			return append([]marketType(nil), f.types...), f.zones, nil
		}
		if ch := c.loading; ch != nil {
			c.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, nil, gpurent.WrapError(gpurent.CodeUnavailable, ctx.Err(), "the request ended while the fleet was being read")
			}
		}
		ch := make(chan struct{})
		c.loading = ch
		c.mu.Unlock()

		types, zones, err := c.read(ctx, load, ch)
		if err != nil {
			// Waiters try a reading of their own.
			return nil, nil, err
		}
		return append([]marketType(nil), types...), zones, nil
	}
}

// refresh reads the fleet in the background and keeps the reading; ch is
// the in-flight mark, closed when it ends.
func (c *marketCache) refresh(ctx context.Context, load func(context.Context) ([]marketType, []gpurent.Zone, error), ch chan struct{}) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, _, _ = c.read(ctx, load, ch) // a failed refresh leaves the last reading
}

// read reads the fleet, keeps a good reading, and ends the in-flight mark
// ch.
func (c *marketCache) read(ctx context.Context, load func(context.Context) ([]marketType, []gpurent.Zone, error), ch chan struct{}) ([]marketType, []gpurent.Zone, error) {
	types, zones, err := load(ctx)
	c.mu.Lock()
	c.loading = nil
	if err == nil {
		c.fleet, c.at = &marketFleet{types: types, zones: zones}, time.Now()
	}
	c.mu.Unlock()
	close(ch)
	return types, zones, err
}
