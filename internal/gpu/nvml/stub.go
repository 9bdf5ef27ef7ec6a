//go:build !nvml || !cgo

package nvml

import (
	"context"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/gpu"
)

// Provider is the NVML provider; this build has none.
type Provider struct{}

var _ gpu.Provider = (*Provider)(nil)

// New fails: this binary was built without NVML (no cgo, or no "nvml" tag).
func New() (*Provider, error) { return Open(Config{}) }

// Open fails like New.
func Open(Config) (*Provider, error) {
	return nil, gpurent.Errorf(gpurent.CodeUnavailable, notBuilt)
}

// Name is "nvml".
func (*Provider) Name() string { return "nvml" }

// Devices fails: there is no NVML in this build.
func (*Provider) Devices(context.Context) ([]gpu.Device, error) {
	return nil, gpurent.Errorf(gpurent.CodeUnavailable, notBuilt)
}

// Close does nothing.
func (*Provider) Close() error { return nil }

var _ gpu.Watcher = (*Provider)(nil)

// Events fails: there is no NVML in this build.
func (*Provider) Events(context.Context) (<-chan gpu.Event, error) {
	return nil, gpurent.Errorf(gpurent.CodeUnavailable, notBuilt)
}

// Samples fails: there is no NVML in this build.
func (*Provider) Samples(context.Context) ([]gpu.Sample, error) {
	return nil, gpurent.Errorf(gpurent.CodeUnavailable, notBuilt)
}
