//go:build linux

package docker_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
)

// syncBuffer is a bytes.Buffer safe to write from the session's copier
// while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runningInstance starts a busybox instance on network none.
func runningInstance(t *testing.T, cfg docker.Config) (*docker.Runtime, runtime.Spec) {
	t.Helper()
	cfg.Network = "none"
	rt := newRuntime(t, cfg)
	spec := newSpec(t)
	mustRun(t, rt, spec)
	return rt, spec
}

// execAll runs cmd to its end and returns its output and exit code.
func execAll(t *testing.T, rt *docker.Runtime, instanceID string, spec runtime.ExecSpec) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out, errb syncBuffer
	spec.Stdout, spec.Stderr = &out, &errb
	s, err := rt.Exec(ctx, instanceID, spec)
	if err != nil {
		t.Fatalf("Exec(%q): %v", spec.Cmd, err)
	}
	defer s.Close()
	code, err = s.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait(%q): %v", spec.Cmd, err)
	}
	return out.String(), errb.String(), code
}

func TestExecOutputAndExitCode(t *testing.T) {
	t.Parallel()
	rt, spec := runningInstance(t, docker.Config{})

	out, errOut, code := execAll(t, rt, spec.InstanceID, runtime.ExecSpec{
		Cmd: []string{"sh", "-c", "echo out; echo err >&2; echo $FOO/$LANG; exit 7"},
		Env: []string{"LANG=C.UTF-8"},
	})
	if out != "out\nbar baz/C.UTF-8\n" || errOut != "err\n" || code != 7 {
		t.Errorf("exec = stdout %q, stderr %q, exit %d; want the instance's env plus ours, streams apart, exit 7", out, errOut, code)
	}

	out, _, code = execAll(t, rt, spec.InstanceID, runtime.ExecSpec{Cmd: []string{"pwd"}, WorkDir: "/tmp", User: "nobody"})
	if out != "/tmp\n" || code != 0 {
		t.Errorf("pwd in /tmp = %q, exit %d", out, code)
	}
	out, _, _ = execAll(t, rt, spec.InstanceID, runtime.ExecSpec{Cmd: []string{"id", "-u"}, User: "nobody"})
	if strings.TrimSpace(out) != "65534" {
		t.Errorf("id -u as nobody = %q, want 65534", out)
	}
}

