package execrelay_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/execrelay"
)

// agent is the agent's end of a relay run in this process: it feeds
// frames down and demultiplexes what comes up.
type agent struct {
	down    *io.PipeWriter // to the relay's stdin
	stdout  lockedBuffer
	stderr  lockedBuffer
	exit    chan int
	ended   chan struct{} // the relay's Main returned
	code    int
	mainErr error
	mu      sync.Mutex // one frame at a time down
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start runs Main on argv; ack says whether the agent acknowledges the
// exit frame at once (false: the test does it).
func start(t *testing.T, ack bool, argv ...string) *agent {
	t.Helper()
	downR, downW := io.Pipe()
	upR, upW := io.Pipe()
	a := &agent{down: downW, exit: make(chan int, 1), ended: make(chan struct{})}
	go func() {
		defer close(a.ended)
		a.code, a.mainErr = execrelay.Main(append([]string{"--"}, argv...), downR, upW)
		_ = upW.Close()
	}()
	d := &execrelay.Demux{Stdout: &a.stdout, Stderr: &a.stderr, OnExit: func(code int) {
		a.exit <- code
		if ack {
			a.send(t, execrelay.KindAck, nil)
		}
	}}
	go func() {
		if _, err := io.Copy(d, upR); err != nil {
			t.Errorf("the up stream: %v", err)
		}
	}()
	t.Cleanup(func() {
		_ = downW.Close()
		select {
		case <-a.ended:
		case <-time.After(time.Minute):
			t.Error("the relay did not end after its down stream closed")
		}
	})
	return a
}

func (a *agent) send(t *testing.T, kind byte, p []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := execrelay.WriteFrame(a.down, kind, p); err != nil {
		t.Errorf("send %q: %v", kind, err)
	}
}

func (a *agent) waitExit(t *testing.T) int {
	t.Helper()
	select {
	case c := <-a.exit:
		return c
	case <-time.After(time.Minute):
		t.Fatal("no exit frame")
		return 0
	}
}

// finish waits for the exit frame and the relay's end, and returns the
// command's stdout; the exit code must be want.
func (a *agent) finish(t *testing.T, want int) string {
	t.Helper()
	if code := a.waitExit(t); code != want {
		t.Errorf("exit %d, want %d", code, want)
	}
	a.waitEnd(t)
	return a.stdout.String()
}

func (a *agent) waitEnd(t *testing.T) {
	t.Helper()
	select {
	case <-a.ended:
	case <-time.After(time.Minute):
		t.Fatal("the relay did not end")
	}
}

func requireSh(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Fatalf("these tests run commands with sh: %v", err)
	}
}

// TestRelayCarriesStreamsAndExitCode: stdin reaches the command, stdout
// and stderr come back apart, and the exit code is the command's.
func TestRelayCarriesStreamsAndExitCode(t *testing.T) {
	requireSh(t)
	a := start(t, true, "sh", "-c", "wc -c; echo to-err >&2; exit 3")
	input := bytes.Repeat([]byte("x"), 100_000)
	for p := input; len(p) > 0; {
		n := min(len(p), 7000)
		a.send(t, execrelay.KindStdin, p[:n])
		p = p[n:]
	}
	a.send(t, execrelay.KindStdinEOF, nil)
	if code := a.waitExit(t); code != 3 {
		t.Errorf("exit frame %d, want 3", code)
	}
	a.waitEnd(t)
	if a.code != 3 || a.mainErr != nil {
		t.Errorf("Main = %d, %v; want 3", a.code, a.mainErr)
	}
	if got := strings.TrimSpace(a.stdout.String()); got != "100000" {
		t.Errorf("stdout %q, want the 100000 bytes counted", got)
	}
	if a.stderr.String() != "to-err\n" {
		t.Errorf("stderr %q", a.stderr.String())
	}
}

