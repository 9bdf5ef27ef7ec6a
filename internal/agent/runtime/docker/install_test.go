//go:build linux

package docker_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
)

// TestInstallFile: a file of the host lands in a running instance (its
// directory made), executable, once: a second install of the same size
// copies nothing; a path that is not clean and absolute is refused.
func TestInstallFile(t *testing.T) {
	t.Parallel()
	rt, spec := runningInstance(t, docker.Config{})
	body := "#!/bin/sh\necho installed\n"
	f := runtime.File{Path: "/.gpurent/tool", Mode: 0o755, Size: int64(len(body)),
		Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }}
	if err := rt.InstallFile(t.Context(), spec.InstanceID, f); err != nil {
		t.Fatalf("InstallFile: %v", err)
	}
	if out, errOut, code := execAll(t, rt, spec.InstanceID, runtime.ExecSpec{Cmd: []string{"/.gpurent/tool"}}); out != "installed\n" || code != 0 {
		t.Errorf("the installed file ran: %q %q %d", out, errOut, code)
	}
	f.Open = func() (io.ReadCloser, error) { return nil, errors.New("copied again") }
	if err := rt.InstallFile(t.Context(), spec.InstanceID, f); err != nil {
		t.Errorf("second InstallFile: %v; want nothing copied", err)
	}
	for _, bad := range []string{"relative", "/a/../b", "/"} {
		f.Path = bad
		if err := rt.InstallFile(t.Context(), spec.InstanceID, f); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("InstallFile(%q): %v; want invalid", bad, err)
		}
	}
}
