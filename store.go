package gpurent

import (
	"context"
	"time"
)

// Store is the storage contract. The SQLite and PostgreSQL adapters implement
// it and are held to one conformance suite (internal/store/storetest).
//
// Reads that find nothing return an *Error with CodeNotFound; writes that
// break a uniqueness rule return CodeConflict. Times are stored in UTC and
// come back in UTC.
type Store interface {
	Queries
	Transactor
	WriterScope
	// Ping checks the database is reachable (readiness).
	Ping(ctx context.Context) error
	// Backend names the database: "sqlite" or "postgres". It is for
	// people (logs, the status answer); code asks the store what it can do
	// (WriterScope), never its name.
	Backend() string
	Close() error
}

// WriterScope says who may write to the database besides this process.
type WriterScope interface {
	// SoleWriter reports whether this process is the database's only
	// writer (SQLite: the file is held by one process), so that every
	// change is made, and seen, here: nothing need be polled for. False
	// when other processes may write too (PostgreSQL shared by replicas).
	SoleWriter() bool
}

// InstanceFilter selects instances. Empty fields select all.
type InstanceFilter struct {
	AccountID string
	HostID    string
	States    []InstanceState
	// ActiveOnly leaves out deleted instances.
	ActiveOnly bool
}

// Queries are the reads and writes, usable alone or inside InTx. It is only
// the embedding of the per-noun contracts below (deps_test.go holds that):
// a service names, on its own side, the few of them it uses, and InTx still
// hands out every one.
type Queries interface {
	AccountStore
	TokenStore
	CatalogStore
	FleetStore
	HostCredentialStore
	InstanceStore
	VolumeStore
	AllocationStore
	OperationStore
	GPUHealthStore
	IncidentStore
	BenchStore
	CertStore
	IdleRunStore
	EventStore
	PriceStore
	LedgerStore
	VoucherStore
	PaymentStore
	AcademicStore
	UsageStore
	SpendLimitStore
	AlertStore
	StatementStore
	VolumeChargeStore
	ArrearsStore
	PlanChangeStore
	SSHKeyStore
	AccessStore
	IdempotencyStore
	ImageStore
}

// Transactor runs work in one write transaction; Store has it, and a service
// that needs several writes to stand or fall together names it beside the
// per-noun contracts it reads and writes outside a transaction.
type Transactor interface {
	// InTx runs fn in one write transaction. fn's Queries see its own
	// writes; an error from fn (or a panic) rolls everything back.
	InTx(ctx context.Context, fn func(q Queries) error) error
}

// AccountStore holds the accounts. Email is unique case-insensitively
// (conflict).
type AccountStore interface {
	CreateAccount(ctx context.Context, a *Account) error
	AccountByID(ctx context.Context, id string) (*Account, error)
	AccountByEmail(ctx context.Context, email string) (*Account, error)
	ListAccounts(ctx context.Context) ([]Account, error)
	// SetPasswordHash replaces the account's password hash (not_found for
	// an unknown account).
	SetPasswordHash(ctx context.Context, accountID, hash string) error
	// SetEmailVerified records that the account proved it receives mail at
	// email (again: the first time stands). EmailVerifiedAt answers when,
	// nil when the account never proved that address.
	SetEmailVerified(ctx context.Context, accountID, email string, at time.Time) error
	EmailVerifiedAt(ctx context.Context, accountID, email string) (*time.Time, error)
}

