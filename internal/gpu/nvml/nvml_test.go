//go:build nvml && cgo

package nvml_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/gpu/nvml"
)

// childEnv marks the re-executed test binary that touches NVML.
const childEnv = "GPURENT_NVML_TEST_CHILD"

// TestNewKeepsProcessAlive runs New in a child process: should New ever
// touch NVML after a failed Init, go-nvml kills that process (exit 127)
// and this test reports it, instead of the test binary vanishing.
func TestNewKeepsProcessAlive(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		child()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNewKeepsProcessAlive$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("the child process died (exit code %d) after calling nvml.New: the Init guard is broken\n%s", exit.ExitCode(), out)
	}
	if err != nil {
		t.Fatalf("run the child: %v", err)
	}
	text := string(out)
	if !strings.Contains(text, "CHILD ALIVE") {
		t.Fatalf("the child did not finish:\n%s", text)
	}
	_, statErr := os.Stat("/proc/driver/nvidia/version")
	driver := statErr == nil
	switch {
	case !driver && !strings.Contains(text, "NEW FAILED unavailable: NVML unavailable:"):
		t.Fatalf("no NVIDIA driver here, yet New did not fail as unavailable:\n%s", text)
	case driver && !strings.Contains(text, "DEVICES "):
		t.Fatalf("an NVIDIA driver is loaded, yet New or Devices failed:\n%s", text)
	}
	t.Logf("child output:\n%s", text)
}

// child is the risky part: New, then Open again (as an agent retrying
// would) and Open of a missing library; on a host with a driver, Devices
// and Close.
func child() {
	for attempt := range 3 {
		var p *nvml.Provider
		var err error
		if attempt == 0 {
			p, err = nvml.New()
		} else {
			p, err = nvml.Open(nvml.Config{LibraryPath: []string{"", "", "/nonexistent/libnvidia-ml.so.1"}[attempt]})
		}
		if err != nil {
			fmt.Printf("NEW FAILED %s: %s (attempt %d)\n", gpurent.ErrorCode(err), gpurent.ErrorMessage(err), attempt)
			continue
		}
		devs, err := p.Devices(context.Background())
		if err != nil {
			fmt.Printf("DEVICES FAILED %v\n", err)
		} else {
			fmt.Printf("DEVICES %d\n", len(devs))
			for _, d := range devs {
				fmt.Printf("  %+v\n", d)
			}
		}
		if samples, err := p.Samples(context.Background()); err != nil {
			fmt.Printf("SAMPLES FAILED %v\n", err)
		} else {
			for _, s := range samples {
				fmt.Printf("  SAMPLE %+v\n", s)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		if events, err := p.Events(ctx); err != nil {
			fmt.Printf("EVENTS FAILED %v\n", err)
		} else {
			cancel()
			for range events {
			}
		}
		cancel()
		if err := p.Close(); err != nil {
			fmt.Printf("CLOSE FAILED %v\n", err)
		}
		if _, err := p.Devices(context.Background()); !gpurent.IsCode(err, gpurent.CodeUnavailable) {
			fmt.Printf("DEVICES AFTER CLOSE: %v\n", err)
		}
	}
	fmt.Println("CHILD ALIVE")
}
