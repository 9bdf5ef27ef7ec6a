// Package agentproto is the wire contract between the control plane and the
// host agents: registration, the desired state the control plane publishes
// for each host, and the actual state each agent reports back. Both sides
// import it; it holds types and constants only.
//
// The agent always connects outward:
//
//	POST /agent/v1/register   RegisterRequest → RegisterResponse (join token in the body)
//	GET  /agent/v1/desired?after=N   → Desired (long poll: answers as soon as the
//	                                   host's generation exceeds N, else after ~25 s)
//	POST /agent/v1/report     Report → ReportResponse
//	POST /agent/v1/bench      BenchResult → 204 | 404 (a benchmark job's progress and records)
//
// All but register carry "Authorization: Bearer <agent token>".
package agentproto

import "time"

// Paths of the agent API.
const (
	PathRegister = "/agent/v1/register"
	PathDesired  = "/agent/v1/desired"
	PathReport   = "/agent/v1/report"
)

// Desired and actual run states of an instance's container.
const (
	StateRunning  = "running"  // desired and actual
	StateStopped  = "stopped"  // desired and actual: container exists, not running; volume kept
	StateAbsent   = "absent"   // desired and actual: container and volume removed
	StateFailed   = "failed"   // actual only: could not be made to run; Message says why
	StateCreating = "creating" // actual only: being created or started
	// StatePrepared (desired and actual): the instance's volume and the
	// container of AllocationID exist, not started, ready to receive a
	// copy (the target end of a move).
	StatePrepared = "prepared"
)

// Move roles.
const (
	MoveSource = "source"
	MoveTarget = "target"
)

// Move is one end of an instance's move to another host. The source agent
// pushes the instance's volume and writable layer to the target agent over
// SSH (the target's access address and host key), authenticated with the
// operation's token; the target accepts only a push that proves it.
type Move struct {
	OperationID string `json:"operation_id"`
	Role        string `json:"role"` // source or target
	// Source end: where to push. TargetAddr is the target agent's access
	// address (host:port), TargetHostKey its host key (authorized_keys form).
	TargetAddr    string `json:"target_addr,omitempty"`
	TargetHostKey string `json:"target_host_key,omitempty"`
	// Token is the grant's secret: the source presents it; the target is
	// given only its SHA-256 (hex) in TokenHash.
	Token     string `json:"token,omitempty"`
	TokenHash string `json:"token_hash,omitempty"`
	// Final (source): the container is stopped (the instance's State is
	// stopped); send the final pass. Without it the source pre-copies
	// while the instance runs.
	Final bool `json:"final,omitempty"`
}

// MoveStatus is the source agent's progress on a Move.
type MoveStatus struct {
	OperationID string `json:"operation_id"`
	// Passes counts the completed live passes (pre-copy); Final is set
	// once the final pass, with the container stopped, completed.
	Passes int  `json:"passes"`
	Final  bool `json:"final,omitempty"`
	// Bytes is what went over the wire so far; LastPassBytes what the last
	// completed pass sent.
	Bytes         int64 `json:"bytes"`
	LastPassBytes int64 `json:"last_pass_bytes"`
	// Error is the last failed attempt's reason; the agent keeps retrying.
	Error string `json:"error,omitempty"`
}

// GPUInfo is one GPU as the agent sees it.
type GPUInfo struct {
	UUID      string `json:"uuid"`
	Index     int    `json:"index"`
	Type      string `json:"type"` // GPU type id, e.g. "h100-80g-sxm"
	Name      string `json:"name"` // the device's own name
	MemoryMiB int64  `json:"memory_mib"`
	TopoGroup string `json:"topo_group"`
	NUMANode  int    `json:"numa_node"`
	Health    string `json:"health"`
}

// RegisterRequest registers a new host with a one-time join token an
// operator made for it, or re-registers an existing host: with that host's
// current agent token (AgentToken), or with the join token an operator's
// reset of the host issued.
type RegisterRequest struct {
	JoinToken    string    `json:"join_token,omitempty"`
	AgentToken   string    `json:"agent_token,omitempty"`
	Name         string    `json:"name"`
	Zone         string    `json:"zone"`
	CPUMilli     int64     `json:"cpu_milli"`
	MemoryMiB    int64     `json:"memory_mib"`
	DiskGiB      int64     `json:"disk_gib"`
	Runtime      string    `json:"runtime"` // "docker" or "process"
	AgentVersion string    `json:"agent_version"`
	GPUs         []GPUInfo `json:"gpus"`
}

