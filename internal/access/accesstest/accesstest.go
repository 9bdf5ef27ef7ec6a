// Package accesstest helps tests of the agent's access server: a static
// sftp helper to copy into instances (a test binary, built with -race and
// cgo, cannot run inside an image that lacks the host's libraries). The
// helper is the tests' static init (dockertest.BuildInitBinary), which also
// serves `agent-sftp`, as production uses one static gpurent for both.
package accesstest

import (
	"testing"

	"github.com/gpurent/gpurent/internal/access"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
)

// SFTPHelper is the command line of the static sftp helper
// (access.Config.SFTPHelper), built once per test process.
func SFTPHelper(t testing.TB) []string {
	t.Helper()
	path, err := BuildSFTPHelper()
	if err != nil {
		t.Fatal(err)
	}
	return []string{path, access.SFTPHelperCommand}
}

// BuildSFTPHelper builds the helper (CGO_ENABLED=0, once per test process)
// and returns its path; it takes the arguments of `gpurent agent-sftp`
// after access.SFTPHelperCommand.
func BuildSFTPHelper() (string, error) { return dockertest.BuildInitBinary() }