// TokenStore holds the accounts' API and session tokens, looked up by the
// hash of the secret.
type TokenStore interface {
	CreateToken(ctx context.Context, t *Token) error
	TokenByHash(ctx context.Context, hash string) (*Token, error)
	// AccountByTokenHash returns the token whose secret hashes to hash and
	// the account holding it, in one query: the path every authenticated
	// request takes. Like TokenByHash it returns expired tokens too, with
	// ExpiresAt set, so that the caller decides; an unknown (or empty)
	// hash is CodeNotFound.
	AccountByTokenHash(ctx context.Context, hash string) (*Account, *Token, error)
	DeleteToken(ctx context.Context, id string) error
	// ListTokens returns the account's tokens of the given kinds (none
	// given: every kind), oldest first.
	ListTokens(ctx context.Context, accountID string, kinds ...TokenKind) ([]Token, error)
	// DeleteAccountTokens deletes the account's tokens of the given kinds
	// (at least one kind: invalid otherwise) and answers how many it
	// deleted.
	DeleteAccountTokens(ctx context.Context, accountID string, kinds ...TokenKind) (int, error)
}

// CatalogStore holds the GPU types and zones.
type CatalogStore interface {
	UpsertGPUType(ctx context.Context, t GPUType) error
	GPUType(ctx context.Context, id string) (*GPUType, error)
	GPUTypes(ctx context.Context) ([]GPUType, error)
	UpsertZone(ctx context.Context, z Zone) error
	Zone(ctx context.Context, id string) (*Zone, error)
	Zones(ctx context.Context) ([]Zone, error)
}

// FleetStore holds the hosts and their GPUs.
type FleetStore interface {
	// UpsertHost inserts a host, or updates the one with the same Name
	// (zone, resources, runtime, agent version, agent token hash), keeping
	// its ID, state and generation; h.ID is set to the stored ID.
	UpsertHost(ctx context.Context, h *Host) error
	// CreateHost inserts a new host (a conflict when its Name is taken:
	// never an update, so that no registration takes an existing host
	// over); h is updated as UpsertHost does.
	CreateHost(ctx context.Context, h *Host) error
	// SyncHostGPUs upserts the host's GPUs by ID. GPUs of the host missing
	// from gpus get health "missing"; no GPU row is ever deleted. A GPU
	// whose row belongs to another host that still holds an agent
	// credential is never moved: a conflict, writing nothing (the
	// database decides); one of a reset host moves.
	SyncHostGPUs(ctx context.Context, hostID string, gpus []GPU) error
	// HostByID returns the host with its GPUs (each with its holder).
	HostByID(ctx context.Context, id string) (*Host, error)
	HostByAgentTokenHash(ctx context.Context, hash string) (*Host, error)
	// ListHosts returns every host with its GPUs, ordered by name, each GPU
	// with AllocationID/InstanceID of the open allocation holding it.
	ListHosts(ctx context.Context) ([]Host, error)
	SetHostState(ctx context.Context, id string, s HostState) error
	TouchHost(ctx context.Context, id string, at time.Time) error
	// BumpHostGeneration increments the host's desired-state generation
	// and returns the new value.
	BumpHostGeneration(ctx context.Context, hostID string) (int64, error)
}

// HostCredentialStore holds the per-host join tokens and the hosts' agent
// credentials (issue 14).
type HostCredentialStore interface {
	// CreateJoinToken stores a join token (ID and CreatedAt filled when
	// empty); a conflict when its hash exists.
	CreateJoinToken(ctx context.Context, t *JoinToken) error
	// UseJoinToken marks the unused, unrevoked, unexpired (at at) token
	// whose secret hashes to hash as used by the host called name, and
	// returns it: one conditional write, so that of concurrent uses
	// exactly one wins. Unknown: not_found; used, revoked or expired:
	// conflict, with the token's state in the message.
	UseJoinToken(ctx context.Context, hash, name string, at time.Time) (*JoinToken, error)
	// ListJoinTokens lists every join token, newest first.
	ListJoinTokens(ctx context.Context) ([]JoinToken, error)
	// RevokeJoinToken revokes an unused token (not_found when unknown; a
	// used or revoked one is left as it is: conflict).
	RevokeJoinToken(ctx context.Context, id string, at time.Time) error
	// ResetHostCredential invalidates the host's agent credential (its
	// agent token no longer authenticates), forgets when it was last seen
	// (it is offline at once) and revokes the unused join tokens issued
	// for it. not_found for an unknown host.
	ResetHostCredential(ctx context.Context, hostID string, at time.Time) error
}

