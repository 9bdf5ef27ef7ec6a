package cli_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpurent/gpurent/internal/cli"
)

// openPTY opens a pseudo-terminal pair: the test writes keystrokes to
// master and reads what the terminal shows; the command reads slave.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening /dev/ptmx (a Linux pseudo-terminal is needed for this test): %v", err)
	}
	t.Cleanup(func() { master.Close() })
	// Not master.Fd(): it would put the file in blocking mode, and the
	// test reads master with a deadline.
	rc, err := master.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var ioErr error
	if err := rc.Control(func(fd uintptr) {
		if ioErr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ioErr == nil {
			n, ioErr = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
		}
	}); err != nil || ioErr != nil {
		t.Fatalf("unlockpt/ptsname: %v %v", err, ioErr)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the pty slave: %v", err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// TestLoginReadsPasswordWithoutEcho types the password on a real terminal
// and checks that the terminal never showed it.
func TestLoginReadsPasswordWithoutEcho(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	master, slave := openPTY(t)

	var stdout, stderr bytes.Buffer
	root := cli.NewRootWith(h.env())
	root.SetIn(slave)
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	done := make(chan int, 1)
	go func() {
		done <- cli.Execute(context.Background(), root, []string{"login", "--server", f.URL(), "--email", fxAccount.Email})
	}()

	// Type only once the command has switched echo off, as a person would
	// after seeing the prompt. Bounded: the command must get there.
	for i := 0; ; i++ {
		tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatalf("tcgetattr: %v", err)
		}
		if tio.Lflag&unix.ECHO == 0 {
			break
		}
		if i == 10000 {
			t.Fatal("login never switched the terminal's echo off to read the password")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := master.Write([]byte("s3cret pass\n")); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != 0 {
		t.Fatalf("login: exit %d: %s", code, stderr.String())
	}
	contains(t, "stdout", stdout.String(), "Logged in")
	contains(t, "stderr", stderr.String(), "Password: ")

	// Echo is back on afterwards.
	tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if tio.Lflag&unix.ECHO == 0 {
		t.Fatal("login left the terminal's echo off")
	}

	// What the terminal displayed: everything the master reads until the
	// slave's last descriptor closes (then Linux answers EIO). A reader
	// goroutine, since deadlines on a pty master are not supported
	// everywhere.
	if err := slave.Close(); err != nil {
		t.Fatal(err)
	}
	var shown bytes.Buffer
	readDone := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			shown.Write(buf[:n])
			if err != nil {
				readDone <- err
				return
			}
		}
	}()
	select {
	case err := <-readDone:
		if !errors.Is(err, syscall.EIO) && !errors.Is(err, io.EOF) {
			t.Fatalf("reading the terminal: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the terminal's output never ended after the slave closed")
	}
	if strings.Contains(shown.String(), "s3cret") {
		t.Fatalf("the terminal echoed the password: %q", shown.String())
	}
}
