//go:build linux

package access

import (
	"context"
	"net"
	"os"
	goruntime "runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
)

// instanceProc is the init process of a running instance, held through a
// pidfd so that files opened under /proc/<pid> are known to be that
// process's, not those of a process that reused the pid after the
// instance stopped.
type instanceProc struct {
	instance string
	pid      int
	pidfd    int
}

// attachProc finds the instance's init process and pins it.
func attachProc(ctx context.Context, rt runtime.Access, instanceID string) (*instanceProc, error) {
	pid, err := rt.PID(ctx, instanceID)
	if err != nil {
		return nil, err
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeConflict, err, "instance %s stopped while being reached", instanceID)
	}
	// pid named the instance's init before the pidfd was opened and still
	// does after: the pidfd holds that process.
	again, err := rt.PID(ctx, instanceID)
	if err != nil || again != pid {
		_ = unix.Close(pidfd)
		if err != nil {
			return nil, err
		}
		return nil, gpurent.Errorf(gpurent.CodeConflict, "instance %s restarted while being reached", instanceID)
	}
	return &instanceProc{instance: instanceID, pid: pid, pidfd: pidfd}, nil
}

// alive fails once the pinned process has ended.
func (p *instanceProc) alive() error {
	if err := unix.PidfdSendSignal(p.pidfd, 0, nil, 0); err != nil {
		return gpurent.WrapError(gpurent.CodeConflict, err, "instance %s stopped while being reached", p.instance)
	}
	return nil
}

// open opens /proc/<pid>/<name> of the pinned process.
func (p *instanceProc) open(name string, flag int) (*os.File, error) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(p.pid)+"/"+name, flag|unix.O_CLOEXEC, 0)
	if err != nil {
		if aerr := p.alive(); aerr != nil {
			return nil, aerr
		}
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "open %s of instance %s", name, p.instance)
	}
	// Still alive after the open: the file is the pinned process's.
	if err := p.alive(); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "/proc/"+strconv.Itoa(p.pid)+"/"+name), nil
}

func (p *instanceProc) close() { _ = unix.Close(p.pidfd) }

// dialInNetns dials addr from inside the network namespace netns (an open
// /proc/<pid>/ns/net). The socket is made on a thread that enters the
// namespace and is never handed back to the scheduler: its goroutine ends
// locked, so the Go runtime discards the thread.
func dialInNetns(ctx context.Context, netns *os.File, network, addr string) (net.Conn, error) {
	type result struct {
		conn net.Conn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		goruntime.LockOSThread()
		// No UnlockOSThread: see above.
		if err := unix.Setns(int(netns.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{err: gpurent.WrapError(gpurent.CodeInternal, err, "enter the network namespace of the instance")}
			return
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		done <- result{conn: c, err: err}
	}()
	r := <-done
	return r.conn, r.err
}

// dialInstance opens a TCP connection to addr (an IP literal and port)
// inside the instance's network namespace.
func (s *Server) dialInstance(ctx context.Context, instanceID, addr string) (net.Conn, error) {
	p, err := attachProc(ctx, s.cfg.Runtime, instanceID)
	if err != nil {
		return nil, err
	}
	defer p.close()
	netns, err := p.open("ns/net", unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer netns.Close()
	return dialInNetns(ctx, netns, "tcp", addr)
}