// RegisterResponse gives the host its id and the agent its token. The agent
// keeps both in its state directory and uses them after a restart.
type RegisterResponse struct {
	HostID     string `json:"host_id"`
	AgentToken string `json:"agent_token"`
}

// Desired is everything the host should run. It is level-triggered: the
// agent converges to the whole list, whatever it missed before.
type Desired struct {
	HostID     string            `json:"host_id"`
	Generation int64             `json:"generation"`
	Instances  []DesiredInstance `json:"instances"`
	// Bench are the benchmark jobs the host should run, in order, one at
	// a time (bench.go); a job that leaves the list is canceled.
	Bench []BenchJob `json:"bench,omitempty"`
	// Registry is the operator's registry and the pull credential agents
	// use for it (serve --registry); nil when the operator runs none.
	Registry *Registry `json:"registry,omitempty"`
	// Prepull are the image references of the operator's base image
	// catalog marked to pre-pull: the agent pulls each it lacks, ahead of
	// any rent, and reports what it holds (Report.Images).
	Prepull []string `json:"prepull,omitempty"`
}

// Registry is the operator's image registry as agents reach it. Addr is
// host[:port], the prefix of its image references; Username and Password,
// when set, are the pull credential (serve --registry-credentials): a
// registry endpoint that serves reads only (docs/security.md), never one
// that accepts a push. The agent pulls from Addr even when it is on the
// host itself (the operator named it), and from nowhere else it was not
// told to allow.
type Registry struct {
	Addr     string `json:"addr"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
}

// DesiredInstance is one instance the host should hold.
type DesiredInstance struct {
	InstanceID   string            `json:"instance_id"`
	AllocationID string            `json:"allocation_id,omitempty"` // "" when no GPUs are held (stopped)
	State        string            `json:"state"`                   // running, stopped, absent
	Image        string            `json:"image"`
	GPUUUIDs     []string          `json:"gpu_uuids"`
	CPUMilli     int64             `json:"cpu_milli"`
	MemoryMiB    int64             `json:"memory_mib"`
	VolumeName   string            `json:"volume_name"`
	VolumeGiB    int               `json:"volume_gib"`
	Env          map[string]string `json:"env,omitempty"`
	// Startup is the instance's startup command, a shell line run with
	// /bin/sh -c under the instance's init (issue 16): nil runs the
	// image's own entrypoint and command; "" runs none. It applies when
	// the container is next created or started.
	Startup *string `json:"startup,omitempty"`
	// Move, when set, makes this host one end of a move to another host.
	Move *Move `json:"move,omitempty"`
}

// StartupStatus is how an instance's startup command stands, as its init
// recorded it (the instance itself stays up whatever it does).
type StartupStatus struct {
	// State is "none" (no startup command), "running", "exited" or
	// "failed" (it could not be started: Error says why).
	State string `json:"state"`
	// Command is the command line as run (argv).
	Command   []string   `json:"command,omitempty"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	ExitedAt  *time.Time `json:"exited_at,omitempty"`
	// ExitCode is its exit code, or -1 when a signal ended it (Signal
	// names it, e.g. "killed").
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
	Error    string `json:"error,omitempty"`
}

// ActualInstance is what the runtime holds for one instance.
type ActualInstance struct {
	InstanceID   string    `json:"instance_id"`
	AllocationID string    `json:"allocation_id,omitempty"`
	State        string    `json:"state"` // running, stopped, absent, failed, creating
	Message      string    `json:"message,omitempty"`
	StartedAt    time.Time `json:"started_at,omitzero"`
	// Startup is the startup command's state while the instance runs (nil
	// when the runtime cannot tell, e.g. the process runtime).
	Startup *StartupStatus `json:"startup,omitempty"`
	// Move is the source's progress on the move the desired state asks for.
	Move *MoveStatus `json:"move,omitempty"`
}

// HeldImages are the image references a host holds.
type HeldImages struct {
	Refs []string `json:"refs"`
}

