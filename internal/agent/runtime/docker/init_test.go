package docker_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// These tests run instances under gpurent's init on the real Docker
// Engine: whatever the startup command does, the instance stays up.

func startup(line string) *string { return &line }

// waitStartup polls the runtime's List until the instance's startup
// status satisfies ok, and returns it (the instance must stay running).
func waitStartup(t *testing.T, rt *docker.Runtime, id string, what string, ok func(*agentproto.StartupStatus) bool) runtime.Status {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last runtime.Status
	for time.Now().Before(deadline) {
		st, found := listed(t, rt, id)
		if found && st.State == runtime.Running && st.Startup != nil && ok(st.Startup) {
			return st
		}
		last = st
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("instance %s: startup never %s; last status %+v startup %+v", id, what, last, last.Startup)
	return last
}

func exitedWith(code int) func(*agentproto.StartupStatus) bool {
	return func(s *agentproto.StartupStatus) bool {
		return s.State == "exited" && s.ExitCode != nil && *s.ExitCode == code && s.ExitedAt != nil
	}
}

// TestShellImageStaysUp: the image's command is a shell (like ubuntu's);
// it exits at once with code 0, and the instance keeps running.
func TestShellImageStaysUp(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{Scope: "init-" + dockertest.NewInstanceID()})
	spec := newSpec(t)
	mustRun(t, rt, spec)
	st := waitStartup(t, rt, spec.InstanceID, "exited 0", exitedWith(0))
	if strings.Join(st.Startup.Command, " ") != "/bin/sh" {
		t.Errorf("startup command %q, want the image's /bin/sh", st.Startup.Command)
	}
	// Still a machine: exec works, and Run leaves it alone.
	cli := dockertest.Client(t)
	if got := strings.TrimSpace(dockertest.MustExec(t, cli, docker.ContainerName(spec.InstanceID), "echo", "up")); got != "up" {
		t.Errorf("exec: %q", got)
	}
	again := mustRun(t, rt, spec)
	if again.State != runtime.Running || again.Startup == nil || again.Startup.State != "exited" {
		t.Errorf("Run of the running instance: %+v startup %+v", again, again.Startup)
	}
	if c := dockertest.Inspect(t, cli, docker.ContainerName(spec.InstanceID)); c.RestartCount != 0 {
		t.Errorf("the daemon restarted it %d times", c.RestartCount)
	}
}

// TestStartupCommandExitCodes: codes 0 and 1, a kill -9 from an exec, and
// no command at all; each time the instance stays up.
func TestStartupCommandExitCodes(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{Scope: "init-" + dockertest.NewInstanceID()})
	cli := dockertest.Client(t)
	for _, tc := range []struct {
		line string
		code int
	}{{"true", 0}, {"echo failing; exit 1", 1}} {
		spec := newSpec(t)
		spec.Startup = startup(tc.line)
		mustRun(t, rt, spec)
		st := waitStartup(t, rt, spec.InstanceID, "exited", exitedWith(tc.code))
		if strings.Join(st.Startup.Command, "|") != "/bin/sh|-c|"+tc.line {
			t.Errorf("%q: command %q", tc.line, st.Startup.Command)
		}
	}

	killed := newSpec(t)
	killed.Startup = startup("exec sleep 100000")
	mustRun(t, rt, killed)
	waitStartup(t, rt, killed.InstanceID, "running", func(s *agentproto.StartupStatus) bool { return s.State == "running" })
	dockertest.MustExec(t, cli, docker.ContainerName(killed.InstanceID), "sh", "-c", "kill -9 $(pidof sleep)")
	st := waitStartup(t, rt, killed.InstanceID, "killed", exitedWith(-1))
	if st.Startup.Signal != "killed" {
		t.Errorf("signal %q, want killed", st.Startup.Signal)
	}

	none := newSpec(t)
	none.Startup = startup("")
	mustRun(t, rt, none)
	waitStartup(t, rt, none.InstanceID, "none", func(s *agentproto.StartupStatus) bool { return s.State == "none" && len(s.Command) == 0 })
}