// InstanceStore holds the instances. CreateInstance is a conflict when
// (AccountID, IdempotencyKey) exists (key set). UpdateInstance writes Name,
// HostID, State, StateReason, VolumeID, TypeID, GPUCount, CPUMilli,
// MemoryMiB, Failover, StartupCommand, UpdatedAt where Version matches,
// then bumps in.Version; a stale Version is a conflict. Both refuse a
// StartupCommand longer than MaxStartupCommandBytes or holding a NUL
// (CodeInvalid).
type InstanceStore interface {
	CreateInstance(ctx context.Context, in *Instance) error
	InstanceByID(ctx context.Context, id string) (*Instance, error)
	InstanceByIdempotencyKey(ctx context.Context, accountID, key string) (*Instance, error)
	ListInstances(ctx context.Context, f InstanceFilter) ([]Instance, error)
	UpdateInstance(ctx context.Context, in *Instance) error
	// RecordStartupStatus keeps st as the instance's latest startup status
	// (its Version is left alone: a report races no customer's change)
	// and answers whether st.EventKey is set and differs from the key
	// stored, which it then stores: the test and the write are one
	// conditional statement (atomic in one statement), so that of two
	// reports of one exit exactly one answers true. not_found for an
	// unknown instance.
	RecordStartupStatus(ctx context.Context, instanceID string, st *StartupStatus) (newEvent bool, err error)
}

// VolumeStore holds the instances' volumes.
type VolumeStore interface {
	CreateVolume(ctx context.Context, v *Volume) error
	VolumeByID(ctx context.Context, id string) (*Volume, error)
	MarkVolumeDeleted(ctx context.Context, id string, at time.Time) error
	// SetVolumeHost records that the volume's data now lives on hostID.
	SetVolumeHost(ctx context.Context, volumeID, hostID string) error
}

// AllocationStore holds the allocations of GPUs to instances.
// CreateAllocation inserts the allocation and one row per GPU; if any GPU is
// held by another open allocation it fails with CodeConflict and writes
// nothing (a database constraint decides, not a prior read). EndAllocation
// releases the GPUs; ending an ended allocation changes nothing.
type AllocationStore interface {
	CreateAllocation(ctx context.Context, a *Allocation) error
	AllocationByID(ctx context.Context, id string) (*Allocation, error)
	OpenAllocation(ctx context.Context, instanceID string) (*Allocation, error)
	ListAllocations(ctx context.Context, instanceID string) ([]Allocation, error)
	EndAllocation(ctx context.Context, id string, at time.Time, reason string) error
}

// OperationStore holds the operations (upgrade, migrate, moved or queued
// start). An instance has at most one unfinished operation: CreateOperation
// is a conflict when it has one, or when (AccountID, IdempotencyKey) exists
// (key set). UpdateOperation writes every field but ID, InstanceID,
// AccountID, Kind, IdempotencyKey, RequestHash and CreatedAt where Version
// matches, then bumps op.Version; a stale Version is a conflict.
// ActiveOperation is not_found when the instance has none.
// OperationByIdempotencyKey is not_found when the key is unused.
type OperationStore interface {
	CreateOperation(ctx context.Context, op *Operation) error
	OperationByID(ctx context.Context, id string) (*Operation, error)
	OperationByIdempotencyKey(ctx context.Context, accountID, key string) (*Operation, error)
	ActiveOperation(ctx context.Context, instanceID string) (*Operation, error)
	ListOperations(ctx context.Context, f OperationFilter) ([]Operation, error)
	UpdateOperation(ctx context.Context, op *Operation) error
}

