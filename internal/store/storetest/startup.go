package storetest

import (
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

// testStartupCommand: the startup command is kept as nil (the image's
// own), "" (none) or a line, through create and update, and refused when
// too long or holding a NUL.
func testStartupCommand(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "startup@example.com")
	in := SeedInstance(t, s, acc.ID, "image-default")
	got, err := s.InstanceByID(ctx, in.ID)
	must(t, err, "read")
	if got.StartupCommand != nil || got.Startup != nil {
		t.Fatalf("a new instance's startup: %v %+v, want nil (the image's own) and no status", got.StartupCommand, got.Startup)
	}

	none := ""
	in2 := newInstance(acc.ID)
	in2.StartupCommand = &none
	must(t, s.CreateInstance(ctx, in2), "create with no startup command")
	got, err = s.InstanceByID(ctx, in2.ID)
	must(t, err, "read none")
	if got.StartupCommand == nil || *got.StartupCommand != "" {
		t.Fatalf("startup command none read back as %v, want \"\" (not nil)", got.StartupCommand)
	}

	line := "python train.py --epochs 3 >> /data/log 2>&1; echo 'done' ; sleep 1"
	got.StartupCommand = &line
	must(t, s.UpdateInstance(ctx, got), "set a line")
	back, err := s.InstanceByID(ctx, in2.ID)
	must(t, err, "read line")
	if back.StartupCommand == nil || *back.StartupCommand != line {
		t.Fatalf("startup command read back as %v, want %q", back.StartupCommand, line)
	}
	back.StartupCommand = nil
	must(t, s.UpdateInstance(ctx, back), "back to the image's own")
	if got, _ := s.InstanceByID(ctx, in2.ID); got.StartupCommand != nil {
		t.Fatalf("image default read back as %q", *got.StartupCommand)
	}

	tooLong := make([]byte, gpurent.MaxStartupCommandBytes+1)
	for i := range tooLong {
		tooLong[i] = 'x'
	}
	tl := string(tooLong)
	back, _ = s.InstanceByID(ctx, in2.ID)
	back.StartupCommand = &tl
	wantCode(t, s.UpdateInstance(ctx, back), gpurent.CodeInvalid, "a startup command over the bound")
	nul := "echo a\x00b"
	back.StartupCommand = &nul
	wantCode(t, s.UpdateInstance(ctx, back), gpurent.CodeInvalid, "a startup command with a NUL")
	in3 := newInstance(acc.ID)
	in3.StartupCommand = &nul
	wantCode(t, s.CreateInstance(ctx, in3), gpurent.CodeInvalid, "create with a NUL")
	exact := tl[:gpurent.MaxStartupCommandBytes]
	back.StartupCommand = &exact
	must(t, s.UpdateInstance(ctx, back), "a startup command of exactly the bound")
}

