// Package wallet is the customer's wallet over the persisted ledger: the
// balance view (cash, credit lots, arrears, spendable, burn rate, runway),
// operator credits, voucher codes, top-ups through payment providers, and
// the transaction history.
//
// The ledger is the truth (internal/ledger's rules, persisted by the store's
// PostLedger): every operation here is one ledger request with its own
// idempotency key, so a retried operation answers what the first did and
// never posts twice. The package speaks no HTTP; payment providers are an
// interface, with a fake provider for tests and the demo.
package wallet

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/ledger"
	"github.com/gpurent/gpurent/internal/money"
)

// Limits on what callers pass in.
const (
	// MaxCreditFen bounds one operator credit, voucher or payment:
	// ¥10,000,000.
	MaxCreditFen int64 = 1_000_000_000
	// MinPaymentFen is the smallest top-up through a provider: ¥1.
	MinPaymentFen int64 = 100
	// MaxKeyLen bounds a caller's idempotency key (the API's bound).
	MaxKeyLen = 255
	// MaxReasonLen bounds an operator's reason, in characters.
	MaxReasonLen = 500
	// MaxRedemptions bounds a voucher's redemptions.
	MaxRedemptions = 1_000_000
	// DefaultListLimit and MaxListLimit bound Transactions.
	DefaultListLimit = 50
	MaxListLimit     = 500
)

// Store is what the wallet service reads and writes: the ledger,
// vouchers, payments, spend limits, alerts and arrears, in transactions where
// several go together; and, read only, the accounts.
type Store interface {
	// Its own: money.
	gpurent.LedgerStore
	gpurent.VoucherStore
	gpurent.PaymentStore
	// Its own: limits and what it tells the account.
	gpurent.SpendLimitStore
	gpurent.AlertStore
	gpurent.ArrearsStore
	gpurent.Transactor
	// Read only.
	AccountByID(ctx context.Context, id string) (*gpurent.Account, error)
	AccountByEmail(ctx context.Context, email string) (*gpurent.Account, error)
	BurnReader
}

// BurnReader is what a burn rate is read from: the account's instances and
// the GPU types' hourly prices (a transaction's Queries, or the Store).
type BurnReader interface {
	ListInstances(ctx context.Context, f gpurent.InstanceFilter) ([]gpurent.Instance, error)
	GPUTypes(ctx context.Context) ([]gpurent.GPUType, error)
}

// Config configures the service.
type Config struct {
	Store  Store
	Now    func() time.Time // nil: time.Now
	Logger *slog.Logger
	// Providers are the payment providers customers may top up through,
	// by name.
	Providers []PaymentProvider
	// Random is the source of voucher codes (nil: crypto/rand).
	Random io.Reader
	// NoGPUHourFen is what an instance in no-GPU mode burns per hour
	// (default 10 fen, the price book's default no-GPU price).
	NoGPUHourFen int64
	// Notify sends an alert's JSON body to the customer's webhook URL
	// (the app posts it; nil: alerts are only recorded).
	Notify func(ctx context.Context, url string, body []byte)
	// CheckWebhook vets a webhook URL when a customer sets it (the app's
	// outbound policy: https only outside the demo, no internal
	// addresses); its error is returned as is. nil: only the scheme is
	// checked.
	CheckWebhook func(raw string) error
}

// Service is the wallet service. It is safe for concurrent use.
type Service struct {
	store     Store
	now       func() time.Time
	log       *slog.Logger
	providers map[string]PaymentProvider
	random    io.Reader
	notify    func(ctx context.Context, url string, body []byte)
	checkHook func(raw string) error
	noGPUFen  int64
}