// TestInitReapsOrphans: processes whose parent died are reparented to the
// init, which reaps them: no zombie stays.
func TestInitReapsOrphans(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{Scope: "init-" + dockertest.NewInstanceID()})
	cli := dockertest.Client(t)
	spec := newSpec(t)
	// Each subshell leaves an orphan sleep behind, which ends a moment
	// later.
	spec.Startup = startup("for i in 1 2 3 4 5; do (sleep 0.2 &); done; exec sleep 100000")
	mustRun(t, rt, spec)
	waitStartup(t, rt, spec.InstanceID, "running", func(s *agentproto.StartupStatus) bool { return s.State == "running" })
	name := docker.ContainerName(spec.InstanceID)
	// Until the orphans end (a moment, or longer on a loaded machine) they
	// are sleeps, not zombies: wait for both the last zombie and the last
	// orphan to be gone, so only the startup sleep is left.
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Field 3 of /proc/PID/stat is the state; Z is a zombie.
		zombies := strings.TrimSpace(dockertest.MustExec(t, cli, name, "sh", "-c", "cat /proc/[0-9]*/stat 2>/dev/null | awk '{print $3}' | grep -c Z || true"))
		sleeps := strings.TrimSpace(dockertest.MustExec(t, cli, name, "sh", "-c", "pidof sleep | wc -w"))
		if zombies == "0" && sleeps == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s zombies and %s sleeps stay, want none and the startup command's alone", zombies, sleeps)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestStopIsGraceful: a stop's SIGTERM reaches the startup command, which
// traps it and writes a file on the volume, and then a daemon started
// over exec, which does the same; the init then exits 0, long before the
// 60 s stop timeout's SIGKILL (which would exit 137).
func TestStopIsGraceful(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{Scope: "init-" + dockertest.NewInstanceID(), StopTimeout: 60 * time.Second})
	cli := dockertest.Client(t)
	spec := newSpec(t)
	spec.Startup = startup("trap 'echo stopped-cleanly > /root/data/stop.txt; exit 0' TERM; while :; do sleep 0.1; done")
	mustRun(t, rt, spec)
	waitStartup(t, rt, spec.InstanceID, "running", func(s *agentproto.StartupStatus) bool { return s.State == "running" })
	// A daemon the renter started over SSH (not a child of the init) is
	// stopped gracefully too.
	dockertest.MustExec(t, cli, docker.ContainerName(spec.InstanceID), "sh", "-c",
		`sh -c "trap 'echo daemon-stopped > /root/data/daemon.txt; exit 0' TERM; while :; do sleep 0.1; done" </dev/null >/dev/null 2>&1 &`)
	if err := rt.Stop(t.Context(), spec.InstanceID); err != nil {
		t.Fatal(err)
	}
	c := dockertest.Inspect(t, cli, docker.ContainerName(spec.InstanceID))
	if c.State.Running || c.State.ExitCode != 0 || c.State.OOMKilled {
		t.Fatalf("after Stop: running %v exit code %d: want the init's exit 0, not SIGKILL's 137", c.State.Running, c.State.ExitCode)
	}
	if st, _ := listed(t, rt, spec.InstanceID); st.State != runtime.Stopped {
		t.Errorf("after Stop: %+v", st)
	}
	// Started again (the same container): the file the trap wrote is on
	// the volume.
	mustRun(t, rt, spec)
	if got := strings.TrimSpace(dockertest.MustExec(t, cli, docker.ContainerName(spec.InstanceID), "cat", "/root/data/stop.txt")); got != "stopped-cleanly" {
		t.Errorf("stop.txt = %q", got)
	}
	if got := strings.TrimSpace(dockertest.Exec(t, cli, docker.ContainerName(spec.InstanceID), "cat", "/root/data/daemon.txt").Stdout); got != "daemon-stopped" {
		rc, _ := rt.Logs(t.Context(), spec.InstanceID, runtime.LogOptions{})
		logs, _ := io.ReadAll(rc)
		t.Errorf("daemon.txt = %q: the renter's daemon was not stopped gracefully; logs:\n%s", got, logs)
	}
}

