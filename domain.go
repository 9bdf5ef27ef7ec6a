package gpurent

import "time"

// Role is what an account may do.
type Role string

// Roles.
const (
	RoleCustomer Role = "customer"
	RoleOperator Role = "operator"
)

// Account is a customer or an operator.
type Account struct {
	ID           string
	Email        string // unique, compared case-insensitively (stored lower-case)
	Name         string
	Role         Role
	PasswordHash string
	// BalanceFen is the wallet's spendable balance in fen (1/100 CNY) where
	// a read fills it from the ledger (the API's account view); the stored
	// column is no longer the truth and is not read for money.
	BalanceFen int64
	CreatedAt  time.Time
	// AcademicUntil is when the account's academic verification ends; nil
	// when it has none.
	AcademicUntil *time.Time
}

// TokenKind says how a token was made.
type TokenKind string

// Token kinds.
const (
	TokenSession TokenKind = "session" // from a password login, expires
	TokenAPI     TokenKind = "api"     // made by the user for scripts
	TokenReset   TokenKind = "reset"   // a password-reset link's, expires in an hour
	// TokenEmailVerify is an e-mail verification link's (its Name holds the
	// address it proves), single-use, expires.
	TokenEmailVerify TokenKind = "email_verify"
)

// Token is a bearer credential. Only its SHA-256 hash is stored.
type Token struct {
	ID        string
	AccountID string
	Kind      TokenKind
	Name      string
	Hash      string // hex SHA-256 of the secret
	CreatedAt time.Time
	ExpiresAt *time.Time // nil: never
}

// GPUType is a SKU the operator rents out, with its spec and list prices.
// Spec figures are dense (never sparse) tensor throughput; see
// shared/reference/gpus.md.
type GPUType struct {
	ID              string  // "h100-80g-sxm"
	Name            string  // "NVIDIA H100 80GB SXM"
	MemoryGB        int     // on-board memory, GB as the vendor counts it
	MemBandwidthGBs int     // GB/s
	FP32TFLOPS      float64 // spec figures are measurements, not money
	BF16TFLOPS      float64
	FP8TFLOPS       float64 // 0 where the card has no FP8
	NVLinkGBs       int     // bidirectional per GPU, 0 = none
	PeerToPeer      bool    // false for GeForce cards: NCCL goes through host memory
	TDPWatts        int
	PCIeGen         int
	// Resources given to an instance per rented GPU.
	CPUMilliPerGPU  int64
	MemoryMiBPerGPU int64
	// List prices in fen per GPU: per hour (hourly plan) and per package period.
	PriceHourlyFen  int64
	PriceDailyFen   int64
	PriceWeeklyFen  int64
	PriceMonthlyFen int64
}

// Zone is a datacentre site.
type Zone struct {
	ID       string // "cd-tianfu-a"
	Name     string // "Chengdu Tianfu Software Park A"
	Region   string // "chengdu"
	ProbeURL string // an endpoint a browser can time
}

// HostState is the operator-visible state of a host.
type HostState string

// Host states.
const (
	HostReady    HostState = "ready"
	HostCordoned HostState = "cordoned" // no new placements; running instances stay
	HostDraining HostState = "draining"
	HostDown     HostState = "down"
)

// Host is a GPU server running an agent.
type Host struct {
	ID             string
	Name           string // unique; the agent's stable name
	ZoneID         string
	State          HostState
	CPUMilli       int64
	MemoryMiB      int64
	DiskGiB        int64
	Runtime        string // "docker" or "process" (demo only, no isolation)
	AgentVersion   string
	AgentTokenHash string // hex SHA-256 of the agent's bearer token
	Generation     int64  // desired-state version, bumped on every change for this host
	LastSeenAt     *time.Time
	RegisteredAt   time.Time
	// AccessAddr is where the SSH gateway reaches the agent's access
	// server ("" before the agent said), AccessHostKey that server's host
	// key in authorized_keys form, which the gateway pins.
	AccessAddr    string
	AccessHostKey string
	GPUs          []GPU // filled by reads that say so
}

