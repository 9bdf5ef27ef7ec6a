package staticexe

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck: a static busybox passes; the system's dynamic shell and a
// text file do not.
func TestCheck(t *testing.T) {
	if err := CheckFile("/bin/busybox"); err != nil {
		t.Fatalf("static busybox: %v (busybox-static is installed by `make test`)", err)
	}
	sh, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckFile(sh); !errors.Is(err, ErrDynamic) {
		t.Fatalf("dynamic %s: %v, want ErrDynamic", sh, err)
	}
	text := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(text, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckFile(text); err == nil || !strings.Contains(err.Error(), "not an ELF") {
		t.Fatalf("script: %v", err)
	}
	if err := CheckFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("missing file passed")
	}
}
