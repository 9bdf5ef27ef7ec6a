// Package pid1 is the init gpurent runs as PID 1 of every instance, so that
// an instance behaves like a machine whatever its image does. It starts the
// image's entrypoint and command (the instance's startup command) in a
// process group of its own, passes every signal it gets on to that group,
// reaps every orphan the container's processes leave behind, and records
// how the startup command ended in a small status file. When the startup
// command exits, whatever its code, the init keeps running: the instance
// stays up for its renter to fill over SSH. A SIGTERM or SIGINT (a stop)
// is passed on, the startup command is waited for, then (as PID 1) every
// other process left gets SIGTERM and is waited for, and then the init
// ends, which ends the container.
//
// It runs inside the tenant's container: nothing it reads there is
// trusted, and it writes only its status file.
package pid1

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Status is what the status file holds: the startup command's state.
type Status struct {
	// State is "none" (no startup command), "running", "exited" or
	// "failed" (it could not be started: Error says why).
	State string `json:"state"`
	// Command is the startup command as run.
	Command []string `json:"command,omitempty"`
	// PID is the startup command's process id in the container.
	PID int `json:"pid,omitempty"`
	// StartedAt and ExitedAt are when it started and ended (UTC).
	StartedAt *time.Time `json:"started_at,omitempty"`
	ExitedAt  *time.Time `json:"exited_at,omitempty"`
	// ExitCode is its exit code, or -1 when a signal ended it (Signal
	// names it).
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
	// Error says why it could not be started.
	Error string `json:"error,omitempty"`
}

// Status states.
const (
	StateNone    = "none"
	StateRunning = "running"
	StateExited  = "exited"
	StateFailed  = "failed"
)

// Config is one init's work.
type Config struct {
	// Command is the startup command (the image's entrypoint and command,
	// or the renter's own); empty: none, the init only waits and reaps.
	Command []string
	// StatusPath is where Status is written, atomically, whenever it
	// changes ("": nowhere).
	StatusPath string
	// Stdout and Stderr receive the startup command's output (nil: the
	// init's own, which the runtime keeps as the instance's log).
	Stdout, Stderr io.Writer
	// Log receives the init's own lines (nil: Stderr).
	Log io.Writer
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// StopOthers, for an init that is PID 1 of its own PID namespace
	// (Main sets it then, and only then: anywhere else kill(-1) would
	// reach every process of the machine), makes a stop end the other
	// processes gracefully too once the startup command has ended: the
	// renter's daemons started over SSH get SIGTERM, and the init waits
	// until they are gone (the runtime's stop timeout SIGKILLs what
	// lingers) instead of leaving them to the kernel's SIGKILL.
	StopOthers bool
	// Procfs is where StopOthers looks for processes left (default /proc).
	Procfs string
}

// forwarded are the signals passed on to the startup command's group.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT, syscall.SIGTSTP}

// Run is the init: it returns after a SIGTERM or SIGINT once the startup
// command has ended, or when ctx ends. It must be the only code of the
// process that waits for children: it reaps all of them.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.Log == nil {
		cfg.Log = cfg.Stderr
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, append([]os.Signal{syscall.SIGCHLD}, forwarded...)...)
	defer signal.Stop(sigs)

	if cfg.Procfs == "" {
		cfg.Procfs = "/proc"
	}
	in := &init1{cfg: cfg}
	in.start()
	var poll <-chan time.Time // while stopping the others
	for {
		if in.stopping && !in.running() {
			if !cfg.StopOthers || !in.othersLeft() {
				return nil
			}
			if poll == nil {
				fmt.Fprintf(cfg.Log, "gpurent-init: stopping the instance's other processes\n")
				if err := syscall.Kill(-1, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
					fmt.Fprintf(cfg.Log, "gpurent-init: SIGTERM the other processes: %v\n", err)
				}
				t := time.NewTicker(100 * time.Millisecond)
				defer t.Stop()
				poll = t.C
			}
		}
		select {
		case <-poll:
			in.reap()
			continue
		case <-ctx.Done():
			in.signal(syscall.SIGKILL)
			in.reap()
			return ctx.Err()
		case s := <-sigs:
			if s == syscall.SIGCHLD {
				in.reap()
				continue
			}
			in.signal(s.(syscall.Signal))
			if s == syscall.SIGTERM || s == syscall.SIGINT {
				in.stopping = true
				fmt.Fprintf(cfg.Log, "gpurent-init: %s: stopping\n", s)
			}
			// A signal may have ended a child whose SIGCHLD merged
			// with an earlier one.
			in.reap()
		}
	}
}

// init1 is one init's state; only Run's goroutine touches it.
type init1 struct {
	cfg    Config
	status Status
	pid    int // the startup command's, while it runs
	// stopping: a SIGTERM or SIGINT came; the init ends with the command.
	stopping bool
}

func (in *init1) running() bool { return in.pid != 0 }

// othersLeft reports whether a process other than the init (PID 1) is
// left in the PID namespace, as its procfs shows.
func (in *init1) othersLeft() bool {
	entries, err := os.ReadDir(in.cfg.Procfs)
	if err != nil {
		return false
	}
	for _, e := range entries {
		name := e.Name()
		if name == "1" || name == "" || strings.Trim(name, "0123456789") != "" {
			continue
		}
		// A zombie child of the init is reaped at the next poll; one
		// that is not the init's (a finished exec's) is its parent's.
		if b, err := os.ReadFile(filepath.Join(in.cfg.Procfs, name, "stat")); err == nil {
			// The name in parentheses may hold ") ": the state follows
			// the last one.
			if i := strings.LastIndex(string(b), ") "); i >= 0 && strings.HasPrefix(string(b)[i+2:], "Z") {
				continue
			}
		}
		return true
	}
	return false
}

