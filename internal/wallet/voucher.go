package wallet

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/ledger"
)

// Voucher codes are 12 characters of Crockford's base32 alphabet (no I, L,
// O or U, so nothing reads as another character), 60 random bits, shown in
// groups of four: "7KQ2-M9XD-4RTB". Typing is forgiving: case, spaces and
// dashes do not matter, and O, I and L read as 0, 1 and 1.
const (
	codeAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	codeLen      = 12
)

// NormalizeCode turns what a person typed into the stored form of a code,
// or "" when it cannot be one.
func NormalizeCode(s string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		switch r {
		case ' ', '-', '\t':
			continue
		case 'O':
			r = '0'
		case 'I', 'L':
			r = '1'
		}
		if r > 127 || !strings.ContainsRune(codeAlphabet, r) {
			return ""
		}
		b.WriteRune(r)
	}
	if b.Len() != codeLen {
		return ""
	}
	return b.String()
}

// FormatCode shows a stored code in groups of four.
func FormatCode(code string) string {
	if len(code) != codeLen {
		return code
	}
	return code[:4] + "-" + code[4:8] + "-" + code[8:]
}

func (s *Service) newCode() (string, error) {
	var raw [codeLen]byte
	if _, err := io.ReadFull(s.random, raw[:]); err != nil {
		return "", gpurent.WrapError(gpurent.CodeInternal, err, "voucher code: no randomness")
	}
	b := make([]byte, codeLen)
	for i, c := range raw {
		b[i] = codeAlphabet[c&31] // 256 is a multiple of 32: no bias
	}
	return string(b), nil
}

// CreateVoucher makes a voucher of amountFen: kind cash (a top-up when
// redeemed) or promo (a promo credit lot expiring with the voucher),
// redeemable until expiresAt by at most maxRedemptions accounts (1: single
// use), each once. It answers the voucher with its new random code.
func (s *Service) CreateVoucher(ctx context.Context, operator *gpurent.Account, amountFen int64,
	kind gpurent.VoucherKind, expiresAt time.Time, maxRedemptions int) (*gpurent.Voucher, error) {
	if err := requireOperator(operator); err != nil {
		return nil, err
	}
	if err := checkAmount(amountFen, 1); err != nil {
		return nil, err
	}
	if kind != gpurent.VoucherCash && kind != gpurent.VoucherPromo {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "voucher kind must be %q or %q", gpurent.VoucherCash, gpurent.VoucherPromo)
	}
	if !expiresAt.After(s.now()) {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "a voucher must expire in the future")
	}
	if maxRedemptions < 1 || maxRedemptions > MaxRedemptions {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "max redemptions must be between 1 and %d", MaxRedemptions)
	}
	for range 5 { // 60 random bits: a second collision means broken randomness
		code, err := s.newCode()
		if err != nil {
			return nil, err
		}
		v := &gpurent.Voucher{Code: code, Kind: kind, AmountFen: amountFen, ExpiresAt: expiresAt,
			MaxRedemptions: maxRedemptions, CreatedBy: operator.ID, CreatedAt: s.now()}
		err = s.store.CreateVoucher(ctx, v)
		if gpurent.IsCode(err, gpurent.CodeConflict) {
			continue
		}
		if err != nil {
			return nil, err
		}
		s.log.Info("voucher created", "operator", operator.ID, "voucher", v.ID, "kind", kind,
			"amount_fen", amountFen, "max_redemptions", maxRedemptions)
		return v, nil
	}
	return nil, gpurent.Errorf(gpurent.CodeInternal, "could not make a unique voucher code")
}

// Redemption is what redeeming a voucher did.
type Redemption struct {
	Voucher *gpurent.Voucher
	Entry   *Entry
	// RedeemedAt is when this account redeemed it; Dup says it was
	// redeemed before and this answer is the original one.
	RedeemedAt time.Time
	Dup        bool
}

// RedeemVoucher redeems code for the account: at most once per account,
// never at or after the voucher's expiry nor past its redemptions. A cash
// voucher tops the cash up; a promo voucher grants a promo lot that expires
// with the voucher. Redeeming again answers the first redemption (Dup).
func (s *Service) RedeemVoucher(ctx context.Context, acc *gpurent.Account, code string) (*Redemption, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "not signed in")
	}
	norm := NormalizeCode(code)
	if norm == "" {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "a voucher code is 12 letters and digits, like 7KQ2-M9XD-4RTB")
	}
	v, err := s.store.VoucherByCode(ctx, norm)
	if err != nil {
		return nil, err
	}
	if red, err := s.previousRedemption(ctx, v, acc.ID); red != nil || err != nil {
		return red, err
	}
	now := s.now()
	rec := &gpurent.VoucherRedemption{Code: norm, AccountID: acc.ID, RedeemedAt: now,
		LedgerKey: "voucher:" + v.ID + ":" + acc.ID}
	tx := &gpurent.LedgerTx{Key: rec.LedgerKey, Customer: acc.ID, At: now, AmountFen: v.AmountFen,
		Note: "voucher " + FormatCode(norm)}
	if v.Kind == gpurent.VoucherPromo {
		tx.Op, tx.Credit, tx.ExpiresAt = string(ledger.OpGrant), string(ledger.KindPromo), v.ExpiresAt
	} else {
		tx.Op = string(ledger.OpTopUp)
	}
	var counted *gpurent.Voucher
	err = s.store.InTx(ctx, func(q gpurent.Queries) error {
		var err error
		if counted, err = q.RedeemVoucher(ctx, rec); err != nil {
			return err
		}
		_, err = q.PostLedger(ctx, tx)
		return err
	})
	if gpurent.IsCode(err, gpurent.CodeConflict) {
		// A racing retry of the same account may have won.
		if red, err2 := s.previousRedemption(ctx, v, acc.ID); red != nil || err2 != nil {
			return red, err2
		}
	}
	if err != nil {
		return nil, err
	}
	s.log.Info("voucher redeemed", "voucher", v.ID, "account", acc.ID, "kind", v.Kind, "amount_fen", v.AmountFen)
	return &Redemption{Voucher: counted, Entry: entryOf(tx), RedeemedAt: rec.RedeemedAt}, nil
}

// previousRedemption answers the account's earlier redemption of v, or nil.
func (s *Service) previousRedemption(ctx context.Context, v *gpurent.Voucher, accountID string) (*Redemption, error) {
	rec, err := s.store.VoucherRedemption(ctx, v.ID, accountID)
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	tx, err := s.store.LedgerTxByKey(ctx, rec.LedgerKey)
	if err != nil {
		return nil, err
	}
	cur, err := s.store.VoucherByCode(ctx, v.Code)
	if err != nil {
		return nil, err
	}
	return &Redemption{Voucher: cur, Entry: entryOf(tx), RedeemedAt: rec.RedeemedAt, Dup: true}, nil
}

// Vouchers lists the vouchers, newest first, at most limit (operators).
func (s *Service) Vouchers(ctx context.Context, operator *gpurent.Account, limit int) ([]gpurent.Voucher, error) {
	if err := requireOperator(operator); err != nil {
		return nil, err
	}
	return s.store.ListVouchers(ctx, limit)
}