// TestRelayWaitsForTheAck: a command's output is all there and the relay
// stays until the agent acknowledges the exit, however long the agent
// takes (the Engine cuts an exec's output two seconds after its process
// exits: the relay's process must outlive the reading).
func TestRelayWaitsForTheAck(t *testing.T) {
	requireSh(t)
	a := start(t, false, "sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' y")
	if code := a.waitExit(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if n := len(a.stdout.String()); n != 3_000_000 {
		t.Errorf("%d bytes before the exit frame, want 3000000", n)
	}
	select {
	case <-a.ended:
		t.Fatal("the relay ended before the acknowledgement")
	case <-time.After(100 * time.Millisecond):
		// The relay is still there. (A relay that did not wait could
		// end later than this on a loaded machine: then this check
		// passes when it should not, but it never fails a good relay.)
	}
	a.send(t, execrelay.KindAck, nil)
	a.waitEnd(t)
}

// TestRelayCommandNotFound: a missing command is exit 127 with the reason
// on stderr, as a shell says it.
func TestRelayCommandNotFound(t *testing.T) {
	a := start(t, true, "/no/such/command")
	if code := a.waitExit(t); code != 127 {
		t.Errorf("exit %d, want 127", code)
	}
	a.waitEnd(t)
	if !strings.Contains(a.stderr.String(), "/no/such/command") {
		t.Errorf("stderr %q does not name the command", a.stderr.String())
	}
}

// TestRelayForwardsSignals: a signal to the relay reaches the command, and
// a command a signal ended reports 128+n.
func TestRelayForwardsSignals(t *testing.T) {
	requireSh(t)
	// The relay runs in its own process here, as it does in an instance,
	// so that the signal is its alone.
	bin := relayBinary(t)
	cmd := exec.Command(bin, "--", "sh", "-c", "echo ready; exec sleep 60")
	down, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	up, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var out lockedBuffer
	ready := make(chan struct{})
	var once sync.Once
	exitCode := make(chan int, 1)
	d := &execrelay.Demux{Stdout: writerFunc(func(p []byte) (int, error) {
		n, _ := out.Write(p)
		if strings.Contains(out.String(), "ready\n") {
			once.Do(func() { close(ready) })
		}
		return n, nil
	}), Stderr: io.Discard, OnExit: func(code int) {
		exitCode <- code
		_ = execrelay.WriteFrame(down, execrelay.KindAck, nil)
	}}
	go func() { _, _ = io.Copy(d, up) }()
	select {
	case <-ready:
	case <-time.After(time.Minute):
		t.Fatal("the command never started")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exitCode:
		if code != 128+int(syscall.SIGTERM) {
			t.Errorf("exit %d, want %d (SIGTERM)", code, 128+int(syscall.SIGTERM))
		}
	case <-time.After(time.Minute):
		t.Fatal("the command did not end on the forwarded SIGTERM")
	}
	if err := cmd.Wait(); err == nil || cmd.ProcessState.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Errorf("the relay exited with %v, want status %d", err, 128+int(syscall.SIGTERM))
	}
}

// TestRelayLeavesABackgroundProcess: a process the command left behind
// holding its output does not keep the exec open for ever (the Engine
// does not either); what the command wrote before it exited is there.
func TestRelayLeavesABackgroundProcess(t *testing.T) {
	requireSh(t)
	a := start(t, true, "sh", "-c", "echo before; (sleep 600 &) ; echo after")
	if out := a.finish(t, 0); out != "before\nafter\n" {
		t.Errorf("stdout %q", out)
	}
}

// TestRelayEndsDespiteAChattyBackgroundProcess: a process left behind
// that writes without pause cannot hold the session open either: the
// relay stops reading its output a bounded time and amount after the
// command's exit.
func TestRelayEndsDespiteAChattyBackgroundProcess(t *testing.T) {
	requireSh(t)
	a := start(t, true, "sh", "-c", "echo first; (while :; do echo chatter; done) & echo last")
	out := a.finish(t, 0)
	if !strings.HasPrefix(out, "first\n") || !strings.Contains(out, "last\n") {
		t.Errorf("stdout begins %q, want first and last", out[:min(len(out), 40)])
	}
}

// TestRelayDropsInputTheCommandDoesNotRead: input beyond what the command
// reads neither blocks the relay nor reaches anything.
func TestRelayDropsInputTheCommandDoesNotRead(t *testing.T) {
	requireSh(t)
	a := start(t, true, "sh", "-c", "head -c 5 >/dev/null; echo done")
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		big := bytes.Repeat([]byte("z"), execrelay.MaxPayload)
		for range 64 { // 2 MiB, far more than a pipe holds
			// The relay may be gone (acknowledged) before all is sent,
			// as an agent's input can outlast the command.
			if execrelay.WriteFrame(a.down, execrelay.KindStdin, big) != nil {
				return
			}
		}
		_ = execrelay.WriteFrame(a.down, execrelay.KindStdinEOF, nil)
	}()
	out := a.finish(t, 0)
	_ = a.down.Close()
	<-sent
	if out != "done\n" {
		t.Errorf("stdout %q", out)
	}
}