// Report is the agent's periodic (and after every change) account of its host.
type Report struct {
	ReportID  string           `json:"report_id"`
	At        time.Time        `json:"at"`
	Runtime   string           `json:"runtime"`
	GPUs      []GPUInfo        `json:"gpus"`
	Instances []ActualInstance `json:"instances"`
	// Runs are the run events not yet acknowledged, oldest first. The
	// agent wrote each to its journal before sending it; a retry resends
	// the same ids.
	Runs []RunEvent `json:"runs,omitempty"`
	// AccessAddr is where the control plane's SSH gateway reaches the
	// agent's access server (host:port), AccessHostKey that server's host
	// key (authorized_keys form); empty when the agent runs none.
	AccessAddr    string `json:"access_addr,omitempty"`
	AccessHostKey string `json:"access_host_key,omitempty"`
	// Health are the GPU health events not yet acknowledged, oldest first
	// (each with the agent's id; a retry resends the same ids); Samples
	// the latest telemetry of each GPU.
	Health  []HealthEvent `json:"health,omitempty"`
	Samples []GPUSample   `json:"samples,omitempty"`
	// Images, when set, are the images of the desired state's Prepull list
	// the host holds now (it replaces what the control plane knew); nil
	// leaves that as it was (an agent that does not pre-pull).
	Images *HeldImages `json:"images,omitempty"`
}

// HealthEvent is one GPU health event (kinds as internal/gpu's Event*,
// plus the agent's findings from telemetry: throttle, pcie_degraded,
// nvlink_down, power_limit).
type HealthEvent struct {
	ID     string    `json:"id"`
	UUID   string    `json:"uuid"`
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"`
	Xid    int       `json:"xid,omitempty"`
	Detail string    `json:"detail,omitempty"`
}

// GPUSample is a GPU's telemetry as last polled.
type GPUSample struct {
	UUID          string    `json:"uuid"`
	At            time.Time `json:"at"`
	UtilPercent   int       `json:"util_percent"`
	MemUsedMiB    int64     `json:"mem_used_mib"`
	TemperatureC  int       `json:"temperature_c"`
	PowerW        float64   `json:"power_w"`
	PowerLimitW   float64   `json:"power_limit_w"`
	DefaultPowerW float64   `json:"default_power_w"`
	ThrottleMask  uint64    `json:"throttle_mask"`
	ECCSingleBit  int64     `json:"ecc_sbe"`
	ECCDoubleBit  int64     `json:"ecc_dbe"`
	RemapPending  bool      `json:"remap_pending,omitempty"`
	RemapFailure  bool      `json:"remap_failure,omitempty"`
	PCIeGen       int       `json:"pcie_gen"`
	PCIeWidth     int       `json:"pcie_width"`
	PCIeMaxGen    int       `json:"pcie_max_gen"`
	PCIeMaxWidth  int       `json:"pcie_max_width"`
	NVLinkDown    int       `json:"nvlink_down"`
	XidTotal      int64     `json:"xid_total"`
}

// Run event kinds.
const (
	RunStarted = "run_started"
	RunEnded   = "run_ended"
)

// RunEvent is the agent's observation that a run (a power-on) of an
// allocation's container started or ended: what metering bills.
type RunEvent struct {
	ID           string     `json:"id"`
	Kind         string     `json:"kind"`
	InstanceID   string     `json:"instance_id"`
	AllocationID string     `json:"allocation_id"`
	StartedAt    time.Time  `json:"started_at"`
	EndedAt      *time.Time `json:"ended_at,omitempty"`
}

// ReportResponse tells the agent the generation the control plane is at, so
// it can fetch the desired state at once when it is behind.
type ReportResponse struct {
	Generation int64 `json:"generation"`
	// RunsAcked are the ids of the report's run events the control plane
	// has stored (or refused for good): the agent drops them.
	RunsAcked []string `json:"runs_acked,omitempty"`
	// GatewayKeys are the public keys (authorized_keys form) of the SSH
	// gateway: the only clients the agent's access server lets in.
	GatewayKeys []string `json:"gateway_keys,omitempty"`
	// HealthAcked are the ids of the report's health events the control
	// plane has stored: the agent drops them.
	HealthAcked []string `json:"health_acked,omitempty"`
}

// LogsSubsystem is the SSH subsystem of an agent's access server that
// streams an instance's startup-command output (runtime.Logger) to the
// control plane's gateway, which alone may ask for it (a key the server
// trusts, never a customer's): the session's user is the instance; after
// the subsystem request the gateway writes one LogsRequest in JSON and a
// newline on the channel; the server answers with the output bytes until
// the end (exit-status 0) or an error (one line on stderr, exit-status 1).
const LogsSubsystem = "gpurent-logs@gpurent.dev"

// LogsRequest asks for an instance's logs (runtime.LogOptions).
type LogsRequest struct {
	Follow bool      `json:"follow,omitempty"`
	Since  time.Time `json:"since,omitzero"`
	Tail   int       `json:"tail,omitempty"`
}
