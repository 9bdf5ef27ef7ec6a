package wallet

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/ledger"
	"github.com/gpurent/gpurent/internal/money"
)

// PaymentProvider is a payment gateway. A top-up asks it for a payment
// (CreatePayment); the customer pays at the URL it answers; the gateway then
// calls the control plane back, and ParseCallback authenticates and decodes
// that call. Nothing is credited before a confirmation arrives.
type PaymentProvider interface {
	// Name is the provider's name in URLs and records ("fake", "alipay").
	Name() string
	// CreatePayment opens a payment of amountFen for accountID and answers
	// the provider's payment id and the URL where the customer pays.
	CreatePayment(ctx context.Context, accountID string, amountFen int64) (paymentID, payURL string, err error)
	// ParseCallback authenticates a callback's raw body with the signature
	// that came with it and decodes it. A bad signature is
	// CodeUnauthorized, a malformed body CodeInvalid.
	ParseCallback(body []byte, signature string) (Callback, error)
}

// Callback is a provider's word on a payment.
type Callback struct {
	PaymentID string
	AmountFen int64
	// Succeeded: the money arrived. False: the payment failed for good.
	Succeeded bool
}

// maxPaymentIDLen bounds a provider's payment id, so that the top-up's
// ledger key ("topup:<provider>:<id>") stays within ledger.MaxKeyLen.
const maxPaymentIDLen = 128

// Provider answers the provider named name.
func (s *Service) Provider(name string) (PaymentProvider, error) {
	p, ok := s.providers[name]
	if !ok {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "payment provider %q not found", name)
	}
	return p, nil
}

// StartPayment opens a top-up of amountFen through the provider ("": the
// only one the server has) for the account and records it as pending. The answer's PayURL is where the
// customer pays.
func (s *Service) StartPayment(ctx context.Context, acc *gpurent.Account, provider string, amountFen int64) (*gpurent.Payment, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "not signed in")
	}
	if err := checkAmount(amountFen, MinPaymentFen); err != nil {
		return nil, err
	}
	if provider == "" {
		names := make([]string, 0, len(s.providers))
		for n := range s.providers {
			names = append(names, n)
		}
		sort.Strings(names)
		switch len(names) {
		case 0:
			return nil, gpurent.Errorf(gpurent.CodeUnavailable, "this server takes no payments online: ask the operator for a voucher or a credit")
		case 1:
			provider = names[0]
		default:
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "name a payment provider: %s", strings.Join(names, ", "))
		}
	}
	p, err := s.Provider(provider)
	if err != nil {
		return nil, err
	}
	id, url, err := p.CreatePayment(ctx, acc.ID, amountFen)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeUnavailable, err, "payment provider %q is unavailable", provider)
	}
	pay := &gpurent.Payment{Provider: provider, PaymentID: id, AccountID: acc.ID, AmountFen: amountFen,
		PayURL: url, CreatedAt: s.now()}
	if err := s.store.CreatePayment(ctx, pay); err != nil {
		return nil, err
	}
	s.log.Info("payment started", "account", acc.ID, "provider", provider, "payment", id, "amount_fen", amountFen)
	return pay, nil
}

// PaymentResult is what a confirmation did.
type PaymentResult struct {
	Payment *gpurent.Payment
	Entry   *Entry // the top-up; nil for a failed payment
	// Dup: the payment was settled before; this is the first answer.
	Dup bool
}

// HandleCallback authenticates and applies a provider's callback: a
// success confirms the payment (ConfirmPayment), a failure fails it.
func (s *Service) HandleCallback(ctx context.Context, provider string, body []byte, signature string) (*PaymentResult, error) {
	p, err := s.Provider(provider)
	if err != nil {
		return nil, err
	}
	cb, err := p.ParseCallback(body, signature)
	if err != nil {
		return nil, err
	}
	if cb.Succeeded {
		return s.ConfirmPayment(ctx, provider, cb.PaymentID, cb.AmountFen)
	}
	return s.FailPayment(ctx, provider, cb.PaymentID, cb.AmountFen)
}

// ConfirmPayment books a confirmed payment: the payment moves from pending
// to confirmed and the top-up (key "topup:<provider>:<payment id>") posts,
// in one transaction. It is idempotent on the payment id: a second
// confirmation answers the first's result (Dup); another amount, or a
// payment that failed, is a conflict.
func (s *Service) ConfirmPayment(ctx context.Context, provider, paymentID string, amountFen int64) (*PaymentResult, error) {
	return s.settle(ctx, provider, paymentID, amountFen, gpurent.PaymentConfirmed)
}

// FailPayment records that a pending payment failed; nothing is credited.
// Idempotent like ConfirmPayment; failing a confirmed payment is a
// conflict.
func (s *Service) FailPayment(ctx context.Context, provider, paymentID string, amountFen int64) (*PaymentResult, error) {
	return s.settle(ctx, provider, paymentID, amountFen, gpurent.PaymentFailed)
}

