package clocktest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/clocktest"
)

func TestClockMovesOnlyWhenTold(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	c := clocktest.New(t0)
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("Now = %v, want %v", got, t0)
	}
	c.Advance(90 * time.Second)
	if got := c.Now(); !got.Equal(t0.Add(90 * time.Second)) {
		t.Fatalf("after Advance: %v", got)
	}
	c.Set(t0.Add(-time.Hour))
	if got := c.Now(); !got.Equal(t0.Add(-time.Hour)) {
		t.Fatalf("after Set: %v", got)
	}
}

// TestClockConcurrent: readers and a writer at once (run under -race).
func TestClockConcurrent(t *testing.T) {
	c := clocktest.New(time.Unix(0, 0))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				_ = c.Now()
			}
		})
	}
	for range 100 {
		c.Advance(time.Second)
	}
	wg.Wait()
	if got := c.Now(); !got.Equal(time.Unix(100, 0)) {
		t.Fatalf("Now = %v, want 100 s after the epoch", got)
	}
}
