package execrelay

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// After the command exits, the relay reads its pipes for drainAfter more:
// what the command wrote before it exited is in the pipe already and read
// at once; only a process it left behind holding the pipe (`cmd &`) writes
// later, and the relay does not wait for it for ever, as the Engine does
// not. Past drainAfter it still takes what is in the pipe, up to
// drainLate bytes, so a starved read never loses the command's own output,
// and a background writer that never stops cannot hold the session open.
const (
	drainAfter = 2 * time.Second
	drainLate  = 1 << 20
)

// forwarded are the signals the relay passes on to the command: those an
// SSH client can send, and the ones a runtime's stop uses.
var forwarded = []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGWINCH, syscall.SIGCONT, syscall.SIGTSTP}

// Main is `exec-relay -- COMMAND [ARG...]` with the exec's standard
// streams: it runs the command, relays as the package describes, and
// returns the command's exit code (128+n when signal n ended it) once the
// agent acknowledged it or went away.
func Main(args []string, stdin io.Reader, stdout io.Writer) (int, error) {
	if len(args) < 2 || args[0] != "--" {
		return 2, fmt.Errorf("usage: %s -- COMMAND [ARG...]", Command)
	}
	// The command dies with the relay (a SIGKILL, which the relay cannot
	// pass on, or the OOM killer) through its parent-death signal, which
	// Linux ties to the thread that started it: this one, kept.
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	r := &relay{up: stdout, acked: make(chan struct{})}
	code := r.run(args[1:], stdin)
	if err := r.send(KindExit, ExitPayload(code)); err != nil {
		return code, nil // the agent is gone: nothing to wait for
	}
	<-r.acked
	return code, nil
}

type relay struct {
	mu sync.Mutex // one frame at a time up
	up io.Writer

	ackOnce sync.Once
	acked   chan struct{} // closed by the ack, or the end of the down stream
}

func (r *relay) send(kind byte, p []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return WriteFrame(r.up, kind, p)
}

func (r *relay) ack() { r.ackOnce.Do(func() { close(r.acked) }) }

// run runs the command and relays its streams until it has exited and its
// output is drained; it returns the exit code to report.
func (r *relay) run(argv []string, stdin io.Reader) int {
	// A command that cannot start is reported on its stderr, with the
	// code a shell gives (127 not found, else 126); the agent's frames are
	// still read, for the acknowledgement.
	failed := func(err error) int {
		go r.down(stdin, &onceCloser{})
		_ = r.send(KindStderr, []byte(Command+": "+err.Error()+"\n"))
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = childAttr()
	in, err := cmd.StdinPipe()
	if err != nil {
		return failed(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return failed(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return failed(err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		_ = outW.Close()
		_ = errW.Close()
		return failed(err)
	}
	_ = outW.Close()
	_ = errW.Close()
	cin := &onceCloser{w: in}
	go r.down(stdin, cin)
	exited := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-exited:
				return
			}
		}
	}()
	var pumps sync.WaitGroup
	pumps.Add(2)
	go r.pump(outR, KindStdout, exited, &pumps)
	go r.pump(errR, KindStderr, exited, &pumps)
	state, err := cmd.Process.Wait()
	close(exited)
	// Its input ends with it, even when a process it left behind holds
	// the pipe without reading: a write blocked there would keep the
	// relay from reading the acknowledgement.
	cin.close()
	// A pipe blocked in a read without a deadline gets one now.
	_ = outR.SetReadDeadline(time.Now().Add(drainAfter))
	_ = errR.SetReadDeadline(time.Now().Add(drainAfter))
	pumps.Wait()
	if err != nil {
		return 126
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return state.ExitCode()
}

// pump sends what the command writes to f as frames of kind until f ends
// or, once the command has exited, as drainAfter and drainLate say.
func (r *relay) pump(f *os.File, kind byte, exited <-chan struct{}, done *sync.WaitGroup) {
	defer done.Done()
	defer f.Close()
	buf := make([]byte, MaxPayload)
	armed, expired := false, false
	late := 0 // bytes read past the deadline
	for {
		if !armed {
			select {
			case <-exited:
				armed = true
				_ = f.SetReadDeadline(time.Now().Add(drainAfter))
			default:
			}
		}
		n, err := f.Read(buf)
		if n > 0 {
			if expired {
				late += n
			}
			if r.send(kind, buf[:n]) != nil {
				return // the agent is gone; the command still runs to its end
			}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// Past a deadline every read fails at once, data or not:
			// take what is in the pipe now, a bounded amount, each read
			// under a short deadline of its own.
			expired = true
			if pending(f) && late < drainLate {
				_ = f.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
				continue
			}
			return
		}
		if err != nil {
			return
		}
	}
}

// down reads the agent's frames: stdin for the command (in; nil when it
// has none), the end of stdin, the acknowledgement. The end of the stream
// (the agent gone) closes stdin and counts as the acknowledgement.
func (r *relay) down(stdin io.Reader, in *onceCloser) {
	defer r.ack()
	defer in.close()
	buf := make([]byte, MaxPayload)
	for {
		kind, p, err := ReadFrame(stdin, buf)
		if err != nil {
			return
		}
		switch kind {
		case KindStdin:
			if _, err := in.write(p); err != nil {
				// The command stopped reading (it exited, or closed its
				// stdin): the rest of the input is dropped, as a pipe
				// would drop it.
				in.close()
			}
		case KindStdinEOF:
			in.close()
		case KindAck:
			r.ack()
		default:
			return
		}
	}
}

// onceCloser is the command's stdin, closed once from either side.
type onceCloser struct {
	w    io.WriteCloser // nil: no command to feed
	once sync.Once
	shut atomic.Bool
}

func (c *onceCloser) write(p []byte) (int, error) {
	if c.w == nil || c.shut.Load() {
		return len(p), nil // dropped: nothing reads it any more
	}
	return c.w.Write(p)
}

func (c *onceCloser) close() {
	c.once.Do(func() {
		c.shut.Store(true)
		if c.w != nil {
			_ = c.w.Close()
		}
	})
}
