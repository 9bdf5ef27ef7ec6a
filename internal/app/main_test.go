package app

import (
	"fmt"
	"os"
	"testing"

	"github.com/gpurent/gpurent/internal/access/accesstest"
)

// TestMain gives the in-process agents' access servers a static sftp
// helper to copy into their instances (this test binary, built with cgo
// for -race, would not start inside an image).
func TestMain(m *testing.M) {
	helper, err := accesstest.BuildSFTPHelper()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv(EnvSFTPHelper, helper)
	os.Exit(m.Run())
}
