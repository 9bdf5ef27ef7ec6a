package app

import (
	"fmt"
	"os"
	"testing"

	"github.com/gpurent/gpurent/internal/access"
)

// TestMain lets the test binary play `gpurent agent-sftp`, the helper the
// in-process agents' access servers start (they re-execute their own
// binary, which here is this test).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == access.SFTPHelperCommand {
		if err := access.ServeSFTPChild(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
