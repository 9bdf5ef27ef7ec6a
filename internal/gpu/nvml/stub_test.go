//go:build !nvml || !cgo

package nvml_test

import (
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/gpu/nvml"
)

func TestNewWithoutNVMLBuild(t *testing.T) {
	const want = "built without NVML: rebuild with CGO_ENABLED=1 -tags nvml"
	p, err := nvml.New()
	if p != nil || !gpurent.IsCode(err, gpurent.CodeUnavailable) {
		t.Fatalf("New() = %v, %v; want nil and an unavailable error", p, err)
	}
	if got := gpurent.ErrorMessage(err); got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	if _, err := nvml.Open(nvml.Config{LibraryPath: "/usr/lib/libnvidia-ml.so.1"}); gpurent.ErrorMessage(err) != want {
		t.Errorf("Open: %v", err)
	}
}
