package sshgate_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/pkg/sftp"

	"github.com/gpurent/gpurent/internal/agentproto"
	"golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"
)

// standInAgent is an SSH server that behaves like an agent's access server:
// it trusts the gateway's client key, takes the instance id as user name, runs
// commands on this machine (with a real pty when asked), serves sftp rooted at
// a directory, and connects direct-tcpip channels to loopback listeners.
type standInAgent struct {
	t       testing.TB
	ln      net.Listener
	hostKey ssh.Signer
	trusted ssh.PublicKey
	root    string
	logins  atomic.Int64
	wg      sync.WaitGroup
	// logs, when set, serves agentproto.LogsSubsystem (logs_test.go);
	// logsAsked counts every request for it, served or not.
	logs      *logSource
	logsAsked atomic.Int64
}

func startAgent(t testing.TB, trusted ssh.PublicKey) *standInAgent {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &standInAgent{t: t, ln: ln, hostKey: newSigner(t), trusted: trusted, root: t.TempDir()}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			a.wg.Add(1)
			go func() {
				defer a.wg.Done()
				a.serveConn(nc)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
	})
	return a
}

func (a *standInAgent) addr() string { return a.ln.Addr().String() }

func (a *standInAgent) serveConn(nc net.Conn) {
	defer nc.Close()
	conf := &ssh.ServerConfig{
		PublicKeyCallback: func(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if !bytes.Equal(key.Marshal(), a.trusted.Marshal()) {
				return nil, errors.New("not the gateway")
			}
			return &ssh.Permissions{}, nil
		},
	}
	conf.AddHostKey(a.hostKey)
	sconn, chans, reqs, err := ssh.NewServerConn(nc, conf)
	if err != nil {
		return
	}
	defer sconn.Close()
	a.logins.Add(1)
	go ssh.DiscardRequests(reqs)
	var wg sync.WaitGroup
	for nch := range chans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch nch.ChannelType() {
			case "session":
				a.session(nch, sconn.User())
			case "direct-tcpip":
				a.directTCPIP(nch)
			default:
				_ = nch.Reject(ssh.UnknownChannelType, "no")
			}
		}()
	}
	wg.Wait()
}

func (a *standInAgent) directTCPIP(nch ssh.NewChannel) {
	var m struct {
		Host     string
		Port     uint32
		OrigHost string
		OrigPort uint32
	}
	if err := ssh.Unmarshal(nch.ExtraData(), &m); err != nil {
		_ = nch.Reject(ssh.ConnectionFailed, "bad payload")
		return
	}
	ip := net.ParseIP(m.Host)
	if ip == nil || !ip.IsLoopback() {
		// A real agent refuses too; the gateway must never send these.
		_ = nch.Reject(ssh.Prohibited, "agent: not loopback: "+m.Host)
		return
	}
	tc, err := net.Dial("tcp", net.JoinHostPort(m.Host, strconv.Itoa(int(m.Port))))
	if err != nil {
		_ = nch.Reject(ssh.ConnectionFailed, "connect failed: "+err.Error())
		return
	}
	defer tc.Close()
	ch, reqs, err := nch.Accept()
	if err != nil {
		return
	}
	defer ch.Close()
	go ssh.DiscardRequests(reqs)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(tc, ch)
		_ = tc.(*net.TCPConn).CloseWrite()
	}()
	_, _ = io.Copy(ch, tc)
	_ = ch.CloseWrite()
	<-done
}

type ptyRequest struct {
	Term          string
	Cols, Rows    uint32
	Width, Height uint32
	Modes         string
}