// New makes the service.
func New(cfg Config) *Service {
	s := &Service{store: cfg.Store, now: cfg.Now, log: cfg.Logger, random: cfg.Random, notify: cfg.Notify,
		checkHook: cfg.CheckWebhook, providers: make(map[string]PaymentProvider), noGPUFen: cfg.NoGPUHourFen}
	if s.noGPUFen <= 0 {
		s.noGPUFen = 10
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.random == nil {
		s.random = rand.Reader
	}
	for _, p := range cfg.Providers {
		s.providers[p.Name()] = p
	}
	return s
}

// Lot is one credit lot in the wallet view.
type Lot struct {
	ID         string
	Kind       string // promo or sla
	BalanceFen int64
	ExpiresAt  time.Time
}

// View is a customer's wallet at one instant.
type View struct {
	AccountID string
	At        time.Time
	// CashFen is money paid in (>= 0); CreditFen the live promo and SLA
	// credit; SpendableFen their sum, what instances can burn.
	CashFen      int64
	CreditFen    int64
	SpendableFen int64
	// ArrearsFen is what the customer owes for storage (>= 0). No
	// instance may start while it is above zero.
	ArrearsFen int64
	// Lots are the live credit lots in burn order (SLA, then promo, each by
	// earliest expiry).
	Lots []Lot
	// BurnRate is what the running instances spend, exactly; BurnFenPerHour
	// is it per hour, rounded up to the fen.
	BurnRate       ledger.Rate
	BurnFenPerHour int64
	// RunningInstances is how many instances burn.
	RunningInstances int
	// RunwaySeconds is how long SpendableFen lasts at BurnRate: whole
	// seconds, ledger.NoLimit when nothing burns.
	RunwaySeconds int64
}

// Wallet answers the account's wallet now: balances from the ledger, the
// burn rate from the account's running instances (hourly list price of the
// instance's GPU type × GPU count) and the runway.
func (s *Service) Wallet(ctx context.Context, acc *gpurent.Account) (*View, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "not signed in")
	}
	now := s.now().UTC()
	bal, err := s.store.LedgerBalances(ctx, acc.ID)
	if err != nil {
		return nil, err
	}
	w, err := walletOf(bal)
	if err != nil {
		return nil, err
	}
	rate, running, err := s.burnRate(ctx, acc.ID)
	if err != nil {
		return nil, err
	}
	v := &View{
		AccountID:        acc.ID,
		At:               now,
		CashFen:          w.CashFen(),
		CreditFen:        w.CreditFen(now),
		SpendableFen:     w.SpendableFen(now),
		ArrearsFen:       w.ArrearsFen(),
		BurnRate:         rate,
		RunningInstances: running,
		RunwaySeconds:    ledger.NoLimit,
	}
	if rate.Fen > 0 {
		v.RunwaySeconds = w.Runway(now, rate)
	}
	if rate.Fen > 0 {
		per := int64(rate.Per / time.Second)
		// fen per hour = Fen × 3600 / per, rounded up; Fen is bounded by
		// the sum of hourly prices, so this does not overflow.
		v.BurnFenPerHour = (rate.Fen*3600 + per - 1) / per
	}
	for _, l := range w.Lots() {
		if now.Before(l.ExpiresAt) {
			v.Lots = append(v.Lots, Lot{ID: l.ID, Kind: string(l.Kind), BalanceFen: l.BalanceFen, ExpiresAt: l.ExpiresAt})
		}
	}
	return v, nil
}

// walletOf builds the ledger's wallet from the store's sums.
func walletOf(b *gpurent.LedgerBalances) (*ledger.Wallet, error) {
	lots := make([]ledger.Lot, len(b.Lots))
	for i, l := range b.Lots {
		lots[i] = ledger.Lot{ID: l.ID, Kind: ledger.Kind(l.Kind), ExpiresAt: l.ExpiresAt, BalanceFen: l.BalanceFen}
	}
	w, err := ledger.NewWallet(b.Customer, b.CashFen, b.ReceivableFen, lots)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "wallet of %q breaks the ledger's invariants", b.Customer)
	}
	return w, nil
}

// burnRate sums the hourly prices of the account's running instances on
// the hourly plan (packages are prepaid and burn nothing).
func (s *Service) burnRate(ctx context.Context, accountID string) (ledger.Rate, int, error) {
	hours, err := s.hourlyBurn(ctx, s.store, accountID, "", gpurent.StateRunning)
	if err != nil {
		return ledger.Rate{}, 0, err
	}
	if len(hours) == 0 {
		return ledger.PerHour(0), 0, nil
	}
	rates := make([]ledger.Rate, 0, len(hours))
	for _, h := range hours {
		rates = append(rates, ledger.PerHour(h))
	}
	r, err := ledger.BurnRate(rates...)
	if err != nil {
		return ledger.Rate{}, 0, gpurent.WrapError(gpurent.CodeInternal, err, "burn rate of %q", accountID)
	}
	return r, len(hours), nil
}