// GPUHealthStore holds the GPUs' health. AddGPUEvents stores events by their
// id (an id already stored is skipped) and answers how many were new.
// SetGPUHealth sets a GPU's health with the reason (not_found for an unknown
// GPU).
type GPUHealthStore interface {
	AddGPUEvents(ctx context.Context, evs []GPUEvent) (int, error)
	ListGPUEvents(ctx context.Context, f GPUEventFilter) ([]GPUEvent, error)
	SetGPUHealth(ctx context.Context, gpuID string, h GPUHealth, reason string) error
}

// IncidentStore holds the incidents and their entries. CreateIncident fills
// ID, CreatedAt, UpdatedAt when empty. UpdateIncident writes State, EndedAt,
// Cause, Class, Attribution, CreditFen, CreditKey, UpdatedAt (not_found for
// an unknown id). ListIncidents is newest first. Entries are oldest first.
type IncidentStore interface {
	CreateIncident(ctx context.Context, in *Incident) error
	IncidentByID(ctx context.Context, id string) (*Incident, error)
	UpdateIncident(ctx context.Context, in *Incident) error
	ListIncidents(ctx context.Context, f IncidentFilter) ([]Incident, error)
	AddIncidentEntry(ctx context.Context, e *IncidentEntry) error
	ListIncidentEntries(ctx context.Context, incidentID string) ([]IncidentEntry, error)
}

// BenchStore holds the benchmark jobs (issue #7). CreateBenchJob writes a
// queued job (ID and CreatedAt filled when empty, GPUIDs sorted) and bumps
// the host's generation; for a reason that holds (BenchReason.Holds) it also
// holds the GPUs: a conflict, writing nothing, when any is held by an open
// allocation or by another open job (a database rule decides, as for
// allocations), and CreateAllocation is in turn a conflict on a GPU an open
// job holds. SetBenchJobRunning moves a queued job to running (false when it
// was not queued). FinishBenchJob applies f in one transaction (see
// BenchFinish); false, writing nothing, when the job was finished already.
// BenchRecords returns a job's raw record lines in the order stored.
// ListBenchSummaries is oldest first. A job of another tier than t1/t2,
// without GPUs or with one twice, or a verify without its instance and
// account, is invalid. A usage run whose PricePermille is 0 takes its
// allocation's when it is stored.
type BenchStore interface {
	CreateBenchJob(ctx context.Context, j *BenchJob) error
	BenchJobByID(ctx context.Context, id string) (*BenchJob, error)
	ListBenchJobs(ctx context.Context, f BenchJobFilter) ([]BenchJob, error)
	SetBenchJobRunning(ctx context.Context, id string, at time.Time) (bool, error)
	FinishBenchJob(ctx context.Context, f *BenchFinish) (bool, error)
	BenchRecords(ctx context.Context, jobID string) ([][]byte, error)
	ListBenchSummaries(ctx context.Context, f BenchSummaryFilter) ([]BenchSummary, error)
}

// CertStore holds the GPUs' certification. SetGPUCert writes a GPU's
// certification (insert or replace; not_found for an unknown GPU).
// ListGPUCerts lists the stored ones, of one host or ("") all, by host and
// GPU index. CertSettings answers the defaults (delist, weekly, t2) until
// SaveCertSettings stores others.
type CertStore interface {
	SetGPUCert(ctx context.Context, c *GPUCert) error
	ListGPUCerts(ctx context.Context, hostID string) ([]GPUCert, error)
	CertSettings(ctx context.Context) (*CertSettings, error)
	SaveCertSettings(ctx context.Context, s *CertSettings) error
}

// IdleRunStore holds the idle runs a verify asks for (issue 14).
// FlagIdleRun marks the GPU for a run when idle; a GPU flagged already keeps
// its first flag (nil error). ListIdleRunFlags lists the flags of hostID's
// GPUs, or ("") of all, oldest first. ClearIdleRunFlags removes the GPUs'
// flags set at or before at (a run that began after them answered them).
type IdleRunStore interface {
	FlagIdleRun(ctx context.Context, f *IdleRunFlag) error
	ListIdleRunFlags(ctx context.Context, hostID string) ([]IdleRunFlag, error)
	ClearIdleRunFlags(ctx context.Context, gpuIDs []string, at time.Time) error
}

