package runtime

import (
	"context"
	"io"
	"syscall"
)

// ExecSpec is a command to run inside a running instance, as a login or a
// remote command of an SSH session does.
type ExecSpec struct {
	// Cmd is the program and its arguments; required.
	Cmd []string
	// Env adds KEY=value pairs to the instance's own environment.
	Env []string
	// TTY gives the command a terminal of Cols x Rows (0: the runtime's
	// default); its output then arrives on Stdout only.
	TTY        bool
	Cols, Rows uint16
	// User runs the command as this user ("" = the image's user);
	// WorkDir starts it there ("" = the image's working directory).
	User    string
	WorkDir string
	// Stdin feeds the command's standard input until it returns io.EOF,
	// which closes that input (without a TTY; a terminal is left open, as
	// sshd leaves a pty). nil: the input is closed at once.
	Stdin io.Reader
	// Stdout and Stderr receive the command's output (nil: discarded).
	Stdout, Stderr io.Writer
}

// ExecSession is a command started by Access.Exec.
type ExecSession interface {
	// Resize changes the size of the command's terminal (TTY only).
	Resize(ctx context.Context, cols, rows uint16) error
	// Signal delivers sig to the command's process. A command that has
	// already ended is not an error.
	Signal(sig syscall.Signal) error
	// Wait returns the command's exit code once it has ended and all of its
	// output has been written to Stdout and Stderr. A command killed by
	// signal N exits 128+N.
	Wait(ctx context.Context) (exitCode int, err error)
	// Close releases the session. A command still running gets SIGHUP, as
	// when a terminal hangs up; Wait then returns what remains.
	Close() error
}

// Access lets an agent reach into the instances it runs: the SSH access
// server runs commands in them, serves files from their file system and
// forwards ports into their network namespace.
//
// Both methods refuse (gpurent CodeNotFound, or CodeConflict for a stopped
// one) an instance that is not running under this runtime.
type Access interface {
	// Exec starts a command inside a running instance.
	Exec(ctx context.Context, instanceID string, spec ExecSpec) (ExecSession, error)
	// PID is the host process id of the instance's init process, whose
	// /proc/<pid>/root and /proc/<pid>/ns/net are the instance's file
	// system and network. A caller that opens them must check afterwards
	// that the pid still is the instance's (it changes when the instance
	// restarts).
	PID(ctx context.Context, instanceID string) (int, error)
}

// --- Files put into instances (issue 14: sftp served inside the
// instance's isolation) ---

// File is a file of the agent's host to put into an instance.
type File struct {
	// Path is where it goes inside the instance (absolute); its parent
	// directory is made (0755) when missing.
	Path string
	// Mode is its permission bits, Size its length in bytes.
	Mode int64
	Size int64
	// Open opens its content (read to Size bytes).
	Open func() (io.ReadCloser, error)
}

// Installer puts files into running instances: the access server's sftp
// helper, which then runs inside the instance through Exec.
type Installer interface {
	// InstallFile makes sure the running instance holds f at f.Path,
	// copying it when nothing of f.Size bytes is there yet. What the
	// instance's own users do to the copy afterwards is theirs: it runs
	// with the instance's privileges only.
	InstallFile(ctx context.Context, instanceID string, f File) error
}