// TestLogsBounded: a startup command writes far more than the bound; the
// daemon keeps at most about the bound, the newest output.
func TestLogsBounded(t *testing.T) {
	t.Parallel()
	const fileBytes, files = 128 << 10, 2
	const bound = fileBytes * files
	rt := newRuntime(t, docker.Config{Scope: "init-" + dockertest.NewInstanceID(), LogMaxBytes: fileBytes, LogMaxFiles: files})
	spec := newSpec(t)
	// About 1.2 MB in lines of 60 bytes.
	spec.Startup = startup(`i=0; while [ $i -lt 20000 ]; do echo "line $i ................................................"; i=$((i+1)); done; sleep 1; echo last-line >&2`)
	mustRun(t, rt, spec)
	waitStartup(t, rt, spec.InstanceID, "exited 0", exitedWith(0))
	// The daemon copies the output to its log a moment after it is
	// written: read until the last line is there.
	var b []byte
	for deadline := time.Now().Add(30 * time.Second); ; {
		rc, err := rt.Logs(t.Context(), spec.InstanceID, runtime.LogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, err = io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "last-line") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The json-file driver keeps bound bytes of JSON per file (each line
	// grows by its framing), so the plain output is below the bound; one
	// file of slack for the rotation.
	if len(b) == 0 || len(b) > bound+fileBytes {
		t.Fatalf("logs of %d bytes, want at most about %d", len(b), bound)
	}
	if !strings.Contains(string(b), "last-line") || strings.Contains(string(b), "line 0 ") {
		t.Errorf("logs do not end with the newest output (stderr merged) or keep the oldest: ...%q", b[max(0, len(b)-200):])
	}
	tail, err := rt.Logs(t.Context(), spec.InstanceID, runtime.LogOptions{Tail: 2})
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := io.ReadAll(tail)
	tail.Close()
	if lines := strings.Split(strings.TrimSpace(string(tb)), "\n"); len(lines) != 2 || lines[0] != "last-line" || !strings.Contains(lines[1], "instance stays up") {
		t.Errorf("tail 2: %q", tb)
	}
	if _, err := rt.Logs(t.Context(), dockertest.NewInstanceID(), runtime.LogOptions{}); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("logs of an unknown instance: %v, want not_found", err)
	}
}

// TestLogsFollow: a follower sees a line written after the call started,
// and its stream ends when the instance stops.
func TestLogsFollow(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{Scope: "init-" + dockertest.NewInstanceID(), StopTimeout: 30 * time.Second})
	cli := dockertest.Client(t)
	spec := newSpec(t)
	spec.Startup = startup("echo first; while [ ! -e /tmp/go ]; do sleep 0.1; done; echo second; exec sleep 100000")
	mustRun(t, rt, spec)
	before := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	rc, err := rt.Logs(ctx, spec.InstanceID, runtime.LogOptions{Follow: true, Since: before.Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	lines := bufio.NewScanner(rc)
	next := func(want string) {
		t.Helper()
		for lines.Scan() {
			if strings.Contains(lines.Text(), want) {
				return
			}
		}
		t.Fatalf("stream ended before %q: %v", want, lines.Err())
	}
	next("first")
	dockertest.MustExec(t, cli, docker.ContainerName(spec.InstanceID), "touch", "/tmp/go")
	next("second")
	go func() { _ = rt.Stop(context.Background(), spec.InstanceID) }()
	for lines.Scan() {
	}
	if err := lines.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("follow ended with %v, want the end of the stream when the instance stopped", err)
	}
	if ctx.Err() != nil {
		t.Fatal("follow did not end when the instance stopped")
	}
}

// TestStatusFileAbuse: the tenant replaces the status file by a FIFO, a
// symlink to a file the host has, a huge (sparse) file or garbage; List neither blocks nor
// reads through, and the instance stays running with no startup status.
func TestStatusFileAbuse(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, docker.Config{Scope: "init-" + dockertest.NewInstanceID()})
	cli := dockertest.Client(t)
	spec := newSpec(t)
	spec.Startup = startup("exec sleep 100000")
	mustRun(t, rt, spec)
	waitStartup(t, rt, spec.InstanceID, "running", func(s *agentproto.StartupStatus) bool { return s.State == "running" })
	name := docker.ContainerName(spec.InstanceID)
	for what, script := range map[string]string{
		"fifo":    "mkfifo " + docker.InitStatus,
		"symlink": "ln -s /proc/1/root/etc/hostname " + docker.InitStatus,
		// The tmpfs bounds what is stored, not a sparse file's size.
		"sparse":  "echo '{\"state\":\"none\"}' > " + docker.InitStatus + "; truncate -s 1000000000 " + docker.InitStatus,
		"garbage": "echo '{\"state\":\"exited\",\"exit_code\":\"x\"}' > " + docker.InitStatus,
	} {
		dockertest.MustExec(t, cli, name, "sh", "-c", "rm -f "+docker.InitStatus+"; "+script)
		done := make(chan struct{})
		var st runtime.Status
		var found bool
		go func() { defer close(done); st, found = listed(t, rt, spec.InstanceID) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: List blocks", what)
		}
		if !found || st.State != runtime.Running || st.Startup != nil {
			t.Errorf("%s: %+v startup %+v, want running without a startup status", what, st, st.Startup)
		}
	}
}

// TestInitBinaryRefused: a dynamically linked init, none, or a relative
// path is refused with a message that says what to build.
func TestInitBinaryRefused(t *testing.T) {
	t.Parallel()
	dockertest.Require(t)
	for _, path := range []string{"/bin/bash", "", "bin/busybox"} {
		_, err := docker.New(t.Context(), docker.Config{InitBinary: path})
		if !gpurent.IsCode(err, gpurent.CodeInvalid) || (path != "bin/busybox" && !strings.Contains(err.Error(), "CGO_ENABLED=0")) {
			t.Errorf("InitBinary %q: %v, want invalid naming CGO_ENABLED=0", path, err)
		}
	}
}
