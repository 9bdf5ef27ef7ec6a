//go:build linux

// Access (runtime.Access) is Linux only: it signals exec processes through
// pidfds and hands out host pids, which only mean something where the
// Engine runs on the agent's own kernel (not in Docker Desktop's VM).

package docker

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/execrelay"
)

var _ runtime.Access = (*Runtime)(nil)

// running returns the container of an instance that runs under this
// runtime. An instance that is absent, not managed by gpurent or managed by
// another scope is not found (the message does not say which); one that
// exists but does not run is a conflict.
func (r *Runtime) running(ctx context.Context, instanceID string) (container.InspectResponse, error) {
	if !validName(instanceID) {
		return container.InspectResponse{}, gpurent.Errorf(gpurent.CodeNotFound, "no instance %q on this host", instanceID)
	}
	c, found, err := r.inspect(ctx, r.name(instanceID))
	if err != nil {
		return container.InspectResponse{}, err
	}
	if !found || checkOwned(c, instanceID) != nil || !r.inScope(c) {
		return container.InspectResponse{}, gpurent.Errorf(gpurent.CodeNotFound, "no instance %s on this host", instanceID)
	}
	if c.State.Status != container.StateRunning || c.State.Paused || c.State.Restarting || c.State.Pid <= 0 {
		return container.InspectResponse{}, gpurent.Errorf(gpurent.CodeConflict, "instance %s is not running", instanceID)
	}
	return c, nil
}

// PID is the host pid of the instance's init process.
func (r *Runtime) PID(ctx context.Context, instanceID string) (int, error) {
	c, err := r.running(ctx, instanceID)
	if err != nil {
		return 0, err
	}
	return c.State.Pid, nil
}

// Exec starts a command in a running instance through the Engine's exec
// API (create, then a hijacked attach that starts it).
func (r *Runtime) Exec(ctx context.Context, instanceID string, spec runtime.ExecSpec) (runtime.ExecSession, error) {
	if len(spec.Cmd) == 0 || spec.Cmd[0] == "" {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "exec in instance %s: no command", instanceID)
	}
	c, err := r.running(ctx, instanceID)
	if err != nil {
		return nil, err
	}
	var size client.ConsoleSize
	if spec.TTY && spec.Cols > 0 && spec.Rows > 0 {
		size = client.ConsoleSize{Height: uint(spec.Rows), Width: uint(spec.Cols)}
	}
	// Without a terminal the command runs under the relay, which holds
	// the exec open until the agent has all of its output. A terminal's
	// bytes cannot be framed (the Engine's pty sits between).
	relay := !spec.TTY && c.Config.Labels[labelExecRelay] == "1"
	cmd := spec.Cmd
	if relay {
		cmd = append([]string{InitPath, execrelay.Command, "--"}, spec.Cmd...)
	}
	created, err := r.cli.ExecCreate(ctx, c.ID, client.ExecCreateOptions{
		User:         spec.User,
		TTY:          spec.TTY,
		ConsoleSize:  size,
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		Env:          spec.Env,
		WorkingDir:   spec.WorkDir,
		Cmd:          cmd,
	})
	if err != nil {
		return nil, wrap(err, "exec in instance %s", instanceID)
	}
	att, err := r.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{TTY: spec.TTY, ConsoleSize: size})
	if err != nil {
		return nil, wrap(err, "start exec in instance %s", instanceID)
	}
	s := &execSession{
		cli:      r.cli,
		id:       created.ID,
		instance: instanceID,
		tty:      spec.TTY,
		relay:    relay,
		att:      att,
		outDone:  make(chan struct{}),
		pidfd:    -1,
	}
	go s.copyOutput(spec.Stdout, spec.Stderr)
	if size.Width > 0 {
		// Engines before API 1.42 ignore the size given at create and
		// start: set it once the process has its terminal, before the
		// input flows, so that the first command typed sees it.
		s.initialResize(ctx, spec.Cols, spec.Rows)
	}
	go s.copyInput(spec.Stdin)
	return s, nil
}