// EventStore holds the instances' events, oldest first.
type EventStore interface {
	AddEvent(ctx context.Context, e *Event) error
	ListEvents(ctx context.Context, instanceID string) ([]Event, error)
}

// PriceStore holds the price versions, oldest effective first.
// AddPriceVersion is a conflict when a version with the same EffectiveAt
// exists.
type PriceStore interface {
	AddPriceVersion(ctx context.Context, v *PriceVersion) error
	PriceVersions(ctx context.Context) ([]PriceVersion, error)
}

// LedgerStore holds the ledger (see internal/ledger): an append-only log of
// transactions and their postings; every balance is a sum of postings.
type LedgerStore interface {
	// PostLedger performs one ledger operation, described by tx's request
	// fields (Op, Key, Customer, At, AmountFen, Charge, Credit, ExpiresAt,
	// Lot) and audit fields (Actor, Note), in one database transaction: it
	// locks the customer's account, answers the original transaction with
	// dup true when Key was used before with the same content (a
	// CodeConflict error when with other content), else plans the postings
	// on the customer's wallet summed inside that same transaction and
	// appends the transaction and its postings. *tx is set to what is
	// stored (Seq, times, Postings). Concurrent posts for one customer are
	// applied one after the other, so two debits never overspend. An
	// unknown customer is CodeNotFound, a malformed request CodeInvalid.
	PostLedger(ctx context.Context, tx *LedgerTx) (dup bool, err error)
	LedgerTxByKey(ctx context.Context, key string) (*LedgerTx, error)
	// LedgerTxs lists a customer's transactions newest first, at most
	// limit (1..1000), only those with Seq < beforeSeq when beforeSeq > 0.
	LedgerTxs(ctx context.Context, customer string, beforeSeq int64, limit int) ([]LedgerTx, error)
	// LedgerBalances sums a customer's postings: cash, receivable and the
	// lots still holding credit. A customer with no postings has zeros.
	LedgerBalances(ctx context.Context, customer string) (*LedgerBalances, error)
	// LedgerPlatformBalances sums the platform's accounts by kind.
	LedgerPlatformBalances(ctx context.Context) (map[string]int64, error)
	// DebitsBetween sums the customer's ledger debits (what was asked,
	// whether or not the wallet covered it) with At in [from, to).
	DebitsBetween(ctx context.Context, customer string, from, to time.Time) (int64, error)
	// ListDebits returns every ledger debit with At in [from, to), oldest
	// first (revenue).
	ListDebits(ctx context.Context, from, to time.Time) ([]Debit, error)
}

// VoucherStore holds the vouchers and their redemptions.
type VoucherStore interface {
	// CreateVoucher inserts v (Redemptions 0); a used code is a conflict.
	CreateVoucher(ctx context.Context, v *Voucher) error
	VoucherByCode(ctx context.Context, code string) (*Voucher, error)
	// ListVouchers lists vouchers newest first, at most limit.
	ListVouchers(ctx context.Context, limit int) ([]Voucher, error)
	// RedeemVoucher counts one redemption of the voucher r.Code by
	// r.AccountID at r.RedeemedAt and records r (r.VoucherID is set). It
	// is CodeNotFound for an unknown code, CodeInvalid at or after the
	// voucher's expiry, CodeConflict when the account redeemed it before
	// or it was redeemed MaxRedemptions times; the count and the record
	// change together or not at all. It answers the voucher as counted.
	RedeemVoucher(ctx context.Context, r *VoucherRedemption) (*Voucher, error)
	VoucherRedemption(ctx context.Context, voucherID, accountID string) (*VoucherRedemption, error)
}

