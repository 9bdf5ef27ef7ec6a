package gpurent

import "time"

// ID prefixes of the wallet's records.
const (
	PrefixVoucher = "vch"
	PrefixPayment = "pay"
)

// LedgerTx is one stored ledger transaction: the request that made it (the
// fields of internal/ledger's Request, as plain strings so that this package
// does not depend on the ledger), who made it and why, and its postings.
// The log is append-only; balances are sums of postings.
type LedgerTx struct {
	// Seq is the transaction's position in the store's log (1, 2, ...),
	// set by the store. For one customer, seq order is commit order.
	Seq       int64
	Op        string // topup, grant, debit, expire, settle
	Key       string // idempotency key, unique in the whole ledger
	Customer  string // account id
	At        time.Time
	AmountFen int64
	Charge    string    // debit only: compute or storage
	Credit    string    // grant only: promo or sla
	ExpiresAt time.Time // grant only: the lot's expiry; zero otherwise
	Lot       string    // expire only: the lot it sweeps
	// Audit: who asked (an operator's account id, "" for the system) and
	// why (a reason, a voucher code, a payment id). Not part of the
	// request's content: a retry answers the original's note.
	Actor     string
	Note      string
	CreatedAt time.Time
	Postings  []LedgerPosting
}

// LedgerPosting moves AmountFen into one ledger account (negative: out of
// it). Customer is "" for platform accounts; Lot is set only for credit
// lots (promo, sla) and is the key of the grant that made the lot.
type LedgerPosting struct {
	Customer  string
	Kind      string
	Lot       string
	AmountFen int64
}

// LedgerLot is one credit lot of a customer with what is left of it.
type LedgerLot struct {
	ID         string // the key of the grant that made it
	Kind       string // promo or sla
	ExpiresAt  time.Time
	BalanceFen int64
}

// LedgerBalances is one customer's side of the ledger, summed from the
// postings: cash (>= 0), receivable (<= 0, arrears) and the credit lots
// that still hold credit, expired or not.
type LedgerBalances struct {
	Customer      string
	CashFen       int64
	ReceivableFen int64
	Lots          []LedgerLot // by expiry, then id
}

// VoucherKind is what redeeming a voucher gives.
type VoucherKind string

// Voucher kinds.
const (
	// VoucherCash tops the wallet's cash up (a prepaid card): clearing →
	// cash. Redeemed cash never expires.
	VoucherCash VoucherKind = "cash"
	// VoucherPromo grants a promo credit lot that expires when the
	// voucher does.
	VoucherPromo VoucherKind = "promo"
)

// Voucher is a redeemable code. Each account redeems it at most once; it
// cannot be redeemed at or after ExpiresAt, nor more than MaxRedemptions
// times in all.
type Voucher struct {
	ID             string
	Code           string // normalised: upper-case, no separators; unique
	Kind           VoucherKind
	AmountFen      int64
	ExpiresAt      time.Time
	MaxRedemptions int
	Redemptions    int // how many accounts redeemed it so far
	CreatedBy      string
	CreatedAt      time.Time
}

// VoucherRedemption records that an account redeemed a voucher.
type VoucherRedemption struct {
	VoucherID  string
	Code       string
	AccountID  string
	RedeemedAt time.Time
	LedgerKey  string // the key of the ledger transaction it made
}

// PaymentState is where a payment stands.
type PaymentState string

// Payment states: pending → confirmed or failed, never back.
const (
	PaymentPending   PaymentState = "pending"
	PaymentConfirmed PaymentState = "confirmed"
	PaymentFailed    PaymentState = "failed"
)

// Payment is a top-up through a payment provider. (Provider, PaymentID) is
// unique; the wallet is credited only when the provider confirms it.
type Payment struct {
	ID          string
	Provider    string // the provider's name, e.g. "fake"
	PaymentID   string // the provider's id for it
	AccountID   string
	AmountFen   int64
	State       PaymentState
	PayURL      string
	CreatedAt   time.Time
	ConfirmedAt *time.Time // set when it left pending (confirmed or failed)
}

// SpendLimits are caps a customer sets on usage debits, per calendar day and
// month in Asia/Shanghai (0: no cap). Reaching one refuses new rentals and,
// with StopRunning, stops the running instances too.
type SpendLimits struct {
	DailyFen    int64
	MonthlyFen  int64
	StopRunning bool
}

// AccountEvent is one entry of an account's history: runway alerts, stops
// for an empty wallet or a spend limit.
type AccountEvent struct {
	Seq       int64
	AccountID string
	At        time.Time
	Kind      string
	Message   string
}