func (a *standInAgent) session(nch ssh.NewChannel, user string) {
	ch, reqs, err := nch.Accept()
	if err != nil {
		return
	}
	defer ch.Close()
	var (
		pty     *ptyRequest
		master  *os.File
		env     []string
		proc    *os.Process
		started bool
		mu      sync.Mutex
	)
	finished := make(chan struct{})
	for req := range reqs {
		ok := false
		var after func() // runs once the request is answered
		switch req.Type {
		case "pty-req":
			var p ptyRequest
			if ssh.Unmarshal(req.Payload, &p) == nil && !started {
				pty, ok = &p, true
			}
		case "env":
			var kv struct{ Name, Value string }
			if ssh.Unmarshal(req.Payload, &kv) == nil {
				env, ok = append(env, kv.Name+"="+kv.Value), true
			}
		case "window-change":
			var w struct{ Cols, Rows, Width, Height uint32 }
			if ssh.Unmarshal(req.Payload, &w) == nil {
				mu.Lock()
				if master != nil {
					setSize(master, w.Rows, w.Cols)
				} else if pty != nil {
					pty.Rows, pty.Cols = w.Rows, w.Cols
				}
				mu.Unlock()
				ok = true
			}
		case "signal":
			var s struct{ Signal string }
			if ssh.Unmarshal(req.Payload, &s) == nil {
				mu.Lock()
				if proc != nil && s.Signal == "INT" {
					_ = proc.Signal(syscall.SIGINT)
					ok = true
				}
				mu.Unlock()
			}
		case "shell", "exec":
			if started {
				break
			}
			var command string
			if req.Type == "exec" {
				var c struct{ Command string }
				if ssh.Unmarshal(req.Payload, &c) != nil {
					break
				}
				command = c.Command
			}
			var cmd *exec.Cmd
			if command == "" {
				cmd = exec.Command("/bin/sh")
			} else {
				cmd = exec.Command("/bin/sh", "-c", command)
			}
			cmd.Dir = a.root
			cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + a.root}, env...)
			mu.Lock()
			m, wait, err := a.start(cmd, ch, pty, finished)
			if err == nil {
				master, proc, started, ok, after = m, cmd.Process, true, true, wait
			}
			mu.Unlock()
		case "subsystem":
			var s struct{ Name string }
			if ssh.Unmarshal(req.Payload, &s) == nil && s.Name == agentproto.LogsSubsystem {
				a.logsAsked.Add(1)
				if started || a.logs == nil {
					break
				}
				started, ok = true, true
				after = func() {
					defer close(finished)
					a.logs.serve(user, ch)
				}
				break
			}
			if started || ssh.Unmarshal(req.Payload, &s) != nil || s.Name != "sftp" {
				break
			}
			srv, err := sftp.NewServer(ch, sftp.WithServerWorkingDirectory(a.root))
			if err != nil {
				break
			}
			started, ok = true, true
			after = func() {
				defer close(finished)
				_ = srv.Serve()
				_ = ch.CloseWrite()
				_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{0}))
				ch.Close()
			}
		}
		// Like sshd, answer the request before anything of what it started
		// (its exit status, the close) can reach the client.
		if req.WantReply {
			_ = req.Reply(ok, nil)
		}
		if after != nil {
			go after()
		}
	}
	if started {
		<-finished
	}
	mu.Lock()
	if master != nil {
		master.Close()
	}
	mu.Unlock()
}

// start runs cmd with the channel as its terminal or as its pipes; the
// function it returns waits for the command and reports its end as the
// channel's exit-status/exit-signal, after EOF.
func (a *standInAgent) start(cmd *exec.Cmd, ch ssh.Channel, pty *ptyRequest, finished chan struct{}) (*os.File, func(), error) {
	var master *os.File
	var copies sync.WaitGroup
	if pty != nil {
		m, s, err := openPTY()
		if err != nil {
			return nil, nil, err
		}
		setSize(m, pty.Rows, pty.Cols)
		cmd.Env = append(cmd.Env, "TERM="+pty.Term)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = s, s, s
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		if err := cmd.Start(); err != nil {
			m.Close()
			s.Close()
			return nil, nil, err
		}
		s.Close()
		master = m
		go func() { _, _ = io.Copy(m, ch) }()
		copies.Add(1)
		go func() {
			defer copies.Done()
			_, _ = io.Copy(ch, m) // ends with EIO once the shell and its children are gone
		}()
	} else {
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, nil, err
		}
		cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
		if err := cmd.Start(); err != nil {
			return nil, nil, err
		}
		go func() {
			_, _ = io.Copy(stdin, ch)
			stdin.Close()
		}()
	}
	wait := func() {
		defer close(finished)
		err := cmd.Wait() // also waits for the pipe copies
		copies.Wait()
		_ = ch.CloseWrite()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				name := map[syscall.Signal]string{syscall.SIGINT: "INT", syscall.SIGKILL: "KILL", syscall.SIGTERM: "TERM"}[ws.Signal()]
				_, _ = ch.SendRequest("exit-signal", false, ssh.Marshal(struct {
					Signal     string
					CoreDumped bool
					Message    string
					Lang       string
				}{Signal: name}))
				ch.Close()
				return
			}
		}
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(cmd.ProcessState.ExitCode())}))
		ch.Close()
	}
	return master, wait, nil
}

func openPTY() (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0)
	}
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, s, nil
}

func setSize(f *os.File, rows, cols uint32) {
	_ = unix.IoctlSetWinsize(int(f.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)})
}