// TestDemuxInAnyPieces: frames split at any byte boundaries come out the
// same.
func TestDemuxInAnyPieces(t *testing.T) {
	var stream bytes.Buffer
	var wantOut, wantErr bytes.Buffer
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		p := bytes.Repeat([]byte{byte('a' + i%26)}, r.IntN(execrelay.MaxPayload+1))
		kind := execrelay.KindStdout
		want := &wantOut
		if i%3 == 0 {
			kind, want = execrelay.KindStderr, &wantErr
		}
		if err := execrelay.WriteFrame(&stream, kind, p); err != nil {
			t.Fatal(err)
		}
		want.Write(p)
	}
	if err := execrelay.WriteFrame(&stream, execrelay.KindExit, execrelay.ExitPayload(-1)); err != nil {
		t.Fatal(err)
	}
	var gotOut, gotErr bytes.Buffer
	exits := 0
	d := &execrelay.Demux{Stdout: &gotOut, Stderr: &gotErr, OnExit: func(int) { exits++ }}
	b := stream.Bytes()
	for len(b) > 0 {
		n := min(len(b), 1+r.IntN(70_000))
		if _, err := d.Write(b[:n]); err != nil {
			t.Fatal(err)
		}
		b = b[n:]
	}
	code, ok := d.Exit()
	if !ok || code != -1 || exits != 1 {
		t.Errorf("exit %d %v after %d calls, want -1 once", code, ok, exits)
	}
	if !bytes.Equal(gotOut.Bytes(), wantOut.Bytes()) || !bytes.Equal(gotErr.Bytes(), wantErr.Bytes()) {
		t.Errorf("demultiplexed %d/%d bytes, want %d/%d", gotOut.Len(), gotErr.Len(), wantOut.Len(), wantErr.Len())
	}
}

// TestDemuxRefusesBadFrames: what a hostile container could send.
func TestDemuxRefusesBadFrames(t *testing.T) {
	for name, b := range map[string][]byte{
		"unknown kind":     {'?', 0, 0, 0, 1, 'x'},
		"oversized":        {'o', 0, 1, 0, 1},
		"short exit":       {'x', 0, 0, 0, 1, 0},
		"after the exit":   append([]byte{'x', 0, 0, 0, 4, 0, 0, 0, 0}, 'o', 0, 0, 0, 0),
		"a down frame up":  {'a', 0, 0, 0, 0},
		"huge length word": {'e', 0xff, 0xff, 0xff, 0xff},
	} {
		d := &execrelay.Demux{Stdout: io.Discard, Stderr: io.Discard}
		if _, err := d.Write(b); !errors.Is(err, execrelay.ErrFrame) {
			t.Errorf("%s: %v, want ErrFrame", name, err)
		}
	}
}

func FuzzDemux(f *testing.F) {
	var seed bytes.Buffer
	_ = execrelay.WriteFrame(&seed, execrelay.KindStdout, []byte("hello"))
	_ = execrelay.WriteFrame(&seed, execrelay.KindExit, execrelay.ExitPayload(7))
	f.Add(seed.Bytes(), 3)
	f.Add([]byte{'o', 0, 0, 0xff, 0xff}, 1)
	f.Fuzz(func(t *testing.T, b []byte, split int) {
		in := len(b)
		var out bytes.Buffer
		d := &execrelay.Demux{Stdout: &out, Stderr: &out}
		if split <= 0 {
			split = 1
		}
		for len(b) > 0 {
			n := min(len(b), split)
			if _, err := d.Write(b[:n]); err != nil {
				if !errors.Is(err, execrelay.ErrFrame) {
					t.Fatalf("error %v is not ErrFrame", err)
				}
				return
			}
			b = b[n:]
		}
		if out.Len() > in {
			t.Fatalf("%d bytes out of %d in", out.Len(), in)
		}
	})
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{'i', 0, 0, 0, 2, 'h', 'i'})
	f.Add([]byte{'a', 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		buf := make([]byte, execrelay.MaxPayload)
		r := bytes.NewReader(b)
		for {
			_, p, err := execrelay.ReadFrame(r, buf)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, execrelay.ErrFrame) {
					t.Fatalf("error %v", err)
				}
				return
			}
			if len(p) > execrelay.MaxPayload {
				t.Fatal("oversized payload")
			}
		}
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// relayBinary builds a program that is Main alone (testdata/relay).
func relayBinary(t *testing.T) string {
	t.Helper()
	bin := t.TempDir() + "/relay"
	out, err := exec.Command("go", "build", "-o", bin, "./testdata/relay").CombinedOutput()
	if err != nil {
		t.Fatalf("build the relay: %v\n%s", err, out)
	}
	return bin
}