// hourlyBurn is what each of the account's instances in the given states
// on the hourly plan spends in an hour (its GPU type's hourly list price
// times its GPU count; the no-GPU price in no-GPU mode), except is left
// out. It reads through q, so that a caller in a transaction sees its own
// writes.
func (s *Service) hourlyBurn(ctx context.Context, q BurnReader, accountID, except string, states ...gpurent.InstanceState) ([]int64, error) {
	ins, err := q.ListInstances(ctx, gpurent.InstanceFilter{AccountID: accountID, States: states})
	if err != nil {
		return nil, err
	}
	if len(ins) == 0 {
		return nil, nil
	}
	types, err := q.GPUTypes(ctx)
	if err != nil {
		return nil, err
	}
	price := make(map[string]int64, len(types))
	for _, t := range types {
		price[t.ID] = t.PriceHourlyFen
	}
	var out []int64
	for _, in := range ins {
		if in.ID == except || (in.Plan != gpurent.PlanHourly && in.Plan != "") {
			continue // packages are prepaid: they do not burn the wallet
		}
		hour := price[in.TypeID] * int64(in.GPUCount)
		if in.GPUCount == 0 {
			hour = s.noGPUFen
		}
		out = append(out, hour)
	}
	return out, nil
}

// ReserveFen is what the start gate keeps back for the account's instances
// that already burn the wallet: an hour of each running or provisioning
// instance on the hourly plan, except the one named (an instance being
// converted to a package stops burning). It reads through q, inside the
// caller's transaction when there is one.
func (s *Service) ReserveFen(ctx context.Context, q gpurent.Queries, accountID, except string) (int64, error) {
	return s.reserveFen(ctx, q, accountID, except)
}

// reserveFen is ReserveFen reading through any BurnReader.
func (s *Service) reserveFen(ctx context.Context, q BurnReader, accountID, except string) (int64, error) {
	hours, err := s.hourlyBurn(ctx, q, accountID, except, gpurent.StateRunning, gpurent.StateProvisioning)
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, h := range hours {
		sum += h
	}
	return sum, nil
}

// SpendableFen is the account's spendable balance now (cash + live credit).
func (s *Service) SpendableFen(ctx context.Context, accountID string) (int64, error) {
	bal, err := s.store.LedgerBalances(ctx, accountID)
	if err != nil {
		return 0, err
	}
	w, err := walletOf(bal)
	if err != nil {
		return 0, err
	}
	return w.SpendableFen(s.now()), nil
}

// Entry is one ledger transaction as its customer sees it.
type Entry struct {
	Seq       int64
	Key       string
	Op        string
	At        time.Time
	AmountFen int64 // what was asked (a debit's charge, a top-up's amount)
	// NetFen is what the transaction changed in the customer's accounts
	// (cash, credit lots, receivable) together: + in, − out.
	NetFen    int64
	Charge    string
	Credit    string
	ExpiresAt time.Time
	Lot       string
	Note      string
	Postings  []gpurent.LedgerPosting
}

func entryOf(t *gpurent.LedgerTx) *Entry {
	e := &Entry{Seq: t.Seq, Key: t.Key, Op: t.Op, At: t.At, AmountFen: t.AmountFen, Charge: t.Charge,
		Credit: t.Credit, ExpiresAt: t.ExpiresAt, Lot: t.Lot, Note: t.Note, Postings: t.Postings}
	for _, p := range t.Postings {
		if p.Customer == t.Customer {
			e.NetFen += p.AmountFen
		}
	}
	return e
}

// Transactions lists the account's ledger entries, newest first: at most
// limit (0: DefaultListLimit), those before seq beforeSeq when it is > 0.
func (s *Service) Transactions(ctx context.Context, acc *gpurent.Account, beforeSeq int64, limit int) ([]Entry, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "not signed in")
	}
	if limit == 0 {
		limit = DefaultListLimit
	}
	if limit < 1 || limit > MaxListLimit || beforeSeq < 0 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "limit must be between 1 and %d", MaxListLimit)
	}
	txs, err := s.store.LedgerTxs(ctx, acc.ID, beforeSeq, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(txs))
	for i := range txs {
		out[i] = *entryOf(&txs[i])
	}
	return out, nil
}

