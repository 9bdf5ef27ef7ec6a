// Package apiv1 holds the JSON wire types of the public API under /api/v1,
// shared by the server (internal/api) and the Go client (internal/client).
// Field names are snake_case; money is integer fen; times are RFC 3339 UTC.
package apiv1

import (
	"encoding/json"
	"time"
)

// Problem is an RFC 9457 problem+json body. Code is the stable machine code
// (gpurent.Code); Detail is safe to show.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
	Code     string `json:"code"`
}

// RegisterRequest creates a customer account.
type RegisterRequest struct {
	Email    string `json:"email"`
	Name     string `json:"name"`
	Password string `json:"password"`
}

// LoginRequest trades a password for a session token.
type LoginRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// LoginResponse carries the bearer token.
type LoginResponse struct {
	Token     string     `json:"token"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Account   Account    `json:"account"`
}

// Account is the caller's account.
type Account struct {
	ID         string    `json:"id"`
	Email      string    `json:"email"`
	Name       string    `json:"name"`
	Role       string    `json:"role"`
	BalanceFen int64     `json:"balance_fen"`
	CreatedAt  time.Time `json:"created_at"`
	// AcademicUntil is when the account's academic verification ends.
	AcademicUntil *time.Time `json:"academic_until,omitempty"`
}

// Prices are list prices in fen per GPU.
type Prices struct {
	HourlyFen  int64 `json:"hourly_fen"`
	DailyFen   int64 `json:"daily_fen"`
	WeeklyFen  int64 `json:"weekly_fen"`
	MonthlyFen int64 `json:"monthly_fen"`
}

// ZoneAvailability is how many GPUs of a type a zone has.
type ZoneAvailability struct {
	ZoneID string `json:"zone_id"`
	Total  int    `json:"total"`
	Free   int    `json:"free"`
	// MaxPerHost is the largest count one instance can get on one host now.
	MaxPerHost int `json:"max_per_host"`
	// Degraded are the GPUs listed as degraded that are free now, apart
	// from Free; absent when there are none.
	Degraded *DegradedAvailability `json:"degraded,omitempty"`
}

// DegradedAvailability is what is free of the GPUs listed as degraded:
// slower than the fleet median of their type (they failed the benchmark),
// rented only on request ("degraded": true) at a share of the list price
// scaled by their measured speed.
type DegradedAvailability struct {
	Free       int `json:"free"`
	MaxPerHost int `json:"max_per_host"`
	// The lowest and highest price share among them, in permille of the
	// list price (850 = 85%).
	MinPricePermille int `json:"min_price_permille"`
	MaxPricePermille int `json:"max_price_permille"`
}

// GPUType is a SKU with its spec, prices and availability now.
type GPUType struct {
	ID              string             `json:"id"`
	Name            string             `json:"name"`
	MemoryGB        int                `json:"memory_gb"`
	MemBandwidthGBs int                `json:"mem_bandwidth_gbs"`
	FP32TFLOPS      float64            `json:"fp32_tflops"`
	BF16TFLOPS      float64            `json:"bf16_tflops"`
	FP8TFLOPS       float64            `json:"fp8_tflops,omitempty"`
	NVLinkGBs       int                `json:"nvlink_gbs"`
	PeerToPeer      bool               `json:"peer_to_peer"`
	CPUMilliPerGPU  int64              `json:"cpu_milli_per_gpu"`
	MemoryMiBPerGPU int64              `json:"memory_mib_per_gpu"`
	Prices          Prices             `json:"prices"`
	Total           int                `json:"total"`
	Free            int                `json:"free"`
	Zones           []ZoneAvailability `json:"zones"`
	// Degraded sums the zones' degraded GPUs; absent when none is free.
	Degraded *DegradedAvailability `json:"degraded,omitempty"`
}

// Zone is a datacentre site.
type Zone struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Region   string `json:"region"`
	ProbeURL string `json:"probe_url,omitempty"`
}

// SetZoneProbeRequest sets the endpoint customers' browsers time for a
// zone ("" removes it).
type SetZoneProbeRequest struct {
	ProbeURL string `json:"probe_url"`
}

// CreateInstanceRequest rents GPUs.
type CreateInstanceRequest struct {
	Name      string `json:"name,omitempty"`
	GPUType   string `json:"gpu_type"`
	GPUCount  int    `json:"gpu_count"`
	NoGPU     bool   `json:"no_gpu,omitempty"` // no-GPU mode: gpu_count 0, the token price
	Image     string `json:"image"`
	Zone      string `json:"zone,omitempty"`
	Plan      string `json:"plan,omitempty"` // default "hourly"
	VolumeGiB int    `json:"volume_gib,omitempty"`
	// Degraded rents only GPUs listed as degraded (slower, at a share of
	// the list price); without it, only GPUs that are not. Hourly plan,
	// gpu_count at least 1.
	Degraded bool `json:"degraded,omitempty"`
	// StartupCommand is what the instance's init starts, a shell line run
	// with /bin/sh -c; "" runs none; left out (or null), the image's own
	// entrypoint and command. At most 4096 bytes, no NUL.
	StartupCommand *string `json:"startup_command,omitempty"`
}

// Instance is a rental.
type Instance struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	AccountID   string    `json:"account_id"`
	State       string    `json:"state"`
	StateReason string    `json:"state_reason,omitempty"`
	Image       string    `json:"image"`
	GPUType     string    `json:"gpu_type"`
	GPUCount    int       `json:"gpu_count"`
	Zone        string    `json:"zone,omitempty"`
	HostID      string    `json:"host_id,omitempty"`
	HostName    string    `json:"host_name,omitempty"`
	Runtime     string    `json:"runtime,omitempty"` // "docker", or "process" (demo only, no isolation)
	Plan        string    `json:"plan"`
	CPUMilli    int64     `json:"cpu_milli"`
	MemoryMiB   int64     `json:"memory_mib"`
	GPUs        []string  `json:"gpus"` // UUIDs of the GPUs held now
	Volume      *Volume   `json:"volume,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	Events      []Event   `json:"events,omitempty"` // in GET /instances/{id} only
	// StartupCommand is what the instance's init starts when the
	// instance starts: null the image's own entrypoint and command, ""
	// none, else a shell line.
	StartupCommand *string `json:"startup_command"`
	// Startup is how the startup command stands, as the instance's agent
	// last reported it; left out before any report.
	Startup *StartupStatus `json:"startup,omitempty"`
}