// initialResize sets the terminal size of a just started exec, retrying
// while the Engine has not yet made the terminal.
func (s *execSession) initialResize(ctx context.Context, cols, rows uint16) {
	delay := time.Millisecond
	for range 12 {
		if s.Resize(ctx, cols, rows) == nil {
			return
		}
		select {
		case <-s.outDone:
			return
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// execSession is one command started by Exec.
type execSession struct {
	cli      *client.Client
	id       string // the Engine's exec id
	instance string
	tty      bool
	relay    bool // the command runs under the exec relay
	att      client.ExecAttachResult

	downMu sync.Mutex // one frame at a time to the relay

	outDone chan struct{} // closed when the output stream has ended

	mu       sync.Mutex
	pidfd    int // -1 until a signal needs it
	exited   bool
	exitCode int
	closed   bool
	killed   bool // a SIGKILL was sent: it ends the relay too, before its exit frame
}

func (s *execSession) copyOutput(stdout, stderr io.Writer) {
	defer close(s.outDone)
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	// An error here is a closed session or a writer gone away; the exit
	// code, read from the Engine, stays meaningful either way.
	switch {
	case s.tty:
		_, _ = io.Copy(stdout, s.att.Reader)
	case s.relay:
		d := &execrelay.Demux{Stdout: stdout, Stderr: stderr, OnExit: func(code int) {
			s.mu.Lock()
			s.exited, s.exitCode = true, code
			s.mu.Unlock()
			// All the output has come: the relay may go.
			_ = s.sendDown(execrelay.KindAck, nil)
		}}
		// The relay's own stderr is only ever its dying words.
		_, _ = stdcopy.StdCopy(d, stderr, s.att.Reader)
	default:
		_, _ = stdcopy.StdCopy(stdout, stderr, s.att.Reader)
	}
}

// sendDown writes one frame to the relay.
func (s *execSession) sendDown(kind byte, p []byte) error {
	s.downMu.Lock()
	defer s.downMu.Unlock()
	return execrelay.WriteFrame(s.att.Conn, kind, p)
}

func (s *execSession) copyInput(stdin io.Reader) {
	if s.relay {
		if stdin != nil {
			buf := make([]byte, execrelay.MaxPayload)
			for {
				n, err := stdin.Read(buf)
				if n > 0 && s.sendDown(execrelay.KindStdin, buf[:n]) != nil {
					return
				}
				if err != nil {
					break
				}
			}
		}
		// The stream stays open for the acknowledgement.
		_ = s.sendDown(execrelay.KindStdinEOF, nil)
		return
	}
	if stdin != nil {
		_, _ = io.Copy(s.att.Conn, stdin)
	}
	// A terminal is left open on EOF, as sshd leaves a pty open: closing
	// it would hang the command up.
	if !s.tty {
		_ = s.att.CloseWrite()
	}
}

// Resize changes the terminal size of a TTY session.
func (s *execSession) Resize(ctx context.Context, cols, rows uint16) error {
	if !s.tty {
		return gpurent.Errorf(gpurent.CodeInvalid, "exec in instance %s has no terminal to resize", s.instance)
	}
	if cols == 0 || rows == 0 {
		return gpurent.Errorf(gpurent.CodeInvalid, "terminal size %dx%d is not usable", cols, rows)
	}
	_, err := s.cli.ExecResize(ctx, s.id, client.ExecResizeOptions{Height: uint(rows), Width: uint(cols)})
	if err != nil {
		return wrap(err, "resize the terminal of an exec in instance %s", s.instance)
	}
	return nil
}

// Signal delivers sig through a pidfd of the exec's host process, opened
// once the Engine confirms that pid runs the exec, so a pid reused after
// the command ended is never signalled.
func (s *execSession) Signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exited || s.closed {
		return nil
	}
	if s.pidfd < 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		fd, alive, err := s.openPidfd(ctx)
		if err != nil || !alive {
			return err
		}
		s.pidfd = fd
	}
	// The relay passes every signal on to the command but SIGKILL, which
	// kills it, and the command with it (its parent-death signal).
	s.killed = s.killed || sig == syscall.SIGKILL
	err := unix.PidfdSendSignal(s.pidfd, sig, nil, 0)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return gpurent.WrapError(gpurent.CodeInternal, err, "signal %v to an exec in instance %s", sig, s.instance)
	}
	return nil
}

// openPidfd opens a pidfd of the exec's process; alive is false when the
// command has ended (or not started a process at all).
func (s *execSession) openPidfd(ctx context.Context) (fd int, alive bool, err error) {
	// The attach answers before the Engine starts the process: until
	// then the exec has no pid (the Engine may already call it running).
	var res client.ExecInspectResult
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		var err error
		res, err = s.cli.ExecInspect(ctx, s.id, client.ExecInspectOptions{})
		if err != nil {
			return -1, false, wrap(err, "inspect an exec in instance %s", s.instance)
		}
		if res.PID > 0 {
			break
		}
		select {
		case <-s.outDone: // it ended without ever running
			return -1, false, nil
		case <-ctx.Done():
			return -1, false, gpurent.WrapError(gpurent.CodeUnavailable, ctx.Err(), "wait for an exec in instance %s to start", s.instance)
		case <-time.After(delay):
		}
	}
	if !res.Running {
		return -1, false, nil
	}
	fd, err = unix.PidfdOpen(res.PID, 0)
	if errors.Is(err, unix.ESRCH) {
		return -1, false, nil
	}
	if err != nil {
		return -1, false, gpurent.WrapError(gpurent.CodeInternal, err, "open the process of an exec in instance %s", s.instance)
	}
	// The pid named the exec before the pidfd was opened; it still does
	// after, so the pidfd holds the exec's process, not a successor's.
	again, err := s.cli.ExecInspect(ctx, s.id, client.ExecInspectOptions{})
	if err != nil || !again.Running || again.PID != res.PID {
		_ = unix.Close(fd)
		if err != nil {
			return -1, false, wrap(err, "inspect an exec in instance %s", s.instance)
		}
		return -1, false, nil
	}
	return fd, true, nil
}