// GPUHealth is the health of one GPU.
type GPUHealth string

// GPU health values.
const (
	GPUHealthy  GPUHealth = "healthy"
	GPUDegraded GPUHealth = "degraded"
	GPUCordoned GPUHealth = "cordoned"
	GPUFailed   GPUHealth = "failed"
	GPURetired  GPUHealth = "retired"
	GPUMissing  GPUHealth = "missing" // listed before, not reported by the agent now
)

// GPU is one physical GPU on a host.
type GPU struct {
	ID        string // the device UUID, "GPU-xxxxxxxx-..."
	HostID    string
	Index     int
	TypeID    string
	MemoryMiB int64
	Health    GPUHealth
	// HealthReason says why the GPU has its health (set with it by
	// SetGPUHealth; "" when none was given). SyncHostGPUs keeps it while
	// the health stays and clears it when the health changes.
	HealthReason string
	TopoGroup    string // NVLink domain / PCIe switch the GPU sits under
	NUMANode     int
	// Filled by reads from the open allocation holding the GPU, if any.
	AllocationID string
	InstanceID   string
	// Filled by reads: the open benchmark job holding the GPU ("" none),
	// and, from its certification, the listing price as a share of the
	// list price in permille (0: no certification stored, full price) and
	// whether it is listed only as degraded (CertDegraded).
	BenchJobID    string
	PricePermille int
	Degraded      bool
}

// InstanceState is the lifecycle state of an instance.
type InstanceState string

// Instance states: pending → provisioning → running → stopping → stopped →
// deleting → deleted, and failed with a reason.
const (
	StatePending      InstanceState = "pending"
	StateProvisioning InstanceState = "provisioning"
	StateRunning      InstanceState = "running"
	StateStopping     InstanceState = "stopping"
	StateStopped      InstanceState = "stopped"
	StateDeleting     InstanceState = "deleting"
	StateDeleted      InstanceState = "deleted"
	StateFailed       InstanceState = "failed"
)

// Failover is an instance's choice on a platform fault.
type Failover string

// Failover choices.
const (
	FailoverAuto Failover = "auto"
	FailoverWait Failover = "wait"
)

// Plan is how an instance is billed.
type Plan string

// Plans.
const (
	PlanHourly  Plan = "hourly"
	PlanDaily   Plan = "daily"
	PlanWeekly  Plan = "weekly"
	PlanMonthly Plan = "monthly"
)

// Instance is what a customer rents. Its id, name, image, volume and history
// last for its whole life; the GPUs under it can change.
type Instance struct {
	ID          string
	AccountID   string
	Name        string
	Image       string
	TypeID      string
	GPUCount    int
	ZoneID      string // requested zone, "" for any
	HostID      string // current or last host, "" before the first placement
	State       InstanceState
	StateReason string
	Plan        Plan
	CPUMilli    int64
	MemoryMiB   int64
	VolumeID    string
	// IdempotencyKey and RequestHash make the create idempotent: the same key
	// with the same request returns this instance, with another request it is
	// rejected. (AccountID, IdempotencyKey) is unique when the key is set.
	IdempotencyKey string
	RequestHash    string
	// Failover is what happens when a fault of the platform's takes the
	// instance's GPUs: FailoverAuto ("" reads as it) moves it to healthy
	// GPUs of the same type; FailoverWait keeps it where it is and tells
	// the customer.
	Failover Failover
	// StartupCommand is what the instance's init starts when the
	// instance starts: nil runs the image's own entrypoint and command,
	// "" none, anything else is a shell line run with /bin/sh -c
	// (written by CreateInstance and UpdateInstance).
	StartupCommand *string
	// Startup is the startup command's latest status as the instance's
	// agent reported it, nil before any report (written only by
	// RecordStartupStatus).
	Startup   *StartupStatus
	Version   int64 // optimistic concurrency: bumped by every UpdateInstance
	CreatedAt time.Time
	UpdatedAt time.Time
	// Filled by reads from the open allocation, if any.
	AllocationID string
	GPUIDs       []string
}

