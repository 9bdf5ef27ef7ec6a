package gpurent

import "time"

// AcademicMethod is the evidence an academic application rests on.
type AcademicMethod string

// Academic evidence.
const (
	AcademicEmailDomain AcademicMethod = "email_domain" // the account's university e-mail address
	AcademicProof       AcademicMethod = "proof"        // an uploaded proof (student or staff card, letter)
)

// AcademicState is where an application stands.
type AcademicState string

// Application states.
const (
	AcademicPending  AcademicState = "pending"
	AcademicApproved AcademicState = "approved"
	AcademicRejected AcademicState = "rejected"
)

// AcademicApplication is a customer's request for academic prices, decided
// by an operator. At most one is pending per account.
type AcademicApplication struct {
	ID            string
	AccountID     string
	Method        AcademicMethod
	Institution   string
	Email         string // the account's e-mail when applying
	Proof         string // what the customer sent: a description, a link, or a small file as data: URL
	State         AcademicState
	DecidedBy     string // operator account id
	DecidedAt     *time.Time
	Reason        string // the operator's note, shown to the customer
	VerifiedUntil *time.Time
	CreatedAt     time.Time
}

// AcademicAuditEntry is one step in an application's history.
type AcademicAuditEntry struct {
	ApplicationID string
	At            time.Time
	Actor         string // account id
	Action        string // applied, approved, rejected
	Note          string
}

// AcademicFilter selects applications; empty fields select all.
type AcademicFilter struct {
	AccountID string
	State     AcademicState
}

// Academic reports whether the account has academic prices at t.
func (a *Account) Academic(t time.Time) bool {
	return a.AcademicUntil != nil && t.Before(*a.AcademicUntil)
}