// start starts the startup command, if any, in a group of its own.
func (in *init1) start() {
	if len(in.cfg.Command) == 0 {
		in.status = Status{State: StateNone}
		in.write()
		return
	}
	cmd := exec.Command(in.cfg.Command[0], in.cfg.Command[1:]...)
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = in.cfg.Stdout, in.cfg.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	now := in.cfg.Now().UTC()
	if err := cmd.Start(); err != nil {
		in.status = Status{State: StateFailed, Command: in.cfg.Command, Error: err.Error()}
		fmt.Fprintf(in.cfg.Log, "gpurent-init: the startup command could not start: %v; the instance stays up\n", err)
		in.write()
		return
	}
	in.pid = cmd.Process.Pid
	// The process is reaped by reap, never by cmd.Wait: release the
	// handle so nothing else waits for it.
	_ = cmd.Process.Release()
	in.status = Status{State: StateRunning, Command: in.cfg.Command, PID: in.pid, StartedAt: &now}
	in.write()
}

// signal passes s on to the startup command's process group.
func (in *init1) signal(s syscall.Signal) {
	if in.pid == 0 {
		return
	}
	if err := syscall.Kill(-in.pid, s); err != nil && !errors.Is(err, syscall.ESRCH) {
		fmt.Fprintf(in.cfg.Log, "gpurent-init: pass %s on: %v\n", s, err)
	}
}

// reap collects every child that has ended, without blocking, and
// records the startup command's end.
func (in *init1) reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return // ECHILD: no children; 0: none has ended
		}
		if pid == in.pid {
			in.ended(ws)
		}
	}
}

// ended records the startup command's end. Its group's other processes
// (daemons it left running) stay: the instance is the renter's.
func (in *init1) ended(ws syscall.WaitStatus) {
	now := in.cfg.Now().UTC()
	code := ws.ExitStatus()
	in.status.State = StateExited
	in.status.ExitedAt = &now
	if ws.Signaled() {
		code = -1
		in.status.Signal = ws.Signal().String()
	}
	in.status.ExitCode = &code
	in.pid = 0
	how := fmt.Sprintf("exited with code %d", code)
	if in.status.Signal != "" {
		how = "was ended by " + in.status.Signal
	}
	if in.stopping {
		fmt.Fprintf(in.cfg.Log, "gpurent-init: the startup command %s\n", how)
	} else {
		fmt.Fprintf(in.cfg.Log, "gpurent-init: the startup command %s; the instance stays up\n", how)
	}
	in.write()
}

// write replaces the status file atomically.
func (in *init1) write() {
	if in.cfg.StatusPath == "" {
		return
	}
	if err := WriteStatus(in.cfg.StatusPath, in.status); err != nil {
		fmt.Fprintf(in.cfg.Log, "gpurent-init: write %s: %v\n", in.cfg.StatusPath, err)
	}
}

// WriteStatus writes st to path through a temporary file and a rename.
func WriteStatus(path string, st Status) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// maxStatusBytes bounds what ParseStatus reads: the file is the tenant's
// to rewrite.
const maxStatusBytes = 64 << 10

// ParseStatus decodes a status file's bytes, as read back from an
// instance (where its renter may have rewritten it: the result is only
// ever shown to that renter). Unknown states are an error.
func ParseStatus(b []byte) (Status, error) {
	if len(b) > maxStatusBytes {
		return Status{}, fmt.Errorf("status file of %d bytes, over %d", len(b), maxStatusBytes)
	}
	var st Status
	if err := json.Unmarshal(b, &st); err != nil {
		return Status{}, fmt.Errorf("status file: %w", err)
	}
	switch st.State {
	case StateNone, StateRunning, StateExited, StateFailed:
	default:
		return Status{}, fmt.Errorf("status file: unknown state %q", st.State)
	}
	if len(st.Command) > 1024 || len(st.Error) > 4096 || len(st.Signal) > 64 {
		return Status{}, errors.New("status file: a field is too long")
	}
	return st, nil
}

// Main runs the init with the arguments of `gpurent instance-init` (after
// the subcommand's name): [--status PATH] [--] [COMMAND [ARG...]].
func Main(args []string) error {
	cfg, err := ParseArgs(args)
	if err != nil {
		return err
	}
	cfg.StopOthers = os.Getpid() == 1
	return Run(context.Background(), cfg)
}

// ParseArgs reads Main's arguments. Every argument from the first that is
// not one of the init's own (or after "--") is the startup command's,
// flags included.
func ParseArgs(args []string) (Config, error) {
	var cfg Config
	for len(args) > 0 {
		a := args[0]
		if v, ok := strings.CutPrefix(a, "--status="); ok {
			cfg.StatusPath, args = v, args[1:]
			continue
		}
		switch a {
		case "--":
			cfg.Command = args[1:]
			return cfg, nil
		case "--status":
			if len(args) < 2 {
				return Config{}, errors.New("instance-init: --status needs a path")
			}
			cfg.StatusPath, args = args[1], args[2:]
		default:
			cfg.Command = args
			return cfg, nil
		}
	}
	return cfg, nil
}