func (s *Service) settle(ctx context.Context, provider, paymentID string, amountFen int64, to gpurent.PaymentState) (*PaymentResult, error) {
	if paymentID == "" || len(paymentID) > maxPaymentIDLen {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "a payment id of 1 to %d bytes is required", MaxKeyLen)
	}
	if _, err := s.Provider(provider); err != nil {
		return nil, err
	}
	key := "topup:" + provider + ":" + paymentID
	var res PaymentResult
	err := s.store.InTx(ctx, func(q gpurent.Queries) error {
		res = PaymentResult{}
		now := s.now()
		pay, moved, err := q.SettlePayment(ctx, provider, paymentID, to, amountFen, now)
		if err != nil {
			return err
		}
		res.Payment = pay
		switch {
		case pay.AmountFen != amountFen:
			return gpurent.Errorf(gpurent.CodeConflict, "payment %s/%s is for %s, not %s",
				provider, paymentID, money.Format(pay.AmountFen), money.Format(amountFen))
		case pay.State != to:
			return gpurent.Errorf(gpurent.CodeConflict, "payment %s/%s is already %s", provider, paymentID, pay.State)
		}
		res.Dup = !moved
		if to != gpurent.PaymentConfirmed {
			return nil
		}
		if !moved {
			tx, err := q.LedgerTxByKey(ctx, key)
			if err != nil {
				return err
			}
			res.Entry = entryOf(tx)
			return nil
		}
		tx := &gpurent.LedgerTx{Op: string(ledger.OpTopUp), Key: key, Customer: pay.AccountID, At: now,
			AmountFen: pay.AmountFen, Note: "payment " + provider + "/" + paymentID}
		if _, err := q.PostLedger(ctx, tx); err != nil {
			return err
		}
		res.Entry = entryOf(tx)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !res.Dup {
		s.log.Info("payment settled", "provider", provider, "payment", paymentID, "state", to,
			"account", res.Payment.AccountID, "amount_fen", amountFen)
	}
	return &res, nil
}

// FakeProvider is a payment provider that needs no network: payments get
// ids "fake_<random>", the pay URL points under a base URL the caller
// chooses, and callbacks are JSON signed with HMAC-SHA256 under a shared
// secret — the shape real gateways use. Tests and the demo play the
// gateway with SignedCallback.
type FakeProvider struct {
	name    string
	secret  []byte
	baseURL string
}

// NewFakeProvider makes a fake provider called name (default "fake") with
// the callback secret and the base of its pay URLs.
func NewFakeProvider(name, secret, baseURL string) *FakeProvider {
	if name == "" {
		name = "fake"
	}
	return &FakeProvider{name: name, secret: []byte(secret), baseURL: strings.TrimRight(baseURL, "/")}
}

// Name is the provider's name.
func (f *FakeProvider) Name() string { return f.name }

// CreatePayment opens a fake payment.
func (f *FakeProvider) CreatePayment(_ context.Context, _ string, _ int64) (string, string, error) {
	id := "fake_" + gpurent.RandomSecret(10)
	return id, f.baseURL + "/fakepay/" + id, nil
}

// fakeCallback is the callback body: {"payment_id": ..., "amount_fen": ...,
// "status": "succeeded" | "failed"}.
type fakeCallback struct {
	PaymentID string `json:"payment_id"`
	AmountFen int64  `json:"amount_fen"`
	Status    string `json:"status"`
}

// Sign is the signature of body: "sha256=" + hex HMAC-SHA256(secret, body).
func (f *FakeProvider) Sign(body []byte) string {
	m := hmac.New(sha256.New, f.secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// SignedCallback is the call the fake gateway makes when a payment
// succeeds (or fails): its body and signature.
func (f *FakeProvider) SignedCallback(paymentID string, amountFen int64, succeeded bool) ([]byte, string) {
	status := "failed"
	if succeeded {
		status = "succeeded"
	}
	body, _ := json.Marshal(fakeCallback{PaymentID: paymentID, AmountFen: amountFen, Status: status})
	return body, f.Sign(body)
}

// ParseCallback checks the signature in constant time, then decodes.
func (f *FakeProvider) ParseCallback(body []byte, signature string) (Callback, error) {
	if len(f.secret) == 0 || !hmac.Equal([]byte(signature), []byte(f.Sign(body))) {
		return Callback{}, gpurent.Errorf(gpurent.CodeUnauthorized, "payment callback signature does not match")
	}
	var cb fakeCallback
	if err := json.Unmarshal(body, &cb); err != nil {
		return Callback{}, gpurent.WrapError(gpurent.CodeInvalid, err, "payment callback body is not valid JSON")
	}
	if cb.PaymentID == "" || cb.AmountFen <= 0 || (cb.Status != "succeeded" && cb.Status != "failed") {
		return Callback{}, gpurent.Errorf(gpurent.CodeInvalid, "payment callback needs payment_id, amount_fen > 0 and status succeeded or failed")
	}
	return Callback{PaymentID: cb.PaymentID, AmountFen: cb.AmountFen, Succeeded: cb.Status == "succeeded"}, nil
}
