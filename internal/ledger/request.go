package ledger

import (
	"time"
	"unicode/utf8"

	"github.com/gpurent/gpurent"
)

// Op is what a transaction does.
type Op string

// The operations.
const (
	// OpTopUp books a confirmed payment: clearing → receivable (arrears
	// first) → cash. Key it on the payment: "topup:<payment id>".
	OpTopUp Op = "topup"
	// OpGrant creates a credit lot (promo or SLA) with an expiry, funded by
	// the platform's promo_issued or sla_issued account. The lot's id is the
	// request's Key: "sla:<incident id>", "promo:<campaign>:<account>".
	OpGrant Op = "grant"
	// OpDebit charges usage: SLA lots → promo lots (each by earliest expiry,
	// then lot id) → cash → (storage only) receivable, and the amount
	// collected goes to revenue. Key: "debit:<line id>:<seq>".
	OpDebit Op = "debit"
	// OpExpire moves what is left of an expired lot to breakage. Key:
	// "expire:<lot id>" (see DueExpiries).
	OpExpire Op = "expire"
	// OpSettle pays arrears from cash the customer already holds.
	OpSettle Op = "settle"
)

// Charge is the class of a usage charge; it decides whether a debit may go
// into arrears.
type Charge string

// Charge classes.
const (
	// ChargeCompute is GPU, CPU or no-GPU-mode time. It never takes cash
	// below zero: what the wallet cannot cover is reported as a shortfall,
	// and the caller stops the instance.
	ChargeCompute Charge = "compute"
	// ChargeStorage is data volume storage. What the wallet cannot cover
	// goes to the receivable account (arrears).
	ChargeStorage Charge = "storage"
)

// Limits on request fields.
const (
	// MaxKeyLen is the longest idempotency key, customer id or lot id, in
	// bytes.
	MaxKeyLen = 200
	// MaxAmountFen bounds one request's amount (about 11 trillion CNY), so
	// that no sum of a transaction can overflow.
	MaxAmountFen int64 = 1 << 50
	// DefaultSLACreditTTL is how long SLA credit lives by default: 90 days.
	// Callers set Request.ExpiresAt = incident end + this (or the operator's
	// setting); the ledger does not fill it in, so that a retried grant
	// always carries the same content.
	DefaultSLACreditTTL = 90 * 24 * time.Hour
)

// Request is the input of one operation. Which fields an operation takes:
//
//	OpTopUp:  Key, Customer, At, AmountFen
//	OpGrant:  Key, Customer, At, AmountFen, Credit (KindPromo|KindSLA), ExpiresAt (> At)
//	OpDebit:  Key, Customer, At, AmountFen, Charge
//	OpExpire: Key, Customer, At (>= the lot's expiry), Lot
//	OpSettle: Key, Customer, At
//
// Fields an operation does not take must be zero. The request's content —
// every field but At — is what idempotency compares: the same Key with the
// same content is the same operation, whenever it is retried. At is the
// effective time: it decides which credit lots are live for a debit and
// whether a lot has expired; it is not content, so a retry at a later
// wall-clock time still returns the original transaction.
type Request struct {
	Op        Op
	Key       string
	Customer  string
	At        time.Time
	AmountFen int64
	Charge    Charge
	Credit    Kind
	ExpiresAt time.Time
	Lot       string
}

// normalized returns r with its times in UTC at microsecond precision, the
// precision PostgreSQL keeps, so that a request read back from a store
// compares equal to the one that was posted.
func (r Request) normalized() Request {
	r.At = normTime(r.At)
	r.ExpiresAt = normTime(r.ExpiresAt)
	return r
}

func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}

// SameContent reports whether r and o are the same operation: equal in
// every field but At. A store that finds Key already used answers the
// original transaction when SameContent holds and a conflict otherwise.
func (r Request) SameContent(o Request) bool {
	return r.Op == o.Op && r.Key == o.Key && r.Customer == o.Customer &&
		r.AmountFen == o.AmountFen && r.Charge == o.Charge && r.Credit == o.Credit &&
		r.ExpiresAt.Equal(o.ExpiresAt) && r.Lot == o.Lot
}

// Validate checks that r is a well-formed request of its operation. It
// answers a gpurent.CodeInvalid error saying what is wrong. It includes a
// check against At (a grant must expire after it is made), so a store looks
// the key up before validating: a grant retried after its lot expired still
// answers the original transaction.
func (r Request) Validate() error { return r.validate(true) }

// validate is Validate; timely false skips the checks that depend on At
// (a grant expiring after it is made), so that a retry arriving after the
// lot expired still finds the original transaction.
func (r Request) validate(timely bool) error {
	if err := checkName("key", r.Key); err != nil {
		return err
	}
	if err := checkName("customer", r.Customer); err != nil {
		return err
	}
	if r.At.IsZero() {
		return gpurent.Errorf(gpurent.CodeInvalid, "ledger request %q: time is required", r.Key)
	}
	var amount, charge, credit, lot bool // which optional fields the op takes
	switch r.Op {
	case OpTopUp:
		amount = true
	case OpGrant:
		amount, credit = true, true
	case OpDebit:
		amount, charge = true, true
	case OpExpire:
		lot = true
	case OpSettle:
	default:
		return gpurent.Errorf(gpurent.CodeInvalid, "ledger request %q: unknown operation %q", r.Key, r.Op)
	}
	if amount {
		if r.AmountFen <= 0 || r.AmountFen > MaxAmountFen {
			return gpurent.Errorf(gpurent.CodeInvalid,
				"ledger request %q: amount must be between 1 and %d fen, got %d", r.Key, MaxAmountFen, r.AmountFen)
		}
	} else if r.AmountFen != 0 {
		return gpurent.Errorf(gpurent.CodeInvalid, "ledger request %q: %s takes no amount", r.Key, r.Op)
	}
	if charge {
		if r.Charge != ChargeCompute && r.Charge != ChargeStorage {
			return gpurent.Errorf(gpurent.CodeInvalid,
				"ledger request %q: charge must be %q or %q", r.Key, ChargeCompute, ChargeStorage)
		}
	} else if r.Charge != "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "ledger request %q: %s takes no charge class", r.Key, r.Op)
	}
	if credit {
		if !r.Credit.IsCredit() {
			return gpurent.Errorf(gpurent.CodeInvalid,
				"ledger request %q: credit must be %q or %q", r.Key, KindPromo, KindSLA)
		}
		if r.ExpiresAt.IsZero() || (timely && !r.ExpiresAt.After(r.At)) {
			return gpurent.Errorf(gpurent.CodeInvalid,
				"ledger request %q: credit must expire after it is granted", r.Key)
		}
	} else if r.Credit != "" || !r.ExpiresAt.IsZero() {
		return gpurent.Errorf(gpurent.CodeInvalid, "ledger request %q: %s takes no credit kind or expiry", r.Key, r.Op)
	}
	if lot {
		if err := checkName("lot", r.Lot); err != nil {
			return err
		}
	} else if r.Lot != "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "ledger request %q: %s takes no lot", r.Key, r.Op)
	}
	return nil
}

func checkName(what, s string) error {
	if s == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "ledger: %s is required", what)
	}
	if len(s) > MaxKeyLen || !utf8.ValidString(s) {
		return gpurent.Errorf(gpurent.CodeInvalid,
			"ledger: %s must be valid UTF-8 of at most %d bytes", what, MaxKeyLen)
	}
	return nil
}

// ExpireKey is the idempotency key of the expiry of lot.
func ExpireKey(lot string) string { return "expire:" + lot }