// PaymentStore holds the top-up payments.
type PaymentStore interface {
	// CreatePayment inserts a pending payment; a used (Provider,
	// PaymentID) is a conflict.
	CreatePayment(ctx context.Context, p *Payment) error
	PaymentByProviderID(ctx context.Context, provider, paymentID string) (*Payment, error)
	// SettlePayment moves the payment from pending to state (confirmed or
	// failed) at at, only if it is pending and its amount is amountFen. It
	// answers the payment as stored and whether this call moved it; one
	// that was not pending, or has another amount, is answered unchanged
	// with moved false (the caller decides). Unknown: CodeNotFound.
	SettlePayment(ctx context.Context, provider, paymentID string, state PaymentState,
		amountFen int64, at time.Time) (p *Payment, moved bool, err error)
}

// AcademicStore holds the academic verification. CreateAcademicApplication
// records the application and its "applied" audit entry; a second pending
// one for the account is a conflict. DecideAcademicApplication moves a
// pending application to approved or rejected (anything else: conflict),
// sets the account's AcademicUntil to verifiedUntil when approved, and adds
// the audit entry, all at once.
type AcademicStore interface {
	CreateAcademicApplication(ctx context.Context, a *AcademicApplication) error
	AcademicApplication(ctx context.Context, id string) (*AcademicApplication, error)
	ListAcademicApplications(ctx context.Context, f AcademicFilter) ([]AcademicApplication, error)
	DecideAcademicApplication(ctx context.Context, id string, state AcademicState, by, reason string,
		at time.Time, verifiedUntil *time.Time) (*AcademicApplication, error)
	AcademicAudit(ctx context.Context, applicationID string) ([]AcademicAuditEntry, error)
}

// UsageStore holds the metered usage: the agents' run events and the runs
// they open and end.
type UsageStore interface {
	// IngestRunEvent stores the event under its ID and applies it to its
	// run (run holds the account, type and GPU count of the run), in one
	// transaction: a run_started opens the run, a run_ended sets its end
	// (creating it if the start never arrived), in any order. An ID stored
	// before with the same payloadHash changes nothing and answers dup;
	// with another payloadHash it is a conflict.
	IngestRunEvent(ctx context.Context, e *RunEvent, payloadHash string, run *UsageRun, at time.Time) (dup bool, err error)
	// IngestRunEvents is IngestRunEvent for a report's events at once, in
	// one transaction and a few statements: events[i] has payload hash
	// hashes[i] and belongs to the run runs[i] describes (runs may share
	// pointers). Events apply as if ingested one after the other in order,
	// each answered in results[i]: stored now (zero), a duplicate, or
	// refused (CodeInvalid: malformed, or naming a record that does not
	// exist; CodeConflict: the ID was stored with another hash). An ID
	// repeated within the batch is answered like its first well-formed
	// occurrence (a duplicate of it with the same hash, a conflict with
	// another). A refusal writes nothing of its event; err (a store
	// failure) means nothing at all was written.
	IngestRunEvents(ctx context.Context, events []RunEvent, hashes []string, runs []*UsageRun, at time.Time) (results []RunEventResult, err error)
	// TouchRun moves the open run's LastSeenAt forward to at: the agent of
	// host hostID saw it running then. (Only a run seen running is touched,
	// so a run's last sign of life never passes its real end.) A run of an
	// allocation on another host is left alone: a host speaks only for its
	// own runs.
	TouchRun(ctx context.Context, hostID, allocationID string, startedAt, at time.Time) error
	// CloseSilentRuns ends the host's open runs at their LastSeenAt with
	// RunEndHostSilent, and returns how many it closed.
	CloseSilentRuns(ctx context.Context, hostID string) (int, error)
	ListUsageRuns(ctx context.Context, f UsageRunFilter) ([]UsageRun, error)
	// RecordRunDebit moves the run's DebitedFen from prev to debited and
	// sets Settled, only if it is still prev (a conflict otherwise): call it
	// in the transaction that posts the debit to the ledger.
	RecordRunDebit(ctx context.Context, runID string, prev, debited int64, settled bool) error
	// PostRunDebits applies many runs' debits in one transaction: each as
	// RecordRunDebit(RunID, PrevFen, PrevFen+Tx.AmountFen, Settle) followed
	// by PostLedger(Tx) in one transaction would (Tx nil: record only, no
	// amount). Tx must be a debit. A debit whose run moved meanwhile (its
	// DebitedFen is not PrevFen, or it is settled) writes nothing and is
	// answered CodeConflict in results[i]; a malformed one CodeInvalid, one
	// of an unknown customer CodeNotFound; the others all commit together,
	// each Tx set to what is stored (the original when its key was used
	// before with the same content). Customers are locked in id order, so
	// concurrent calls neither overspend nor deadlock each other. err (a
	// store failure) means nothing was written.
	PostRunDebits(ctx context.Context, debits []RunDebit) (results []error, err error)
}