// Credit is an operator's top-up of accountID (an account id, or an
// e-mail address): clearing → cash (arrears settled first), with the operator and reason kept on the transaction. The
// same key for the same account answers the first credit (dup true); with
// another amount it is a conflict.
func (s *Service) Credit(ctx context.Context, operator *gpurent.Account, accountID string, amountFen int64,
	reason, idempotencyKey string) (*Entry, bool, error) {
	if err := requireOperator(operator); err != nil {
		return nil, false, err
	}
	if err := checkAmount(amountFen, 1); err != nil {
		return nil, false, err
	}
	reason = strings.TrimSpace(reason)
	if reason == "" || utf8.RuneCountInString(reason) > MaxReasonLen || !utf8.ValidString(reason) {
		return nil, false, gpurent.Errorf(gpurent.CodeInvalid, "a credit needs a reason of at most %d characters", MaxReasonLen)
	}
	if err := checkKey(idempotencyKey); err != nil {
		return nil, false, err
	}
	if accountID == "" {
		return nil, false, gpurent.Errorf(gpurent.CodeInvalid, "account is required")
	}
	if strings.Contains(accountID, "@") {
		acc, err := s.store.AccountByEmail(ctx, accountID)
		if err != nil {
			return nil, false, err
		}
		accountID = acc.ID
	}
	tx := &gpurent.LedgerTx{Op: string(ledger.OpTopUp), Key: "credit:" + accountID + ":" + keyPart(idempotencyKey),
		Customer: accountID, At: s.now(), AmountFen: amountFen, Actor: operator.ID, Note: "operator credit: " + reason}
	dup, err := s.store.PostLedger(ctx, tx)
	if err != nil {
		return nil, false, err
	}
	if !dup {
		s.log.Info("operator credit", "operator", operator.ID, "account", accountID, "amount_fen", amountFen,
			"reason", reason, "seq", tx.Seq)
	}
	return entryOf(tx), dup, nil
}

// keyPart is a caller's key as part of a ledger key: as it is when short,
// else its SHA-256, so that the ledger key stays within ledger.MaxKeyLen.
func keyPart(k string) string {
	if len(k) <= 64 {
		return k
	}
	sum := sha256.Sum256([]byte(k))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func requireOperator(a *gpurent.Account) error {
	if a == nil {
		return gpurent.Errorf(gpurent.CodeUnauthorized, "not signed in")
	}
	if a.Role != gpurent.RoleOperator {
		return gpurent.Errorf(gpurent.CodeForbidden, "only an operator may do this")
	}
	return nil
}

func checkAmount(fen, min int64) error {
	if fen < min || fen > MaxCreditFen {
		return gpurent.Errorf(gpurent.CodeInvalid, "amount must be between %s and %s", money.Format(min), money.Format(MaxCreditFen))
	}
	return nil
}

func checkKey(k string) error {
	if k == "" || len(k) > MaxKeyLen || !utf8.ValidString(k) {
		return gpurent.Errorf(gpurent.CodeInvalid, "an idempotency key of 1 to %d bytes is required", MaxKeyLen)
	}
	return nil
}

// GrantSLA posts an SLA credit (the system acting: the incident service):
// a credit lot of fen that expires at expires, burnt before promo credit
// and cash. key makes it idempotent: the same key and amount again is a
// no-op (dup true).
func (s *Service) GrantSLA(ctx context.Context, accountID string, fen int64, key string, at, expires time.Time, note string) (bool, error) {
	if err := checkAmount(fen, 1); err != nil {
		return false, err
	}
	if !expires.After(at) {
		return false, gpurent.Errorf(gpurent.CodeInvalid, "an SLA credit must expire after it is granted")
	}
	tx := &gpurent.LedgerTx{Op: string(ledger.OpGrant), Key: key, Customer: accountID, At: at.UTC(), AmountFen: fen,
		Credit: string(ledger.KindSLA), ExpiresAt: expires.UTC(), Note: note}
	dup, err := s.store.PostLedger(ctx, tx)
	if err != nil {
		return false, err
	}
	if !dup {
		s.log.Info("SLA credit", "account", accountID, "amount_fen", fen, "key", key, "expires", expires)
	}
	return dup, nil
}
