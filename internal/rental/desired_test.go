package rental_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/rental/rentaltest"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// bound is how long a test waits for something that should happen at
// once. It is a guard against hanging, not a timing assertion.
const bound = 30 * time.Second

type polled struct {
	d   *agentproto.Desired
	err error
}

// poll runs Desired in a goroutine and returns the channel its answer
// arrives on.
func (e *env) poll(ctx context.Context, hostID string, after int64) <-chan polled {
	ch := make(chan polled, 1)
	go func() {
		d, err := e.Rent.Desired(ctx, hostID, after)
		ch <- polled{d, err}
	}()
	return ch
}

func wait(t *testing.T, ch <-chan polled, what string) polled {
	t.Helper()
	select {
	case p := <-ch:
		return p
	case <-time.After(bound):
		t.Fatalf("%s: Desired did not answer within %s", what, bound)
		return polled{}
	}
}

// TestDesiredAtOnce: a poll for a generation the host has passed answers at
// once (the long wait is an hour here).
func TestDesiredAtOnce(t *testing.T) {
	e := newEnvWith(t, storetest.SQLite(t), rentaltest.Options{PollWait: time.Hour})
	h := e.Register("node-1", zoneA, h100, 8)
	in := e.MustRent(e.Alice, rentaltest.Req(h100, 1)).Instance
	gen := e.Host(h.ID).Generation

	for _, after := range []int64{-1, 0, gen - 1} {
		p := wait(t, e.poll(e.Ctx, h.ID, after), "poll behind the host")
		if p.err != nil {
			t.Fatal(p.err)
		}
		if p.d.Generation != gen || p.d.HostID != h.ID {
			t.Errorf("after=%d: generation %d of %s, want %d of %s", after, p.d.Generation, p.d.HostID, gen, h.ID)
		}
		rentaltest.DesiredOf(t, p.d, in.ID)
	}
	_, err := e.Rent.Desired(e.Ctx, "host-unknown", -1)
	rentaltest.WantCode(t, err, gpurent.CodeNotFound, "desired of an unknown host")
}

// TestDesiredWakes: a poll waiting at the host's generation answers when the
// host's desired state changes.
func TestDesiredWakes(t *testing.T) {
	e := newEnvWith(t, storetest.SQLite(t), rentaltest.Options{PollWait: time.Hour})
	h := e.Register("node-1", zoneA, h100, 8)
	other := e.Register("node-2", zoneB, h100, 8)
	gen := e.Host(h.ID).Generation

	ch := e.poll(e.Ctx, h.ID, gen)
	// A change on another host does not answer this poll.
	r := rentaltest.Req(h100, 1)
	r.ZoneID = zoneB
	if d := e.MustRent(e.Alice, r); d.Instance.HostID != other.ID {
		t.Fatalf("placed on %s, want %s", d.Instance.HostID, other.ID)
	}
	select {
	case p := <-ch:
		t.Fatalf("poll at generation %d answered with no change on its host: %+v, %v", gen, p.d, p.err)
	default:
	}

	r.ZoneID = zoneA
	in := e.MustRent(e.Alice, r).Instance
	p := wait(t, ch, "poll after a rent on its host")
	if p.err != nil {
		t.Fatal(p.err)
	}
	if p.d.Generation <= gen {
		t.Errorf("woken poll answered generation %d, want past %d", p.d.Generation, gen)
	}
	if di := rentaltest.DesiredOf(t, p.d, in.ID); di.State != agentproto.StateRunning {
		t.Errorf("desired %+v, want running", di)
	}

	// A stop wakes the next poll too, and the answer carries it.
	gen = p.d.Generation
	ch = e.poll(e.Ctx, h.ID, gen)
	if _, err := e.Rent.Stop(e.Ctx, e.Alice, in.ID); err != nil {
		t.Fatal(err)
	}
	p = wait(t, ch, "poll after a stop")
	if p.err != nil {
		t.Fatal(p.err)
	}
	if di := rentaltest.DesiredOf(t, p.d, in.ID); p.d.Generation <= gen || di.State != agentproto.StateStopped {
		t.Errorf("after stop: generation %d (was %d), desired %+v", p.d.Generation, gen, di)
	}
}

// TestDesiredPollWait: with nothing changing, a poll answers after PollWait
// with the current state.
func TestDesiredPollWait(t *testing.T) {
	e := newEnvWith(t, storetest.SQLite(t), rentaltest.Options{PollWait: 20 * time.Millisecond})
	h := e.Register("node-1", zoneA, h100, 8)
	in := e.MustRent(e.Alice, rentaltest.Req(h100, 1)).Instance
	gen := e.Host(h.ID).Generation

	p := wait(t, e.poll(e.Ctx, h.ID, gen), "poll with nothing to wait for")
	if p.err != nil {
		t.Fatal(p.err)
	}
	if p.d.Generation != gen {
		t.Errorf("quiet poll answered generation %d, want %d", p.d.Generation, gen)
	}
	rentaltest.DesiredOf(t, p.d, in.ID)
	// A poll ahead of the host (say, after a control-plane restore) also
	// answers with the current state.
	p = wait(t, e.poll(e.Ctx, h.ID, gen+100), "poll ahead of the host")
	if p.err != nil || p.d.Generation != gen {
		t.Errorf("poll ahead: %+v, %v; want generation %d", p.d, p.err, gen)
	}
}

// TestDesiredCancel: a poll ends when its caller goes away.
func TestDesiredCancel(t *testing.T) {
	e := newEnvWith(t, storetest.SQLite(t), rentaltest.Options{PollWait: time.Hour})
	h := e.Register("node-1", zoneA, h100, 8)
	ctx, cancel := context.WithCancel(e.Ctx)
	ch := e.poll(ctx, h.ID, e.Host(h.ID).Generation)
	cancel()
	p := wait(t, ch, "cancelled poll")
	if !errors.Is(p.err, context.Canceled) {
		t.Errorf("cancelled poll: %+v, %v; want context.Canceled", p.d, p.err)
	}
}