// Wait waits for the output to end, then for the Engine to record the exit
// code, which it does a moment after the stream closes.
func (s *execSession) Wait(ctx context.Context) (int, error) {
	select {
	case <-s.outDone:
	case <-ctx.Done():
		return 0, gpurent.WrapError(gpurent.CodeUnavailable, ctx.Err(), "wait for an exec in instance %s", s.instance)
	}
	s.mu.Lock()
	if s.exited {
		code := s.exitCode
		s.mu.Unlock()
		return code, nil
	}
	cut := s.relay && !s.closed && !s.killed
	s.mu.Unlock()
	if cut {
		// The relay sends the exit code after the last byte of output and
		// stays until it is acknowledged: a stream that ended without it
		// was cut (or the relay killed), and its output may be short. Say
		// so rather than pass a short output off with an exit status.
		return 0, gpurent.Errorf(gpurent.CodeUnavailable,
			"exec in instance %s: the command's output ended before its exit status (the relay was killed, or the Engine cut the stream)", s.instance)
	}
	delay := time.Millisecond
	for {
		res, err := s.cli.ExecInspect(ctx, s.id, client.ExecInspectOptions{})
		if err != nil {
			return 0, wrap(err, "read the exit code of an exec in instance %s", s.instance)
		}
		if !res.Running {
			s.mu.Lock()
			s.exited, s.exitCode = true, res.ExitCode
			if s.pidfd >= 0 {
				_ = unix.Close(s.pidfd)
				s.pidfd = -1
			}
			s.mu.Unlock()
			return res.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return 0, gpurent.WrapError(gpurent.CodeUnavailable, ctx.Err(), "wait for an exec in instance %s", s.instance)
		case <-time.After(delay):
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// Close hangs a running command up and releases the attach connection.
func (s *execSession) Close() error {
	select {
	case <-s.outDone:
	default:
		// Still streaming: the command most likely runs.
		_ = s.Signal(syscall.SIGHUP)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.pidfd >= 0 {
		_ = unix.Close(s.pidfd)
		s.pidfd = -1
	}
	s.mu.Unlock()
	s.att.Close()
	return nil
}

var _ runtime.Installer = (*Runtime)(nil)

// InstallFile copies f into a running instance through the Engine's
// archive API (which resolves the path inside the container's root),
// unless a regular file of f.Size bytes is already at f.Path.
func (r *Runtime) InstallFile(ctx context.Context, instanceID string, f runtime.File) error {
	if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
		return gpurent.Errorf(gpurent.CodeInvalid, "install into instance %s: %q is not a clean absolute file path", instanceID, f.Path)
	}
	c, err := r.running(ctx, instanceID)
	if err != nil {
		return err
	}
	st, err := r.cli.ContainerStatPath(ctx, c.ID, client.ContainerStatPathOptions{Path: f.Path})
	if err == nil && st.Stat.Mode.IsRegular() && st.Stat.Size == f.Size {
		return nil
	}
	src, err := f.Open()
	if err != nil {
		return gpurent.WrapError(gpurent.CodeInternal, err, "install into instance %s: open the file", instanceID)
	}
	defer src.Close()
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		dir := strings.TrimPrefix(path.Dir(f.Path), "/")
		now := time.Now()
		err := error(nil)
		if dir != "" {
			err = tw.WriteHeader(&tar.Header{Name: dir + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: now})
		}
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(f.Path, "/"), Typeflag: tar.TypeReg, Mode: f.Mode & 0o777, Size: f.Size, ModTime: now})
		}
		if err == nil {
			_, err = io.CopyN(tw, src, f.Size)
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	_, err = r.cli.CopyToContainer(ctx, c.ID, client.CopyToContainerOptions{DestinationPath: "/", Content: pr})
	_ = pr.CloseWithError(io.ErrClosedPipe) // ends the writer if the Engine stopped reading
	if err != nil {
		return wrap(err, "install %s into instance %s", f.Path, instanceID)
	}
	return nil
}