// StartupStatus is how an instance's startup command stands. The
// instance keeps running whatever the command does.
type StartupStatus struct {
	// State is none, running, exited or failed (it could not be started).
	State string `json:"state"`
	// Summary says it in a line, e.g. "exited 1 at 2026-12-02 12:03:04
	// UTC (the instance keeps running)".
	Summary   string     `json:"summary"`
	Command   []string   `json:"command,omitempty"` // as run (argv)
	StartedAt *time.Time `json:"started_at,omitempty"`
	ExitedAt  *time.Time `json:"exited_at,omitempty"`
	// ExitCode is its exit code, -1 when a signal ended it (Signal names it).
	ExitCode   *int      `json:"exit_code,omitempty"`
	Signal     string    `json:"signal,omitempty"`
	Error      string    `json:"error,omitempty"`
	ReportedAt time.Time `json:"reported_at"`
}

// SetStartupRequest is the body of PUT /instances/{id}/startup: either
// startup_command (a shell line, or "" for none) or image_default true.
type SetStartupRequest struct {
	StartupCommand *string `json:"startup_command,omitempty"`
	ImageDefault   bool    `json:"image_default,omitempty"`
}

// SetStartupResult is the answer of PUT /instances/{id}/startup: the
// instance, and when the change applies.
type SetStartupResult struct {
	Instance
	// Applies is "next_start": a running instance keeps the command it
	// started with until it is next started.
	Applies string `json:"applies"`
	Message string `json:"message"`
}

