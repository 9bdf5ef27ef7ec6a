package access

import (
	"context"
	"io"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// loginShell starts in the home directory and prefers bash when the image
// has it, as a login shell.
const loginShell = `cd 2>/dev/null; if [ -x /bin/bash ]; then exec /bin/bash -l; fi; exec /bin/sh -l`

// runCommand starts in the home directory, as sshd does, then runs the
// command ($1) with sh -c in place of this shell.
const runCommand = `cd 2>/dev/null; exec /bin/sh -c "$1"`

// hangupGrace is how long a closed session waits for its command to end
// after the hangup.
const hangupGrace = 5 * time.Second

// signalByName maps the signal names of RFC 4254 section 6.10.
func signalByName(name string) (syscall.Signal, bool) {
	switch name {
	case "ABRT":
		return syscall.SIGABRT, true
	case "ALRM":
		return syscall.SIGALRM, true
	case "FPE":
		return syscall.SIGFPE, true
	case "HUP":
		return syscall.SIGHUP, true
	case "ILL":
		return syscall.SIGILL, true
	case "INT":
		return syscall.SIGINT, true
	case "KILL":
		return syscall.SIGKILL, true
	case "PIPE":
		return syscall.SIGPIPE, true
	case "QUIT":
		return syscall.SIGQUIT, true
	case "SEGV":
		return syscall.SIGSEGV, true
	case "TERM":
		return syscall.SIGTERM, true
	case "USR1":
		return syscall.SIGUSR1, true
	case "USR2":
		return syscall.SIGUSR2, true
	}
	return 0, false
}

func signalName(sig syscall.Signal) string {
	for _, n := range []string{"ABRT", "ALRM", "FPE", "HUP", "ILL", "INT", "KILL", "PIPE", "QUIT", "SEGV", "TERM", "USR1", "USR2"} {
		if s, _ := signalByName(n); s == sig {
			return n
		}
	}
	return ""
}

// envAllowed is the environment a client may pass: locale and terminal.
func envAllowed(name, value string) bool {
	if name != "LANG" && name != "TERM" && !strings.HasPrefix(name, "LC_") {
		return false
	}
	for _, c := range name {
		if (c < 'A' || c > 'Z') && c != '_' {
			return false
		}
	}
	if len(value) > 256 {
		return false
	}
	for _, c := range value {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// Payloads of the session requests (RFC 4254 section 6).
type ptyRequestMsg struct {
	Term                      string
	Cols, Rows, Width, Height uint32
	Modes                     string
}

type windowChangeMsg struct {
	Cols, Rows, Width, Height uint32
}

type stringMsg struct{ Value string }

type envMsg struct{ Name, Value string }

type exitStatusMsg struct{ Status uint32 }

type exitSignalMsg struct {
	Signal     string
	CoreDumped bool
	Error      string
	Lang       string
}

// session is one "session" channel: at most one shell, command or sftp.
type session struct {
	c   *conn
	raw ssh.Channel
	ch  *meteredChannel
	// ctx ends shortly after the channel closes: it bounds the wait for
	// the command's end.
	ctx    context.Context
	cancel context.CancelFunc

	// replied closes once the request that started the command has been
	// answered: the command's output and exit status wait for it, so the
	// client never sees them before the answer.
	replied chan struct{}
	// done closes when the command has ended and its exit was reported.
	done chan struct{}

	mu      sync.Mutex
	env     []string
	tty     bool
	term    string
	cols    uint16
	rows    uint16
	started bool
	exec    runtime.ExecSession
	signal  syscall.Signal // the last signal delivered
}

func (c *conn) handleSession(nch ssh.NewChannel) {
	raw, reqs, err := nch.Accept()
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	s := &session{
		c: c, raw: raw, ch: &meteredChannel{Channel: raw, c: c},
		ctx: ctx, cancel: cancel,
		replied: make(chan struct{}),
		done:    make(chan struct{}),
	}
	s.serve(reqs)
}

func (s *session) serve(reqs <-chan *ssh.Request) {
	defer s.stop()
	for {
		var req *ssh.Request
		select {
		case req = <-reqs:
		case <-s.ctx.Done():
			return
		}
		if req == nil {
			return // the client closed the channel
		}
		ok, started := false, false
		switch req.Type {
		case "pty-req":
			ok = s.ptyReq(req.Payload)
		case "env":
			ok = s.setEnv(req.Payload)
		case "window-change":
			ok = s.windowChange(req.Payload)
		case "shell":
			ok = s.startExec(KindShell, "")
			started = ok
		case "exec":
			if cmd, parsed := parseString(req.Payload); parsed {
				ok = s.startExec(KindExec, cmd)
				started = ok
			}
		case "subsystem":
			if name, parsed := parseString(req.Payload); parsed {
				ok = s.startSubsystem(name)
				started = ok
			}
		case "signal":
			ok = s.deliverSignal(req.Payload)
		default:
			// x11-req, auth-agent-req@openssh.com, ...: not offered.
		}
		if req.WantReply {
			_ = req.Reply(ok, nil)
		}
		if started {
			close(s.replied)
		}
	}
}

func (s *session) ptyReq(payload []byte) bool {
	term, cols, rows, ok := parsePtyReq(payload)
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return false
	}
	s.tty = true
	s.term = term
	s.cols, s.rows = cols, rows
	return true
}

func clampSize(v uint32) uint16 { return uint16(min(v, 10000)) }

func (s *session) setEnv(payload []byte) bool {
	name, value, ok := parseEnv(payload)
	if !ok {
		return false
	}
	if !envAllowed(name, value) {
		s.c.log.Debug("ssh env refused", "name", name)
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || len(s.env) >= 32 {
		return false
	}
	s.env = append(s.env, name+"="+value)
	return true
}

func (s *session) windowChange(payload []byte) bool {
	cols, rows, ok := parseWindowChange(payload)
	if !ok {
		return false
	}
	s.mu.Lock()
	ex, tty := s.exec, s.tty
	if ex == nil {
		s.cols, s.rows = cols, rows
	}
	s.mu.Unlock()
	if ex == nil || !tty || cols == 0 || rows == 0 {
		return ex == nil
	}
	ctx, cancel := context.WithTimeout(s.c.ctx, callTimeout)
	defer cancel()
	if err := ex.Resize(ctx, cols, rows); err != nil {
		s.c.log.Debug("ssh window change failed", "err", err)
		return false
	}
	return true
}

func (s *session) deliverSignal(payload []byte) bool {
	name, ok := parseString(payload)
	if !ok {
		return false
	}
	sig, ok := signalByName(name)
	s.mu.Lock()
	ex := s.exec
	if ok && ex != nil {
		// Recorded first: the command may end before Signal returns.
		s.signal = sig
	}
	s.mu.Unlock()
	if !ok || ex == nil {
		return false
	}
	if err := ex.Signal(sig); err != nil {
		s.c.log.Warn("ssh signal failed", "signal", name, "err", err)
		return false
	}
	return true
}

// claim marks the session as running something; false if it already does.
func (s *session) claim() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return false
	}
	s.started = true
	return true
}

func (s *session) startExec(kind Kind, command string) bool {
	if !s.claim() {
		return false
	}
	s.mu.Lock()
	spec := runtime.ExecSpec{
		Env:    append([]string(nil), s.env...),
		TTY:    s.tty,
		Cols:   s.cols,
		Rows:   s.rows,
		Stdin:  s.ch,
		Stdout: gatedWriter{w: s.ch, gate: s.replied},
		Stderr: gatedWriter{w: s.ch.stderr(), gate: s.replied},
	}
	if s.tty && s.term != "" {
		spec.Env = append(spec.Env, "TERM="+s.term)
	}
	s.mu.Unlock()
	if kind == KindShell {
		spec.Cmd = []string{"/bin/sh", "-c", loginShell}
	} else {
		spec.Cmd = []string{"/bin/sh", "-c", runCommand, "sh", command}
	}
	return s.run(kind, command, spec)
}

// run starts spec in the instance and reports its end.
func (s *session) run(kind Kind, command string, spec runtime.ExecSpec) bool {
	ev := s.c.event(kind, command)
	ev.TTY = spec.TTY
	ctx, cancel := context.WithTimeout(s.ctx, callTimeout)
	ex, err := s.c.srv.cfg.Runtime.Exec(ctx, s.c.instance, spec)
	cancel()
	if err != nil {
		s.c.refused(kind, command, err.Error())
		return false
	}
	s.mu.Lock()
	s.exec = ex
	s.mu.Unlock()
	s.c.srv.audit(ev)
	go func() {
		code, err := ex.Wait(s.ctx)
		if err != nil {
			code = -1
		}
		s.finish(ev, code, err)
	}()
	return true
}

// startSubsystem serves the sftp subsystem with the sftp helper, run
// inside the instance through the runtime's exec like any command (so
// within the instance's namespaces, cgroup, seccomp filter, capabilities
// and user), after copying it there when it is not there yet.
func (s *session) startSubsystem(name string) bool {
	if name == agentproto.LogsSubsystem {
		return s.startLogs()
	}
	if name != "sftp" {
		s.c.refused(KindSFTP, name, "unknown subsystem")
		return false
	}
	if !s.claim() {
		return false
	}
	h, err := s.c.srv.helper()
	if err != nil {
		s.c.refused(KindSFTP, "sftp", err.Error())
		return false
	}
	inst, ok := s.c.srv.cfg.Runtime.(runtime.Installer)
	if !ok {
		s.c.refused(KindSFTP, "sftp", "this runtime cannot put the sftp helper into its instances")
		return false
	}
	ctx, cancel := context.WithTimeout(s.ctx, callTimeout)
	err = inst.InstallFile(ctx, s.c.instance, h.installFile())
	cancel()
	if err != nil {
		s.c.refused(KindSFTP, "sftp", err.Error())
		return false
	}
	return s.run(KindSFTP, "sftp", runtime.ExecSpec{
		Cmd:    append([]string{h.inside}, h.args...),
		Stdin:  s.ch,
		Stdout: gatedWriter{w: s.ch, gate: s.replied},
		// The helper's complaints go to the agent's log, not the
		// client's sftp stream.
		Stderr: &logLines{log: s.c.log.With("helper", "sftp")},
	})
}

// finish reports the end of the command: the output has been written, so
// end the stream, send its exit status (or the signal that killed it) and
// close the channel.
func (s *session) finish(ev Event, code int, err error) {
	defer close(s.done)
	<-s.replied
	if err == nil && code >= 0 {
		_ = s.raw.CloseWrite()
		s.mu.Lock()
		sig := s.signal
		s.mu.Unlock()
		if name := signalName(sig); name != "" && code == 128+int(sig) {
			_, _ = s.raw.SendRequest("exit-signal", false, ssh.Marshal(exitSignalMsg{Signal: name}))
		} else {
			_, _ = s.raw.SendRequest("exit-status", false, ssh.Marshal(exitStatusMsg{Status: uint32(code)}))
		}
	}
	_ = s.raw.Close()
	ev.End = time.Now().UTC()
	ev.ExitCode = code
	ev.BytesIn, ev.BytesOut = s.ch.in.Load(), s.ch.out.Load()
	if err != nil {
		ev.Err = err.Error()
	}
	s.c.srv.audit(ev)
}

// stop ends what the session runs once the client closed the channel or
// the connection ended, and waits for its end to be reported.
func (s *session) stop() {
	s.mu.Lock()
	ex, started := s.exec, s.started && s.exec != nil
	s.mu.Unlock()
	if ex != nil {
		_ = ex.Close() // a command still running is hung up
	}
	if started {
		select {
		case <-s.replied:
		default:
			close(s.replied) // the request was never answered: the channel is gone
		}
		// A command that ignores the hangup keeps running in the
		// instance (as under nohup); the session stops waiting for it.
		select {
		case <-s.done:
		case <-time.After(hangupGrace):
			s.cancel()
			<-s.done
		}
	}
	_ = s.raw.Close()
}

// gatedWriter holds writes until gate closes.
type gatedWriter struct {
	w    io.Writer
	gate <-chan struct{}
}

func (g gatedWriter) Write(p []byte) (int, error) {
	<-g.gate
	return g.w.Write(p)
}