// SpendLimitStore holds the accounts' spend limits.
type SpendLimitStore interface {
	SpendLimits(ctx context.Context, accountID string) (SpendLimits, error)
	SetSpendLimits(ctx context.Context, accountID string, l SpendLimits) error
}

// AlertStore holds what an account is told and where: its webhook, its
// runway alert level and its account events. SetRunwayAlert moves the
// account's alert level from "from" to "to" and reports whether it did
// (false: the level was not "from", another pass moved it first).
type AlertStore interface {
	WebhookURL(ctx context.Context, accountID string) (string, error)
	SetWebhookURL(ctx context.Context, accountID, url string) error
	RunwayAlert(ctx context.Context, accountID string) (string, error)
	SetRunwayAlert(ctx context.Context, accountID, from, to string) (bool, error)
	AddAccountEvent(ctx context.Context, e *AccountEvent) error
	// ListAccountEvents returns the newest events first, at most limit.
	ListAccountEvents(ctx context.Context, accountID string, limit int) ([]AccountEvent, error)
}

// StatementStore holds the final monthly statements. SaveFinalStatement is
// a conflict when the month is final already: a final statement never
// changes.
type StatementStore interface {
	SaveFinalStatement(ctx context.Context, st *FinalStatement) error
	FinalStatement(ctx context.Context, accountID, month string) (*FinalStatement, error)
}

// VolumeChargeStore holds how far each volume's storage is charged.
// ListVolumeCharges lists every volume with the last day charged ("" for
// none); SetVolumeChargedThrough moves it forward from prev (a conflict when
// it moved meanwhile).
type VolumeChargeStore interface {
	ListVolumeCharges(ctx context.Context) ([]VolumeCharge, error)
	SetVolumeChargedThrough(ctx context.Context, volumeID, prev, day string) error
}

// ArrearsStore holds the accounts' arrears. SetArrears records when the
// account fell into arrears (nil: out of them, which also clears the
// notice); SetArrearsNotice moves the last release notice sent from prev to
// notice (false: moved meanwhile).
type ArrearsStore interface {
	Arrears(ctx context.Context, accountID string) (since *time.Time, notice string, err error)
	SetArrears(ctx context.Context, accountID string, since *time.Time) error
	SetArrearsNotice(ctx context.Context, accountID, prev, notice string) (bool, error)
}

// PlanChangeStore holds the instances' plan changes. AddPlanChange writes a
// pending change, or an applied one together with the instance's new plan; a
// second pending change of one instance is a conflict. PlanChanges lists an
// instance's changes that are not canceled, by effective time.
// DuePlanChanges lists pending changes effective at or before at.
// SetPlanChangeState moves a pending change to applied (setting the
// instance's plan) or canceled; false when it was no longer pending.
type PlanChangeStore interface {
	AddPlanChange(ctx context.Context, c *PlanChange) error
	PlanChanges(ctx context.Context, instanceID string) ([]PlanChange, error)
	DuePlanChanges(ctx context.Context, at time.Time) ([]PlanChange, error)
	SetPlanChangeState(ctx context.Context, id, state string) (bool, error)
}

