// Package runtime defines how an agent runs instances on its host. Two
// implementations exist: Docker Engine (internal/agent/runtime/docker), the
// production one, and plain processes (internal/agent/runtime/process), for
// demos on machines without Docker, which isolates nothing and says so.
package runtime

import (
	"context"
	"io"
	"time"

	"github.com/gpurent/gpurent/internal/agentproto"
)

// Labels put on every managed container, tying it to its instance.
const (
	LabelManaged    = "io.gpurent.managed"
	LabelInstance   = "io.gpurent.instance"
	LabelAllocation = "io.gpurent.allocation"
	LabelVolume     = "io.gpurent.volume"
)

// DataPath is where an instance's volume is mounted inside it.
const DataPath = "/root/data"

// Spec is what an instance needs from the runtime.
type Spec struct {
	InstanceID   string
	AllocationID string
	Image        string
	GPUUUIDs     []string // exactly these GPUs; never "all"
	CPUMilli     int64
	MemoryMiB    int64
	PidsLimit    int64 // 0: the runtime's default (4096)
	VolumeName   string
	VolumeGiB    int
	Env          map[string]string
	// Startup is the startup command, a shell line the instance's init
	// runs with /bin/sh -c: nil runs the image's entrypoint and command,
	// "" none (agentproto.DesiredInstance.Startup).
	Startup *string
}

// State of an instance in the runtime.
type State string

// Runtime states.
const (
	Running State = "running"
	Stopped State = "stopped"
	Absent  State = "absent"
	Failed  State = "failed"
)

// Status is one managed instance as the runtime holds it.
type Status struct {
	InstanceID   string
	AllocationID string
	State        State
	Message      string
	StartedAt    time.Time
	GPUUUIDs     []string
	// Startup is the startup command's state as the init recorded it, nil
	// when unknown (not running, or a runtime without the init).
	Startup *agentproto.StartupStatus
}

// LogOptions choose what Logs returns.
type LogOptions struct {
	// Follow keeps the stream open, sending new output as it comes, until
	// the context ends or the instance stops.
	Follow bool
	// Since keeps only output written at or after it (zero: all kept).
	Since time.Time
	// Tail keeps only the last Tail lines (0: all kept).
	Tail int
}

// Logger is a runtime that keeps the output of each instance's startup
// command, bounded in size per instance (the oldest output is dropped).
type Logger interface {
	// Logs returns the instance's startup-command output, stdout and
	// stderr interleaved as written, as plain bytes; not_found when the
	// instance has no container.
	Logs(ctx context.Context, instanceID string, opt LogOptions) (io.ReadCloser, error)
}

// Runtime runs instances. Every method is idempotent.
type Runtime interface {
	// Name is "docker" or "process".
	Name() string
	// List returns every instance this runtime manages on the host.
	List(ctx context.Context) ([]Status, error)
	// Run makes the instance run per spec. An existing container of the
	// same instance with another AllocationID is replaced (its volume kept);
	// a stopped one of the same allocation is started; a running one is
	// left alone.
	Run(ctx context.Context, spec Spec) (Status, error)
	// Stop stops the instance, keeping its container and volume.
	Stop(ctx context.Context, instanceID string) error
	// Remove deletes the container and, if removeVolume, its volume.
	Remove(ctx context.Context, instanceID string, volumeName string, removeVolume bool) error
}

// Trees are the host directories that hold an instance's state: its data
// volume and its container's writable layer (overlay2's upper directory).
// A move copies both.
type Trees struct {
	Volume string
	Layer  string
}

// Mover is a runtime that can move an instance's state to another host.
// The Docker runtime is one; the process runtime holds no container file
// system and is not.
type Mover interface {
	// Trees returns where the instance's current container and volume keep
	// their state; not_found when the instance has no container.
	Trees(ctx context.Context, instanceID string) (Trees, error)
	// Prepare makes the volume and a container for spec exist without
	// starting it (an existing container of another allocation of the
	// instance is removed first), and returns their trees, ready to
	// receive a copy. Run later starts that container as it is.
	Prepare(ctx context.Context, spec Spec) (Trees, error)
}

// StopClock is a runtime that remembers when it stopped the container of
// an allocation it replaced (the old side of a carry to new GPUs), so that
// the run of that allocation ends then, not when the agent next looked.
type StopClock interface {
	StoppedAt(allocationID string) (time.Time, bool)
}
