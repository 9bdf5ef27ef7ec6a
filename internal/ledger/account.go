package ledger

import "strings"

// Kind is the kind of a ledger account.
type Kind string

// Customer account kinds. Every customer has one cash and one receivable
// account and one account per credit lot (promo or SLA).
const (
	// KindCash holds money the customer paid in. Never below zero.
	KindCash Kind = "cash"
	// KindPromo is one promotional credit lot. Never below zero; expires.
	KindPromo Kind = "promo"
	// KindSLA is one SLA credit lot. Never below zero; expires.
	KindSLA Kind = "sla"
	// KindReceivable is what the customer owes (arrears), as a balance at
	// or below zero. Only storage charges move it below zero.
	KindReceivable Kind = "receivable"
)

// Platform account kinds: one account each for the whole platform.
const (
	// KindRevenue collects every usage charge that was paid, from cash or
	// from credit. Grows positive.
	KindRevenue Kind = "revenue"
	// KindBreakage collects credit that expired unspent. Grows positive.
	KindBreakage Kind = "breakage"
	// KindClearing is money in flight from the payment provider: a
	// confirmed top-up credits the customer's cash at once and leaves the
	// provider owing it here (negative) until the provider settles.
	KindClearing Kind = "clearing"
	// KindPromoIssued is the funding side of promo credit: every grant
	// takes its amount from here (negative: promo credit given so far).
	KindPromoIssued Kind = "promo_issued"
	// KindSLAIssued is the funding side of SLA credit, like KindPromoIssued.
	KindSLAIssued Kind = "sla_issued"
)

// Kinds lists every account kind, customer kinds first.
func Kinds() []Kind {
	return []Kind{KindCash, KindPromo, KindSLA, KindReceivable,
		KindRevenue, KindBreakage, KindClearing, KindPromoIssued, KindSLAIssued}
}

// IsCustomer reports whether accounts of kind k belong to one customer.
func (k Kind) IsCustomer() bool {
	switch k {
	case KindCash, KindPromo, KindSLA, KindReceivable:
		return true
	}
	return false
}

// IsPlatform reports whether k is one of the platform's own accounts.
func (k Kind) IsPlatform() bool {
	switch k {
	case KindRevenue, KindBreakage, KindClearing, KindPromoIssued, KindSLAIssued:
		return true
	}
	return false
}

// IsCredit reports whether k is a credit lot kind (promo or SLA).
func (k Kind) IsCredit() bool { return k == KindPromo || k == KindSLA }

// issuedKind is the platform account that funds credit of kind k.
func issuedKind(k Kind) Kind {
	if k == KindSLA {
		return KindSLAIssued
	}
	return KindPromoIssued
}

// Account names one ledger account. Customer is empty for platform accounts;
// Lot is set only for credit lots (promo, SLA) and is the idempotency key of
// the grant that created the lot. Account is comparable and usable as a map
// key; a store persists it as three columns.
type Account struct {
	Customer string
	Kind     Kind
	Lot      string
}

// CashAccount is a customer's cash account.
func CashAccount(customer string) Account { return Account{Customer: customer, Kind: KindCash} }

// ReceivableAccount is a customer's receivable (arrears) account.
func ReceivableAccount(customer string) Account {
	return Account{Customer: customer, Kind: KindReceivable}
}

// LotAccount is one credit lot of a customer.
func LotAccount(customer string, kind Kind, lot string) Account {
	return Account{Customer: customer, Kind: kind, Lot: lot}
}

// PlatformAccount is one of the platform's accounts.
func PlatformAccount(kind Kind) Account { return Account{Kind: kind} }

// String renders the account for logs and reports: "revenue",
// "cash/acc-1", "promo/acc-1/promo:welcome".
func (a Account) String() string {
	var b strings.Builder
	b.WriteString(string(a.Kind))
	if a.Customer != "" {
		b.WriteByte('/')
		b.WriteString(a.Customer)
	}
	if a.Lot != "" {
		b.WriteByte('/')
		b.WriteString(a.Lot)
	}
	return b.String()
}

// valid reports whether the account is well formed: a known kind, a
// customer exactly for customer kinds, a lot exactly for credit kinds.
func (a Account) valid() bool {
	switch {
	case a.Kind.IsPlatform():
		return a.Customer == "" && a.Lot == ""
	case a.Kind.IsCredit():
		return a.Customer != "" && a.Lot != ""
	case a.Kind.IsCustomer():
		return a.Customer != "" && a.Lot == ""
	}
	return false
}

// Posting moves AmountFen into Account (negative: out of it). The postings
// of one transaction sum to zero.
type Posting struct {
	Account   Account
	AmountFen int64
}
