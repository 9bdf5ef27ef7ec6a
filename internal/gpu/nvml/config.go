package nvml

import "log/slog"

// Config configures the NVML provider.
type Config struct {
	// LibraryPath is the NVML library to load. Empty: libnvidia-ml.so.1
	// from the dynamic loader's search path, where the driver installs it.
	LibraryPath string
	// Logger receives devices skipped and fallbacks taken (nil: discarded).
	Logger *slog.Logger
}

// notBuilt is the message of New in a build without NVML.
const notBuilt = "built without NVML: rebuild with CGO_ENABLED=1 -tags nvml"