// testStartupStatus: the latest status is kept without bumping the
// instance's version, and an exit's key answers new exactly once.
func testStartupStatus(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "startup-status@example.com")
	in := SeedInstance(t, s, acc.ID, "status")
	started := us(5)
	running := &gpurent.StartupStatus{State: "running", Command: []string{"/bin/sh", "-c", "sleep 1; exit 3"},
		StartedAt: &started, ReportedAt: at(6)}
	fresh, err := s.RecordStartupStatus(ctx, in.ID, running)
	must(t, err, "record running")
	if fresh {
		t.Fatal("a running status (no event key) answered new")
	}
	got, err := s.InstanceByID(ctx, in.ID)
	must(t, err, "read")
	if got.Version != in.Version {
		t.Errorf("the startup status bumped the version: %d → %d", in.Version, got.Version)
	}
	if got.Startup == nil || got.Startup.State != "running" || len(got.Startup.Command) != 3 ||
		got.Startup.Command[2] != "sleep 1; exit 3" || got.Startup.StartedAt == nil || !got.Startup.StartedAt.Equal(started) ||
		got.Startup.ExitCode != nil || got.Startup.ExitedAt != nil || !got.Startup.ReportedAt.Equal(us(6)) {
		t.Fatalf("running status read back as %+v", got.Startup)
	}

	exited := us(9)
	code := 3
	ex := &gpurent.StartupStatus{State: "exited", Command: running.Command, StartedAt: &started, ExitedAt: &exited,
		ExitCode: &code, ReportedAt: at(10), EventKey: "exited@" + exited.Format(time.RFC3339Nano)}
	fresh, err = s.RecordStartupStatus(ctx, in.ID, ex)
	must(t, err, "record exit")
	if !fresh {
		t.Fatal("the first report of an exit did not answer new")
	}
	again := *ex
	again.ReportedAt = at(11)
	fresh, err = s.RecordStartupStatus(ctx, in.ID, &again)
	must(t, err, "record exit again")
	if fresh {
		t.Fatal("the same exit reported again answered new")
	}
	got, err = s.InstanceByID(ctx, in.ID)
	must(t, err, "read exited")
	if got.Startup == nil || got.Startup.State != "exited" || got.Startup.ExitCode == nil || *got.Startup.ExitCode != 3 ||
		got.Startup.ExitedAt == nil || !got.Startup.ExitedAt.Equal(exited) || got.Startup.EventKey != ex.EventKey ||
		!got.Startup.ReportedAt.Equal(us(11)) {
		t.Fatalf("exited status read back as %+v", got.Startup)
	}

	// A restart runs it again: running keeps the last key, the next exit
	// (another time) is new, and a status of a killed command keeps its
	// signal.
	must2(t, s, in.ID, &gpurent.StartupStatus{State: "running", StartedAt: &exited, ReportedAt: at(12)}, false)
	killed := us(20)
	minus := -1
	must2(t, s, in.ID, &gpurent.StartupStatus{State: "exited", ExitedAt: &killed, ExitCode: &minus, Signal: "killed",
		ReportedAt: at(21), EventKey: "exited@" + killed.Format(time.RFC3339Nano)}, true)
	got, _ = s.InstanceByID(ctx, in.ID)
	if got.Startup.Signal != "killed" || *got.Startup.ExitCode != -1 || len(got.Startup.Command) != 0 {
		t.Fatalf("killed status read back as %+v", got.Startup)
	}
	// The customer's own changes are not lost to a report, nor a report's
	// status to an update.
	line := "echo hi"
	got.StartupCommand = &line
	must(t, s.UpdateInstance(ctx, got), "update after a report")
	back, _ := s.InstanceByID(ctx, in.ID)
	if back.Startup == nil || back.Startup.Signal != "killed" || back.StartupCommand == nil || *back.StartupCommand != line {
		t.Fatalf("after an update: %+v %v", back.Startup, back.StartupCommand)
	}

	_, err = s.RecordStartupStatus(ctx, "inst-none", ex)
	wantCode(t, err, gpurent.CodeNotFound, "status of an unknown instance")
	_, err = s.RecordStartupStatus(ctx, in.ID, &gpurent.StartupStatus{})
	wantCode(t, err, gpurent.CodeInvalid, "status without a state")
}

func must2(t *testing.T, s gpurent.Store, id string, st *gpurent.StartupStatus, wantNew bool) {
	t.Helper()
	fresh, err := s.RecordStartupStatus(t.Context(), id, st)
	must(t, err, "record "+st.State)
	if fresh != wantNew {
		t.Fatalf("record %s (key %q): new = %v, want %v", st.State, st.EventKey, fresh, wantNew)
	}
}

// us is at(sec) as the store keeps it (UTC, microseconds).
func us(sec int) time.Time { return at(sec).UTC().Truncate(time.Microsecond) }

// testStartupStatusConcurrent: of reports of one exit applied at once,
// exactly one answers new (the event is recorded once).
func testStartupStatusConcurrent(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "startup-race@example.com")
	in := SeedInstance(t, s, acc.ID, "race")
	exited := us(30)
	code := 0
	const n = 8
	type answer struct {
		fresh bool
		err   error
	}
	answers := make(chan answer, n)
	for range n {
		go func() {
			st := &gpurent.StartupStatus{State: "exited", ExitedAt: &exited, ExitCode: &code, ReportedAt: us(31),
				EventKey: "exited@" + exited.Format(time.RFC3339Nano)}
			fresh, err := s.RecordStartupStatus(ctx, in.ID, st)
			answers <- answer{fresh, err}
		}()
	}
	fresh := 0
	for range n {
		a := <-answers
		// A backend may refuse a writer it cannot serialise (it is
		// retried as a conflict); it never answers new twice.
		if a.err != nil && !gpurent.IsCode(a.err, gpurent.CodeConflict) && !gpurent.IsCode(a.err, gpurent.CodeUnavailable) {
			t.Fatal(a.err)
		}
		if a.fresh {
			fresh++
		}
	}
	if fresh != 1 {
		t.Fatalf("%d of %d concurrent reports of one exit answered new, want exactly 1", fresh, n)
	}
}