// Volume is an instance's data disk.
type Volume struct {
	ID        string `json:"id"`
	SizeGiB   int    `json:"size_gib"`
	MountPath string `json:"mount_path"`
}

// Event is one entry of an instance's history.
type Event struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	Message string    `json:"message"`
}

// InstanceList is the answer of GET /instances.
type InstanceList struct {
	Instances []Instance `json:"instances"`
}

// GPUTypeList is the answer of GET /gpu-types.
type GPUTypeList struct {
	GPUTypes []GPUType `json:"gpu_types"`
}

// ZoneList is the answer of GET /zones.
type ZoneList struct {
	Zones []Zone `json:"zones"`
}

// HostGPU is one GPU of a host, for operators.
type HostGPU struct {
	ID         string `json:"id"`
	Index      int    `json:"index"`
	Type       string `json:"type"`
	Health     string `json:"health"`
	TopoGroup  string `json:"topo_group"`
	InstanceID string `json:"instance_id,omitempty"`
}

// Host is a GPU server, for operators.
type Host struct {
	ID           string     `json:"id"`
	Name         string     `json:"name"`
	Zone         string     `json:"zone"`
	State        string     `json:"state"`
	Runtime      string     `json:"runtime"`
	CPUMilli     int64      `json:"cpu_milli"`
	MemoryMiB    int64      `json:"memory_mib"`
	AgentVersion string     `json:"agent_version"`
	LastSeenAt   *time.Time `json:"last_seen_at,omitempty"`
	GPUsTotal    int        `json:"gpus_total"`
	GPUsFree     int        `json:"gpus_free"`
	GPUs         []HostGPU  `json:"gpus"`
}

// HostList is the answer of GET /hosts.
type HostList struct {
	Hosts []Host `json:"hosts"`
}

// HostStateRequest sets a host's state (cordon, uncordon, drain).
type HostStateRequest struct {
	State string `json:"state"`
}

// CreateTokenRequest makes an API token for scripts.
type CreateTokenRequest struct {
	Name string `json:"name"`
}

// Token describes a bearer token. Token (the secret) is present only in the
// answer that created it, never in a replay of that answer.
type Token struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Kind      string     `json:"kind"`
	Token     string     `json:"token,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// QuoteLine is the part of a quote at one rate.
type QuoteLine struct {
	Window  string `json:"window"` // "peak", "off-peak" or "no-gpu"
	Hours   string `json:"hours"`  // exact to four decimals, e.g. "55" or "0.5083"
	Seconds int64  `json:"seconds"`
	RateFen int64  `json:"rate_fen"` // per GPU-hour (per instance-hour with no GPUs)
	Units   int64  `json:"units"`
	Exact   string `json:"exact_fen"` // the exact amount as a fraction, before rounding
	Fen     int64  `json:"fen"`       // rounded half-up, once per line
}

// QuotePackage is one package alternative.
type QuotePackage struct {
	Plan     string `json:"plan"`
	Periods  int64  `json:"periods"`
	UnitFen  int64  `json:"unit_fen"` // per GPU per period
	TotalFen int64  `json:"total_fen"`
}

// QuotePlan is a quote at one set of prices (list or academic).
type QuotePlan struct {
	Lines        []QuoteLine    `json:"lines"`
	HourlyFen    int64          `json:"hourly_fen"`
	Packages     []QuotePackage `json:"packages"`
	CheapestPlan string         `json:"cheapest_plan"`
	CheapestFen  int64          `json:"cheapest_fen"`
}

// Quote is the answer of GET /price: what a planned rental costs on every
// plan, at list prices and at academic prices.
type Quote struct {
	GPUType  string    `json:"gpu_type"`
	GPUCount int       `json:"gpu_count"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	TimeZone string    `json:"time_zone"`
	OffPeak  string    `json:"off_peak"` // the off-peak rule, e.g. "22:00–08:00 daily, weekends"
	List     QuotePlan `json:"list"`
	Academic QuotePlan `json:"academic"`
	// AcademicApplies says the caller is a verified academic account.
	AcademicApplies bool `json:"academic_applies"`
	// PricePermille is the share of the list price the quote is at (GPUs
	// listed as degraded; hourly only); absent at the full price.
	PricePermille int `json:"price_permille,omitempty"`
}