// TestExecRunsUnderTheRelay: a command without a terminal runs under the
// exec relay (its parent is the init binary's exec-relay), so the Engine
// cannot cut its output; with a terminal it runs directly. A big output
// read slowly arrives whole, with its exit code.
func TestExecRunsUnderTheRelay(t *testing.T) {
	t.Parallel()
	rt, spec := runningInstance(t, docker.Config{})
	out, _, code := execAll(t, rt, spec.InstanceID, runtime.ExecSpec{
		Cmd: []string{"sh", "-c", "tr '\\0' ' ' </proc/$PPID/cmdline"},
	})
	if want := docker.InitPath + " exec-relay -- sh -c"; !strings.HasPrefix(out, want) || code != 0 {
		t.Errorf("the parent of a command is %q (exit %d), want %q...", out, code, want)
	}
	out, _, _ = execAll(t, rt, spec.InstanceID, runtime.ExecSpec{
		Cmd: []string{"sh", "-c", "tr '\\0' ' ' </proc/$PPID/cmdline"}, TTY: true,
	})
	if strings.Contains(out, "exec-relay") {
		t.Errorf("a terminal's command runs under the relay: parent %q", out)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var got countingWriter
	got.delay = 200 * time.Microsecond
	s, err := rt.Exec(ctx, spec.InstanceID, runtime.ExecSpec{
		Cmd:    []string{"sh", "-c", "head -c 4000000 /dev/zero | tr '\\0' y; exit 5"},
		Stdout: &got, Stderr: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	code, err = s.Wait(ctx)
	if err != nil || code != 5 || got.n.Load() != 4_000_000 {
		t.Errorf("a slowly read 4 MB: %d bytes, exit %d, %v; want all of it and exit 5", got.n.Load(), code, err)
	}
}

// countingWriter counts what it is given, pausing delay on each write.
type countingWriter struct {
	n     atomic.Int64
	delay time.Duration
}

func (w *countingWriter) Write(p []byte) (int, error) {
	time.Sleep(w.delay)
	w.n.Add(int64(len(p)))
	return len(p), nil
}

func TestExecStdinEOFReachesCommand(t *testing.T) {
	t.Parallel()
	rt, spec := runningInstance(t, docker.Config{})
	input := strings.Repeat("0123456789abcdef", 64<<10) // 1 MiB
	out, _, code := execAll(t, rt, spec.InstanceID, runtime.ExecSpec{
		Cmd:   []string{"wc", "-c"},
		Stdin: strings.NewReader(input),
	})
	if strings.TrimSpace(out) != strconv.Itoa(len(input)) || code != 0 {
		t.Errorf("wc -c of 1 MiB = %q, exit %d; want %d (stdin must end with EOF)", out, code, len(input))
	}
	// No stdin at all: the command sees EOF at once.
	out, _, code = execAll(t, rt, spec.InstanceID, runtime.ExecSpec{Cmd: []string{"cat"}})
	if out != "" || code != 0 {
		t.Errorf("cat without stdin = %q, exit %d", out, code)
	}
}

func TestExecTTYAndResize(t *testing.T) {
	t.Parallel()
	rt, spec := runningInstance(t, docker.Config{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	inR, inW := io.Pipe()
	var out syncBuffer
	s, err := rt.Exec(ctx, spec.InstanceID, runtime.ExecSpec{
		Cmd: []string{"sh"}, TTY: true, Cols: 100, Rows: 30,
		Stdin: inR, Stdout: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	say := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatalf("write %q: %v", line, err)
		}
	}
	waitFor := func(want string) {
		t.Helper()
		for !strings.Contains(out.String(), want) {
			select {
			case <-ctx.Done():
				t.Fatalf("no %q in the terminal output:\n%s", want, out.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	say("echo size=$(stty size)")
	waitFor("size=30 100")
	if err := s.Resize(ctx, 120, 40); err != nil {
		t.Fatalf("Resize: %v", err)
	}
	say("echo size=$(stty size) tty=$(tty)")
	waitFor("size=40 120 tty=/dev/pts/")
	say("exit 3")
	code, err := s.Wait(ctx)
	if err != nil || code != 3 {
		t.Errorf("Wait = %d, %v; want 3", code, err)
	}
	_ = inW.Close()
}

func TestExecSignal(t *testing.T) {
	t.Parallel()
	rt, spec := runningInstance(t, docker.Config{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out syncBuffer
	s, err := rt.Exec(ctx, spec.InstanceID, runtime.ExecSpec{
		Cmd:    []string{"sh", "-c", "trap 'echo got-int; exit 42' INT; echo ready; while :; do sleep 0.05; done"},
		Stdout: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for !strings.Contains(out.String(), "ready") {
		select {
		case <-ctx.Done():
			t.Fatal("the command never became ready")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := s.Signal(syscall.SIGINT); err != nil {
		t.Fatalf("Signal(INT): %v", err)
	}
	code, err := s.Wait(ctx)
	if err != nil || code != 42 || !strings.Contains(out.String(), "got-int") {
		t.Errorf("after SIGINT: exit %d, %v, output %q; want the trap's exit 42", code, err, out.String())
	}
	// Signalling an ended command is no error.
	if err := s.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("Signal after the end: %v", err)
	}

	// A command killed by a signal exits 128+N.
	s2, err := rt.Exec(ctx, spec.InstanceID, runtime.ExecSpec{Cmd: []string{"sleep", "613"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("Signal(KILL): %v", err)
	}
	if code, err := s2.Wait(ctx); err != nil || code != 128+int(syscall.SIGKILL) {
		t.Errorf("killed sleep: exit %d, %v; want 137", code, err)
	}
	// The KILL, which the relay cannot pass on, ends the command too: no
	// orphan sleeps on.
	name := dockertest.InstanceContainer(t, dockertest.Client(t), spec.InstanceID)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out := dockertest.MustExec(t, dockertest.Client(t), name, "sh", "-c", "ps -o args | grep -c '^sleep 613' || true")
		if strings.TrimSpace(out) == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed command's process still runs")
		}
	}
}

func TestExecCloseHangsUp(t *testing.T) {
	t.Parallel()
	rt, spec := runningInstance(t, docker.Config{})
	cli := dockertest.Client(t)
	name := docker.ContainerName(spec.InstanceID)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := rt.Exec(ctx, spec.InstanceID, runtime.ExecSpec{Cmd: []string{"sleep", "777"}})
	if err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(dockertest.MustExec(t, cli, name, "ps"), "sleep 777") {
		select {
		case <-ctx.Done():
			t.Fatal("sleep 777 never showed in ps")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for strings.Contains(dockertest.MustExec(t, cli, name, "ps"), "sleep 777") {
		select {
		case <-ctx.Done():
			t.Fatal("sleep 777 survived Close (no SIGHUP)")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestPIDIsTheInstanceInit(t *testing.T) {
	t.Parallel()
	rt, spec := runningInstance(t, docker.Config{})
	pid, err := rt.PID(t.Context(), spec.InstanceID)
	if err != nil {
		t.Fatal(err)
	}
	c := dockertest.Inspect(t, dockertest.Client(t), docker.ContainerName(spec.InstanceID))
	if pid != c.State.Pid {
		t.Errorf("PID = %d, want the container's %d", pid, c.State.Pid)
	}
	// Its root is the instance's file system.
	hostname, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/root/etc/hostname")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(hostname)); got != c.Config.Hostname {
		t.Errorf("/etc/hostname under the pid's root = %q, want the container's %q", got, c.Config.Hostname)
	}
}

func TestAccessRefusals(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cli := dockertest.Client(t)
	scope := "access-" + dockertest.NewInstanceID()
	rt, spec := runningInstance(t, docker.Config{Scope: scope})
	echo := runtime.ExecSpec{Cmd: []string{"echo", "hi"}}

	check := func(what string, instanceID string, want gpurent.Code) {
		t.Helper()
		if _, err := rt.PID(ctx, instanceID); !gpurent.IsCode(err, want) {
			t.Errorf("PID of %s: %v, want %s", what, err, want)
		}
		if s, err := rt.Exec(ctx, instanceID, echo); !gpurent.IsCode(err, want) {
			if s != nil {
				_ = s.Close()
			}
			t.Errorf("Exec in %s: %v, want %s", what, err, want)
		}
	}
	check("an unknown instance", dockertest.NewInstanceID(), gpurent.CodeNotFound)
	check("a malformed id", "../etc", gpurent.CodeNotFound)

	// Another scope's instance on the same daemon is not ours.
	other, otherSpec := runningInstance(t, docker.Config{Scope: scope + "-other"})
	_ = other
	check("another scope's instance", otherSpec.InstanceID, gpurent.CodeNotFound)

	// A container with the right name that gpurent did not make.
	squat := dockertest.NewInstanceID()
	dockertest.Cleanup(t, squat)
	if _, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:       docker.ContainerName(squat),
		Config:     &container.Config{Image: spec.Image},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerStart(ctx, docker.ContainerName(squat), client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	check("an unmanaged container", squat, gpurent.CodeNotFound)

	if _, err := rt.Exec(ctx, spec.InstanceID, runtime.ExecSpec{}); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("Exec without a command: %v, want invalid", err)
	}

	// A stopped instance.
	if err := rt.Stop(ctx, spec.InstanceID); err != nil {
		t.Fatal(err)
	}
	check("a stopped instance", spec.InstanceID, gpurent.CodeConflict)
}