// SSHKeyStore holds the accounts' SSH keys. A key's fingerprint is unique
// per account (conflict), and one key may be on several accounts (public
// keys are public: registering one proves nothing, so it must not lock out
// the key's other holders). SSHKeyByFingerprint answers the oldest
// registration of the key. DeleteSSHKey removes one of the account's keys
// (not_found otherwise).
type SSHKeyStore interface {
	AddSSHKey(ctx context.Context, k *SSHKey) error
	ListSSHKeys(ctx context.Context, accountID string) ([]SSHKey, error)
	DeleteSSHKey(ctx context.Context, accountID, id string) error
	SSHKeyByFingerprint(ctx context.Context, fingerprint string) (*SSHKey, error)
	TouchSSHKey(ctx context.Context, id string, at time.Time) error
	// SSHKeyOfAccount finds the account's registration of the key with the
	// fingerprint (not_found when that account has none).
	SSHKeyOfAccount(ctx context.Context, accountID, fingerprint string) (*SSHKey, error)
}

// AccessStore holds instance access through the gateway. SetHostAccess
// records where the gateway reaches a host's agent. AddAccessSession writes
// an audit record; EndAccessSession completes it.
type AccessStore interface {
	SetHostAccess(ctx context.Context, hostID, addr, hostKey string) error
	AddAccessSession(ctx context.Context, s *AccessSession) error
	EndAccessSession(ctx context.Context, s *AccessSession) error
	ListAccessSessions(ctx context.Context, accountID string, limit int) ([]AccessSession, error)
}

// IdempotencyStore holds the idempotent API answers, unique per (AccountID,
// Key) (conflict).
type IdempotencyStore interface {
	SaveIdempotency(ctx context.Context, r *IdempotencyRecord) error
	IdempotencyByKey(ctx context.Context, accountID, key string) (*IdempotencyRecord, error)
}

// RunEventResult is what IngestRunEvents did with one event: stored now
// (the zero value), a duplicate of an event stored before with the same
// content (Dup), or refused (Err; nothing of it written).
type RunEventResult struct {
	Dup bool
	Err error
}

// RunDebit is one run's debit for PostRunDebits: move the run's DebitedFen
// from PrevFen by Tx.AmountFen (0 when Tx is nil), set Settled when Settle,
// and post Tx (a ledger debit) with it.
type RunDebit struct {
	RunID   string
	PrevFen int64
	Settle  bool
	Tx      *LedgerTx
}

// ImageStore holds the operator's base image catalog (by name) and the
// images each host reports it holds.
type ImageStore interface {
	// PutBaseImage adds img or replaces the image of its name (CreatedAt
	// kept from the first put, UpdatedAt set); invalid without a name or
	// reference.
	PutBaseImage(ctx context.Context, img *BaseImage) error
	// BaseImage answers the image named name (not_found).
	BaseImage(ctx context.Context, name string) (*BaseImage, error)
	// ListBaseImages answers the catalog by name.
	ListBaseImages(ctx context.Context) ([]BaseImage, error)
	// DeleteBaseImage removes the image named name (not_found).
	DeleteBaseImage(ctx context.Context, name string) error
	// SetBaseImagePrepull sets whether agents pull it ahead (not_found).
	SetBaseImagePrepull(ctx context.Context, name string, prepull bool, at time.Time) error
	// SetHostImages replaces what the host holds with refs.
	SetHostImages(ctx context.Context, hostID string, refs []string) error
	// HostsHolding answers the hosts that hold ref.
	HostsHolding(ctx context.Context, ref string) ([]string, error)
}