// PriceVersion is one version of the price list. PriceList is the price
// list document (see docs/billing.md): the off-peak rule and every GPU
// type's prices in fen.
type PriceVersion struct {
	ID        string          `json:"id"`
	Effective time.Time       `json:"effective"`
	Current   bool            `json:"current"`
	PriceList json.RawMessage `json:"price_list"`
}

// PriceVersionList is the answer of GET /prices, oldest version first.
type PriceVersionList struct {
	TimeZone string         `json:"time_zone"`
	Versions []PriceVersion `json:"versions"`
}

// AddPriceVersionRequest adds a version of the price list (operators). The
// price list's "effective" must not be in the past.
type AddPriceVersionRequest struct {
	Note      string          `json:"note"`
	PriceList json.RawMessage `json:"price_list"`
}

// AcademicApplyRequest applies for academic prices: "email_domain" rests on
// the account's university e-mail address, "proof" on what Proof holds (a
// description, a link, or a small file as a data: URL).
type AcademicApplyRequest struct {
	Method      string `json:"method"`
	Institution string `json:"institution"`
	Proof       string `json:"proof,omitempty"`
}

// AcademicDecision is an operator's note on an approval, or the reason for
// a rejection (required).
type AcademicDecision struct {
	Note string `json:"note,omitempty"`
}

// AcademicAuditEntry is one step in an application's history.
type AcademicAuditEntry struct {
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Action string    `json:"action"`
	Note   string    `json:"note,omitempty"`
}

// AcademicApplication is an application for academic prices.
type AcademicApplication struct {
	ID            string               `json:"id"`
	AccountID     string               `json:"account_id"`
	Method        string               `json:"method"`
	Institution   string               `json:"institution"`
	Email         string               `json:"email"`
	Proof         string               `json:"proof,omitempty"`
	State         string               `json:"state"`
	DecidedAt     *time.Time           `json:"decided_at,omitempty"`
	Reason        string               `json:"reason,omitempty"`
	VerifiedUntil *time.Time           `json:"verified_until,omitempty"`
	CreatedAt     time.Time            `json:"created_at"`
	Audit         []AcademicAuditEntry `json:"audit,omitempty"` // in GET .../{id} only
}

// AcademicApplicationList is the answer of GET /academic/applications.
type AcademicApplicationList struct {
	Applications []AcademicApplication `json:"applications"`
}

// Wallet is the answer of GET /wallet: the caller's balances from the
// ledger, the burn rate of its running instances and the runway.
type Wallet struct {
	AccountID string    `json:"account_id"`
	At        time.Time `json:"at"`
	// CashFen is money paid in; CreditFen the live promo and SLA credit;
	// SpendableFen their sum, what instances burn (credit first).
	CashFen      int64 `json:"cash_fen"`
	CreditFen    int64 `json:"credit_fen"`
	SpendableFen int64 `json:"spendable_fen"`
	// ArrearsFen is what is owed for storage; no instance starts while it
	// is above zero.
	ArrearsFen int64 `json:"arrears_fen"`
	// Credits are the live credit lots in the order they burn.
	Credits          []CreditLot `json:"credits"`
	BurnFenPerHour   int64       `json:"burn_fen_per_hour"` // rounded up to the fen
	RunningInstances int         `json:"running_instances"`
	// RunwaySeconds is how long the spendable balance lasts at the burn
	// rate; null when nothing burns.
	RunwaySeconds *int64 `json:"runway_seconds"`
}