// MaxStartupCommandBytes bounds an instance's startup command.
const MaxStartupCommandBytes = 4096

// StartupStatus is how an instance's startup command stands, as its agent
// last reported it. The instance itself keeps running whatever the
// command does.
type StartupStatus struct {
	// State is "none" (no startup command), "running", "exited" or
	// "failed" (it could not be started: Error says why).
	State     string
	Command   []string // as run (argv)
	StartedAt *time.Time
	ExitedAt  *time.Time
	// ExitCode is the exit code, -1 when a signal ended it (Signal names
	// it); nil while it runs.
	ExitCode   *int
	Signal     string
	Error      string
	ReportedAt time.Time
	// EventKey names the exit or failure this status reports ("" while
	// none): the instance's event for it is recorded once per key.
	EventKey string
}

// Active reports whether the instance is neither deleted nor being deleted.
func (i *Instance) Active() bool {
	return i.State != StateDeleting && i.State != StateDeleted
}

// Allocation is one placement of an instance on a host's GPUs, from start to
// end, with the reason it began and ended. At most one open allocation holds
// a GPU; the database enforces it.
type Allocation struct {
	ID          string
	InstanceID  string
	HostID      string
	GPUIDs      []string
	StartedAt   time.Time
	EndedAt     *time.Time
	StartReason string // start, upgrade, migrate, failover
	EndReason   string // stop, delete, failed, upgrade, migrate, failover
	// PricePermille is the share of the list price the allocation is
	// billed at, in permille: 0 (or 1000) for full price, less on GPUs
	// listed as degraded (the mean of its GPUs' shares).
	PricePermille int
}

// Volume is an instance's data disk; it survives stop and start.
type Volume struct {
	ID         string
	InstanceID string
	AccountID  string
	HostID     string
	SizeGiB    int
	Name       string // the runtime's name for it
	CreatedAt  time.Time
	DeletedAt  *time.Time
}

// Event is one entry of an instance's history.
type Event struct {
	ID         string
	InstanceID string
	At         time.Time
	Kind       string // created, placed, provisioning, running, stopping, ...
	Message    string
}

// IdempotencyRecord is a stored API answer to a POST with an Idempotency-Key.
type IdempotencyRecord struct {
	AccountID   string
	Key         string
	Method      string
	Path        string
	RequestHash string
	Status      int
	Body        []byte
	CreatedAt   time.Time
}

// PriceVersion is one complete price list, in force from EffectiveAt until
// the next version's EffectiveAt. Document is the rating engine's encoding
// of the list (JSON); the store keeps it as it is. Versions are only ever
// added: a price change applies from its effective time, never backwards.
type PriceVersion struct {
	ID          string
	EffectiveAt time.Time
	Document    []byte
	Note        string
	CreatedBy   string // account id, "" for the system's defaults
	CreatedAt   time.Time
}

// SSHKey is a public key an account registered to reach its instances.
type SSHKey struct {
	ID          string
	AccountID   string
	Name        string // the key's comment, or what the customer called it
	PublicKey   string // authorized_keys form: "ssh-ed25519 AAAA..."
	Fingerprint string // "SHA256:..." as OpenSSH prints it; unique across accounts
	CreatedAt   time.Time
	LastUsedAt  *time.Time
}

// AccessSession is one audited connection to an instance through the SSH
// gateway or the port proxy, refused ones included.
type AccessSession struct {
	ID         string
	AccountID  string // "" when the key was unknown
	InstanceID string
	Kind       string // shell, exec, sftp, forward, proxy, refused
	Detail     string // the command, the forwarded address, or why it was refused
	ClientAddr string
	StartedAt  time.Time
	EndedAt    *time.Time
	ExitStatus *int
	BytesIn    int64
	BytesOut   int64
}
