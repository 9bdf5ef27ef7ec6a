package app

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/staticexe"
)

// TestInitBinaryResolution: a static path given is taken (absolute), a
// dynamic one is refused naming CGO_ENABLED=0, GPURENT_INIT stands in for
// the flag, and without a static executable or a demo's build directory
// the answer names `make build`.
func TestInitBinaryResolution(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	got, err := initBinary(t.Context(), "/bin/busybox", "", log)
	if err != nil || got != "/bin/busybox" {
		t.Fatalf("static flag: %q %v", got, err)
	}
	if _, err := initBinary(t.Context(), "/bin/bash", "", log); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("dynamic flag: %v", err)
	}
	t.Setenv(EnvInitBinary, "/bin/busybox")
	if got, err := initBinary(t.Context(), "", "", log); err != nil || got != "/bin/busybox" {
		t.Errorf("from %s: %q %v", EnvInitBinary, got, err)
	}
	t.Setenv(EnvInitBinary, "")
	self, _ := os.Executable()
	if staticexe.CheckFile(self) == nil {
		return // a static test binary is its own init
	}
	if _, err := initBinary(t.Context(), "", "", log); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Errorf("dynamic self without a build directory: %v", err)
	}
}

// TestModuleRoot finds this module's go.mod above the package directory
// and refuses another module's.
func TestModuleRoot(t *testing.T) {
	root, err := moduleRoot()
	if err != nil || !isModule(filepath.Join(root, "go.mod")) || filepath.Base(filepath.Join(root, "internal", "app")) != "app" {
		t.Fatalf("moduleRoot: %q %v", root, err)
	}
	other := filepath.Join(t.TempDir(), "go.mod")
	if err := os.WriteFile(other, []byte("module example.com/gpurent/gpurent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if isModule(other) {
		t.Error("another module taken for gpurent")
	}
}
