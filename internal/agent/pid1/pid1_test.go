package pid1_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpurent/gpurent/internal/agent/pid1"
)

// The tests run the init in a child process of the test binary, made a
// child subreaper so that orphans come to it as they come to a
// container's PID 1.
const helperEnv = "GPURENT_PID1_TEST_HELPER"

func TestMain(m *testing.M) {
	if status := os.Getenv(helperEnv); status != "" {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			os.Exit(90)
		}
		var cmd []string
		if len(os.Args) > 1 {
			cmd = os.Args[1:]
		}
		if err := pid1.Run(context.Background(), pid1.Config{Command: cmd, StatusPath: status}); err != nil {
			os.Exit(91)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// initProc is one init under test.
type initProc struct {
	cmd    *exec.Cmd
	status string
	out    *bytes.Buffer
	done   chan error
}

func startInit(t *testing.T, command ...string) *initProc {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &initProc{status: filepath.Join(t.TempDir(), "run", "status.json"), out: &bytes.Buffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(self, command...)
	p.cmd.Env = append(os.Environ(), helperEnv+"="+p.status)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// waitStatus waits (generously: a loaded machine is slow) for the
// status file to satisfy ok.
func (p *initProc) waitStatus(t *testing.T, what string, ok func(pid1.Status) bool) pid1.Status {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last pid1.Status
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(p.status); err == nil {
			st, err := pid1.ParseStatus(b)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if last = st; ok(st) {
				return st
			}
		}
		select {
		case err := <-p.done:
			t.Fatalf("%s: the init ended (%v) with status %+v; output:\n%s", what, err, last, p.out)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("%s: status stayed %+v; output:\n%s", what, last, p.out)
	return last
}

// stop sends SIGTERM and waits for the init to end.
func (p *initProc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("the init ended with %v; output:\n%s", err, p.out)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the init did not end after SIGTERM; output:\n%s", p.out)
	}
}

func exited(st pid1.Status) bool { return st.State == pid1.StateExited }

func TestStartupCommandExitKeepsTheInitUp(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		code   int
		signal string
	}{
		{"exit 0", "exit 0", 0, ""},
		{"exit 1", "echo failing >&2; exit 1", 1, ""},
		{"killed", "kill -9 $$", -1, "killed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startInit(t, "/bin/sh", "-c", tc.script)
			st := p.waitStatus(t, "the startup command ended", exited)
			if st.ExitCode == nil || *st.ExitCode != tc.code || st.Signal != tc.signal || st.ExitedAt == nil || st.StartedAt == nil {
				t.Fatalf("status %+v, want code %d signal %q", st, tc.code, tc.signal)
			}
			// Still up: the instance is a machine, whatever its command did.
			select {
			case err := <-p.done:
				t.Fatalf("the init ended (%v) when its startup command did", err)
			default:
			}
			if err := p.cmd.Process.Signal(syscall.Signal(0)); err != nil {
				t.Fatalf("the init is gone: %v", err)
			}
			p.stop(t)
			if !strings.Contains(p.out.String(), "the instance stays up") {
				t.Errorf("the log does not say the instance stays up:\n%s", p.out)
			}
		})
	}
}

// TestStopIsPassedOnAndWaitedFor: a startup command that traps SIGTERM
// finishes what it does before the init ends.
func TestStopIsPassedOnAndWaitedFor(t *testing.T) {
	dir := t.TempDir()
	ready, done := filepath.Join(dir, "ready"), filepath.Join(dir, "done")
	script := `trap 'echo saved > ` + done + `; exit 0' TERM; touch ` + ready + `; while :; do sleep 0.1; done`
	p := startInit(t, "/bin/sh", "-c", script)
	p.waitStatus(t, "running", func(st pid1.Status) bool { return st.State == pid1.StateRunning })
	waitFile(t, ready)
	p.stop(t)
	if b, err := os.ReadFile(done); err != nil || string(b) != "saved\n" {
		t.Fatalf("the startup command did not finish on SIGTERM: %q %v\n%s", b, err, p.out)
	}
	st, err := readStatus(p.status)
	if err != nil || !exited(st) || st.ExitCode == nil || *st.ExitCode != 0 {
		t.Fatalf("after the stop: %+v %v", st, err)
	}
}

// TestOrphansAreReaped: a startup command that leaves a background child
// behind and exits; the child comes to the init, which reaps it, so no
// zombie stays.
func TestOrphansAreReaped(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "orphan.pid")
	gone := filepath.Join(dir, "go")
	script := `(while [ ! -e ` + gone + ` ]; do sleep 0.05; done) & echo $! > ` + pidFile + `; exit 0`
	p := startInit(t, "/bin/sh", "-c", script)
	p.waitStatus(t, "the startup command ended", exited)
	waitFile(t, pidFile)
	b, _ := os.ReadFile(pidFile)
	orphan, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if pp := parentOf(t, orphan); pp != p.cmd.Process.Pid {
		t.Fatalf("the orphan's parent is %d, not the init %d", pp, p.cmd.Process.Pid)
	}
	if err := os.WriteFile(gone, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat("/proc/" + strconv.Itoa(orphan)); os.IsNotExist(err) {
			break // reaped: not even a zombie
		}
		if time.Now().After(deadline) {
			t.Fatalf("the orphan %d was never reaped (state %q)", orphan, procState(orphan))
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.stop(t)
}

func TestNoStartupCommand(t *testing.T) {
	p := startInit(t)
	p.waitStatus(t, "no command", func(st pid1.Status) bool { return st.State == pid1.StateNone })
	p.stop(t)
}

func TestStartupCommandThatCannotStart(t *testing.T) {
	p := startInit(t, "/no/such/program")
	st := p.waitStatus(t, "failed", func(st pid1.Status) bool { return st.State == pid1.StateFailed })
	if !strings.Contains(st.Error, "no such file") {
		t.Errorf("error %q", st.Error)
	}
	if err := p.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the init is gone: %v", err)
	}
	p.stop(t)
}

func TestParseStatusRefuses(t *testing.T) {
	for _, b := range []string{``, `{`, `{"state":"dancing"}`, `{"state":"exited","signal":"` + strings.Repeat("x", 100) + `"}`,
		`{"state":"none"}` + strings.Repeat(" ", 70<<10)} {
		if _, err := pid1.ParseStatus([]byte(b)); err == nil {
			t.Errorf("ParseStatus(%.40q) accepted", b)
		}
	}
}

func FuzzParseStatus(f *testing.F) {
	f.Add([]byte(`{"state":"exited","exit_code":3,"pid":7,"command":["/bin/sh"]}`))
	f.Add([]byte(`{"state":"failed","error":"exec: no such file"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := pid1.ParseStatus(b)
		if err != nil {
			return
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "s.json")
		if err := pid1.WriteStatus(path, st); err != nil {
			t.Fatal(err)
		}
		again, err := readStatus(path)
		if err != nil || again.State != st.State || len(again.Command) != len(st.Command) {
			t.Fatalf("round trip: %+v -> %+v (%v)", st, again, err)
		}
	})
}

func readStatus(path string) (pid1.Status, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return pid1.Status{}, err
	}
	return pid1.ParseStatus(b)
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// parentOf reads a process's parent from /proc.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ppid ...: comm may hold spaces, so cut at its ')'.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	pp, err := strconv.Atoi(fields[1])
	if err != nil {
		t.Fatal(err)
	}
	return pp
}

func procState(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return string(b[i+2 : i+3])
	}
	return "?"
}

// TestParseArgs: the init's own flags, then the startup command with its
// flags untouched.
func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		status  string
		command []string
		bad     bool
	}{
		{args: nil},
		{args: []string{"--status", "/s.json"}, status: "/s.json"},
		{args: []string{"--status=/s.json", "--", "/bin/sh", "-c", "exit 3"}, status: "/s.json", command: []string{"/bin/sh", "-c", "exit 3"}},
		{args: []string{"--status", "/s", "--", "--status", "x"}, status: "/s", command: []string{"--status", "x"}},
		{args: []string{"sleep", "--status", "1"}, command: []string{"sleep", "--status", "1"}},
		{args: []string{"--"}, command: []string{}},
		{args: []string{"--status"}, bad: true},
	} {
		cfg, err := pid1.ParseArgs(tc.args)
		if (err != nil) != tc.bad {
			t.Fatalf("%q: err %v", tc.args, err)
		}
		if cfg.StatusPath != tc.status || strings.Join(cfg.Command, "|") != strings.Join(tc.command, "|") {
			t.Fatalf("%q: got status %q command %q", tc.args, cfg.StatusPath, cfg.Command)
		}
	}
}
