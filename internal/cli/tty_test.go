package cli_test

import (
	"bytes"
	"context"
	"errors"
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
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
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

	// What the terminal displayed: everything the master can read now.
	if err := master.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatalf("pty master without deadlines: %v", err)
	}
	var shown bytes.Buffer
	buf := make([]byte, 4096)
	for {
		n, err := master.Read(buf)
		shown.Write(buf[:n])
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, syscall.EIO) {
				t.Fatalf("reading the terminal: %v", err)
			}
			break
		}
	}
	if strings.Contains(shown.String(), "s3cret") {
		t.Fatalf("the terminal echoed the password: %q", shown.String())
	}
	// Echo is back on afterwards.
	tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if tio.Lflag&unix.ECHO == 0 {
		t.Fatal("login left the terminal's echo off")
	}
}
