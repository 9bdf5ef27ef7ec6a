package docker

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/agent/pid1"
)

// TestReadStartupAbuse: the status file lies in a hostile container. A
// good file is read; a symlink (to a host file, absolute or by ..), a
// symlinked directory on the way, a FIFO (which must not block the
// agent), a directory, an oversized file and garbage are all refused.
func TestReadStartupAbuse(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, ".gpurent", "run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "startup.json")
	code := 3
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	if err := pid1.WriteStatus(path, pid1.Status{State: pid1.StateExited, Command: []string{"/bin/sh"}, ExitCode: &code, ExitedAt: &at}); err != nil {
		t.Fatal(err)
	}
	st, err := readStartupAt(root, InitStatus)
	if err != nil || st.State != pid1.StateExited || *st.ExitCode != 3 || !st.ExitedAt.Equal(at) {
		t.Fatalf("good file: %+v, %v", st, err)
	}

	// A host file the agent can read and whose content would parse.
	secret := filepath.Join(t.TempDir(), "host-secret.json")
	if err := os.WriteFile(secret, []byte(`{"state":"failed","error":"HOST SECRET"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	replace := func(t *testing.T, make func() error) {
		t.Helper()
		if err := os.RemoveAll(path); err != nil {
			t.Fatal(err)
		}
		if err := make(); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(name string) {
		t.Helper()
		done := make(chan struct{})
		var st any
		var err error
		go func() { defer close(done); st, err = readStartupAt(root, InitStatus) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the read blocks", name)
		}
		if err == nil {
			t.Errorf("%s: read as %+v, want refused", name, st)
		}
		if err != nil && strings.Contains(err.Error(), "HOST SECRET") {
			t.Errorf("%s: the error shows the host file: %v", name, err)
		}
	}
	replace(t, func() error { return os.Symlink(secret, path) })
	refused("absolute symlink to a host file")
	rel, _ := filepath.Rel(dir, secret)
	replace(t, func() error { return os.Symlink(rel, path) })
	refused("relative symlink out of the root")
	replace(t, func() error { return syscall.Mkfifo(path, 0o644) })
	refused("FIFO")
	replace(t, func() error { return os.Mkdir(path, 0o755) })
	refused("directory")
	replace(t, func() error { return os.WriteFile(path, []byte(strings.Repeat(" ", maxStartupStatusBytes+1)), 0o644) })
	refused("oversized file")
	replace(t, func() error { return os.WriteFile(path, []byte("\x00garbage{"), 0o644) })
	refused("garbage")
	replace(t, func() error { return os.WriteFile(path, []byte(`{"state":"pwned"}`), 0o644) })
	refused("unknown state")

	// The directory on the way is a symlink to a host directory holding
	// a well-formed status file.
	hostDir := filepath.Dir(secret)
	if err := os.WriteFile(filepath.Join(hostDir, "startup.json"), []byte(`{"state":"failed","error":"HOST SECRET"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(hostDir, dir); err != nil {
		t.Fatal(err)
	}
	refused("symlinked directory")
}
