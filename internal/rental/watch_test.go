package rental_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/store/postgres"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// TestWatchWakesLongPollsAcrossReplicas: two control-plane replicas over
// one PostgreSQL database. A change to a host's desired state made through
// replica A wakes the agent's long poll held by replica B at once, through
// LISTEN/NOTIFY, not through B's periodic re-read (30 s while watching,
// longer than this test waits for any one poll).
func TestWatchWakesLongPollsAcrossReplicas(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	ctx := context.Background()
	open := func() *postgres.Store {
		s, err := postgres.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	stA, stB := open(), open()
	a := newEnv(t, stA)
	h := a.Register("watched", zoneA, h100, 8)
	b := rental.New(rental.Config{Store: stB, PollWait: 10 * time.Second})
	watchCtx, stop := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		b.Watch(watchCtx)
	}()
	defer func() { stop(); <-watched }()

	// The watcher's LISTEN may not be up yet when the first change is
	// made, so try a few times; each poll must be woken within a second,
	// far sooner than B would notice by itself.
	for attempt := 1; ; attempt++ {
		cur := a.Host(h.ID).Generation
		got := make(chan *agentproto.Desired, 1)
		go func() {
			d, err := b.Desired(ctx, h.ID, cur)
			if err != nil {
				t.Error(err)
			}
			got <- d
		}()
		time.Sleep(50 * time.Millisecond) // let the poll start waiting
		if _, err := stA.BumpHostGeneration(ctx, h.ID); err != nil {
			t.Fatal(err)
		}
		select {
		case d := <-got:
			if d == nil || d.Generation <= cur {
				t.Fatalf("the poll returned generation %v, want past %d", d, cur)
			}
			return
		case <-time.After(time.Second):
			if attempt == 10 {
				t.Fatal("a change made through another replica never woke the long poll")
			}
			<-got // the poll returns at PollWait; try again
		}
	}
}
