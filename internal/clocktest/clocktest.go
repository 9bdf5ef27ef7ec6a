// Package clocktest is the one test clock of gpurent: a time that moves only
// when a test says so. Services take their clock as a Now func; a test hands
// them Clock.Now and steps time with Advance or Set, so no deadline in a test
// depends on how fast the machine runs. It is safe for concurrent use (a
// service's goroutines read it while the test moves it).
package clocktest

import (
	"sync"
	"time"
)

// Clock is a settable clock. Make one with New.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock standing at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time; pass it where a service wants a Now func.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d (back, for a negative d).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set puts the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}