// CreditLot is one promo or SLA credit grant with what is left of it.
type CreditLot struct {
	ID         string    `json:"id"`
	Kind       string    `json:"kind"` // promo or sla
	BalanceFen int64     `json:"balance_fen"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// LedgerPosting is one posting of a ledger entry: Account is the account's
// kind (cash, promo, sla, receivable for the customer; revenue, clearing,
// breakage, promo_issued, sla_issued for the platform), Lot the credit lot.
type LedgerPosting struct {
	Account   string `json:"account"`
	Lot       string `json:"lot,omitempty"`
	Platform  bool   `json:"platform"`
	AmountFen int64  `json:"amount_fen"`
}

// LedgerEntry is one ledger transaction of the caller.
type LedgerEntry struct {
	Seq       int64           `json:"seq"`
	Key       string          `json:"key"`
	Op        string          `json:"op"` // topup, grant, debit, expire, settle
	At        time.Time       `json:"at"`
	AmountFen int64           `json:"amount_fen"`
	NetFen    int64           `json:"net_fen"` // the change to the caller's accounts together
	Charge    string          `json:"charge,omitempty"`
	Credit    string          `json:"credit,omitempty"`
	ExpiresAt *time.Time      `json:"expires_at,omitempty"`
	Lot       string          `json:"lot,omitempty"`
	Note      string          `json:"note"`
	Postings  []LedgerPosting `json:"postings"`
}

// LedgerEntryList is the answer of GET /wallet/transactions, newest first.
// NextBefore, when set, is the before= of the next page.
type LedgerEntryList struct {
	Entries    []LedgerEntry `json:"entries"`
	NextBefore int64         `json:"next_before,omitempty"`
}

// CreditRequest is an operator's top-up of an account.
type CreditRequest struct {
	AmountFen int64  `json:"amount_fen"`
	Reason    string `json:"reason"`
}

// CreateVoucherRequest makes a voucher (operators). Kind is cash (a top-up)
// or promo (credit that expires with the voucher); MaxRedemptions 1 is a
// single-use code.
type CreateVoucherRequest struct {
	AmountFen      int64     `json:"amount_fen"`
	Kind           string    `json:"kind"`
	ExpiresAt      time.Time `json:"expires_at"`
	MaxRedemptions int       `json:"max_redemptions"`
}

// Voucher is a redeemable code.
type Voucher struct {
	ID             string    `json:"id"`
	Code           string    `json:"code"` // grouped for people: "7KQ2-M9XD-4RTB"
	Kind           string    `json:"kind"`
	AmountFen      int64     `json:"amount_fen"`
	ExpiresAt      time.Time `json:"expires_at"`
	MaxRedemptions int       `json:"max_redemptions"`
	Redemptions    int       `json:"redemptions"`
	CreatedAt      time.Time `json:"created_at"`
}

// RedeemVoucherRequest redeems a code; case, spaces and dashes do not
// matter.
type RedeemVoucherRequest struct {
	Code string `json:"code"`
}

// VoucherRedemption is what redeeming did. AlreadyRedeemed: the caller had
// redeemed this code before, and Entry is that first redemption.
type VoucherRedemption struct {
	Code            string      `json:"code"`
	Kind            string      `json:"kind"`
	AmountFen       int64       `json:"amount_fen"`
	RedeemedAt      time.Time   `json:"redeemed_at"`
	AlreadyRedeemed bool        `json:"already_redeemed"`
	Entry           LedgerEntry `json:"entry"`
}

// CreatePaymentRequest starts a top-up through a payment provider.
type CreatePaymentRequest struct {
	Provider  string `json:"provider"`
	AmountFen int64  `json:"amount_fen"`
}

// Payment is a top-up through a provider: pending until the provider
// confirms (or fails) it; the wallet is credited on confirmation only.
type Payment struct {
	ID          string     `json:"id"`
	Provider    string     `json:"provider"`
	PaymentID   string     `json:"payment_id"`
	AmountFen   int64      `json:"amount_fen"`
	State       string     `json:"state"` // pending, confirmed, failed
	PayURL      string     `json:"pay_url"`
	CreatedAt   time.Time  `json:"created_at"`
	ConfirmedAt *time.Time `json:"confirmed_at,omitempty"`
}

// SettlePaymentRequest is an operator's word on a payment that no gateway
// confirms (a bank transfer): the amount that arrived, or that it failed.
type SettlePaymentRequest struct {
	AmountFen int64 `json:"amount_fen"`
	Failed    bool  `json:"failed,omitempty"`
}

// PaymentCallbackResponse answers a provider's callback. AlreadySettled: the
// payment was settled by an earlier callback, nothing changed.
type PaymentCallbackResponse struct {
	Payment        Payment `json:"payment"`
	AlreadySettled bool    `json:"already_settled"`
}

// StatementLine is one instance's usage at one rate in a month.
type StatementLine struct {
	InstanceID   string `json:"instance_id"`
	InstanceName string `json:"instance_name"`
	GPUType      string `json:"gpu_type"`
	GPUs         int    `json:"gpus"`
	Window       string `json:"window"` // peak, off-peak, no-gpu, correction
	// RateFen is the rate billed; on degraded GPUs it is ListRateFen scaled
	// by PricePermille (the share of the list price, 0: full price).
	RateFen       int64  `json:"rate_fen"`
	ListRateFen   int64  `json:"list_rate_fen,omitempty"`
	PricePermille int    `json:"price_permille,omitempty"`
	Units         int64  `json:"units"`
	Seconds       int64  `json:"seconds"`
	Exact         string `json:"exact_fen"`
	Fen           int64  `json:"fen"`
}

// Statement is an account's usage in one calendar month (Asia/Shanghai).
type Statement struct {
	AccountID string `json:"account_id"`
	Month     string `json:"month"` // "2026-11"
	TimeZone  string `json:"time_zone"`
	Open      bool   `json:"open"` // the month, or a run in it, is not over
	// Final: stored, never to change; later usage is corrected next month.
	Final       bool            `json:"final"`
	FinalizedAt *time.Time      `json:"finalized_at,omitempty"`
	Lines       []StatementLine `json:"lines"`
	TotalFen    int64           `json:"total_fen"`
}

// SpendLimits are a customer's caps on usage per calendar day and month in
// Asia/Shanghai (0: none), with what was spent so far.
type SpendLimits struct {
	DailyFen      int64  `json:"daily_fen"`
	MonthlyFen    int64  `json:"monthly_fen"`
	StopRunning   bool   `json:"stop_running"` // reaching a cap stops running instances too
	SpentTodayFen int64  `json:"spent_today_fen"`
	SpentMonthFen int64  `json:"spent_month_fen"`
	Reached       string `json:"reached,omitempty"` // "daily" or "monthly"
}

// SetSpendLimitsRequest sets the caps.
type SetSpendLimitsRequest struct {
	DailyFen    int64 `json:"daily_fen"`
	MonthlyFen  int64 `json:"monthly_fen"`
	StopRunning bool  `json:"stop_running"`
}

// AccountEvent is one entry of an account's history (runway alerts, stops).
type AccountEvent struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	Message string    `json:"message"`
}

// AccountEvents is the answer of GET /wallet/events: where alerts are
// posted and the newest events first.
type AccountEvents struct {
	WebhookURL string         `json:"webhook_url"`
	Events     []AccountEvent `json:"events"`
}

// SetWebhookRequest sets where alerts are posted ("" clears it).
type SetWebhookRequest struct {
	URL string `json:"url"`
}

// RevenueDay is one day's revenue (Asia/Shanghai), in fen.
type RevenueDay struct {
	Day      string           `json:"day"`
	TotalFen int64            `json:"total_fen"`
	ByType   map[string]int64 `json:"by_gpu_type"`
}

// Revenue is the operator's revenue report: usage revenue per day and per
// GPU type ("other" for debits not from usage).
type Revenue struct {
	From     string           `json:"from"`
	To       string           `json:"to"`
	TimeZone string           `json:"time_zone"`
	Days     []RevenueDay     `json:"days"`
	ByType   map[string]int64 `json:"by_gpu_type"`
	TotalFen int64            `json:"total_fen"`
}

// ChangePlanRequest converts an instance to another billing plan.
type ChangePlanRequest struct {
	Plan string `json:"plan"` // hourly, daily, weekly or monthly
}

// PlanChange is one conversion between plans. From hourly it is applied at
// once; from a package it is pending until the paid period ends.
type PlanChange struct {
	ID          string    `json:"id"`
	InstanceID  string    `json:"instance_id"`
	From        string    `json:"from"`
	To          string    `json:"to"`
	EffectiveAt time.Time `json:"effective_at"`
	State       string    `json:"state"` // pending, applied
}

// ChangePlanResult is what a conversion did: the change made (none when the
// request only canceled a pending one), the pending change it canceled,
// and the first package period charged.
type ChangePlanResult struct {
	Change     *PlanChange `json:"change,omitempty"`
	Canceled   *PlanChange `json:"canceled,omitempty"`
	ChargedFen int64       `json:"charged_fen"`
}

// PlanHistory is an instance's plan now and every change, by effective time.
type PlanHistory struct {
	InstanceID string       `json:"instance_id"`
	Plan       string       `json:"plan"`
	Changes    []PlanChange `json:"changes"`
}

// SSHKey is a public key registered on the account.
type SSHKey struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	PublicKey   string     `json:"public_key"`
	Fingerprint string     `json:"fingerprint"`
	CreatedAt   time.Time  `json:"created_at"`
	LastUsedAt  *time.Time `json:"last_used_at,omitempty"`
}

// AddSSHKeyRequest registers a public key (authorized_keys form).
type AddSSHKeyRequest struct {
	PublicKey string `json:"public_key"`
	Name      string `json:"name,omitempty"` // default: the key's comment
}

// InstanceAccess says how to reach an instance over SSH through the
// gateway: the command to run and the gateway's host key to verify.
type InstanceAccess struct {
	InstanceID         string `json:"instance_id"`
	Host               string `json:"host"`
	Port               int    `json:"port"`
	User               string `json:"user"` // the instance id
	SSHCommand         string `json:"ssh_command"`
	HostKey            string `json:"host_key"`             // authorized_keys form
	HostKeyFingerprint string `json:"host_key_fingerprint"` // SHA256:..., as ssh prints it
	KnownHostsLine     string `json:"known_hosts_line"`     // for ~/.ssh/known_hosts
	Running            bool   `json:"running"`              // reachable now
}

// PortLink is a browser link to an HTTP port of an instance (Jupyter,
// TensorBoard), for its owner only, valid until ExpiresAt (the first visit
// sets a cookie that lasts the browser session).
type PortLink struct {
	InstanceID string    `json:"instance_id"`
	Port       int       `json:"port"`
	URL        string    `json:"url"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// AccessSession is one audited SSH or proxy session.
type AccessSession struct {
	ID         string     `json:"id"`
	InstanceID string     `json:"instance_id"`
	Kind       string     `json:"kind"`
	Detail     string     `json:"detail,omitempty"`
	ClientAddr string     `json:"client_addr"`
	StartedAt  time.Time  `json:"started_at"`
	EndedAt    *time.Time `json:"ended_at,omitempty"`
	ExitStatus *int       `json:"exit_status,omitempty"`
	BytesIn    int64      `json:"bytes_in"`
	BytesOut   int64      `json:"bytes_out"`
}
