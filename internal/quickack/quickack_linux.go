package quickack

import (
	"net"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

type syscallConn interface {
	SyscallConn() (syscall.RawConn, error)
}

// conn sets TCP_QUICKACK after every read (the kernel clears it on its
// own) until done.
type conn struct {
	net.Conn
	raw  syscallConn
	done *atomic.Bool
}

func (c conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.done.Load() {
		return n, err
	}
	if rc, rerr := c.raw.SyscallConn(); rerr == nil {
		_ = rc.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK, 1)
		})
	}
	return n, err
}

func wrap(nc net.Conn) (net.Conn, func()) {
	sc, ok := nc.(syscallConn)
	if !ok {
		return nc, func() {}
	}
	var flag atomic.Bool
	return conn{Conn: nc, raw: sc, done: &flag}, func() { flag.Store(true) }
}
