package execrelay

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// pending reports whether the pipe f has unread bytes (FIONREAD, which
// is TIOCINQ on Linux).
func pending(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	n := 0
	if err := rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil {
		return false
	}
	return n > 0
}

// childAttr makes the command get SIGKILL when the relay dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
