package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/gpurent/gpurent"
)

const voucherCols = `id, code, kind, amount_fen, expires_at, max_redemptions, redemptions, created_by, created_at`

func scanVoucher(r rowScanner) (*gpurent.Voucher, error) {
	var v gpurent.Voucher
	var kind string
	err := r.Scan(&v.ID, &v.Code, &kind, &v.AmountFen, timeCol{&v.ExpiresAt}, &v.MaxRedemptions,
		&v.Redemptions, &v.CreatedBy, timeCol{&v.CreatedAt})
	v.Kind = gpurent.VoucherKind(kind)
	return &v, err
}

// CreateVoucher inserts v with no redemptions. An empty ID gets a new one, a
// zero CreatedAt now; a used code is a conflict.
func (s *Store) CreateVoucher(ctx context.Context, v *gpurent.Voucher) error {
	if v.Code == "" || v.AmountFen <= 0 || v.MaxRedemptions < 1 || v.ExpiresAt.IsZero() ||
		(v.Kind != gpurent.VoucherCash && v.Kind != gpurent.VoucherPromo) {
		return gpurent.Errorf(gpurent.CodeInvalid,
			"a voucher needs a code, a kind (cash or promo), an amount > 0, an expiry and at least one redemption")
	}
	if v.ID == "" {
		v.ID = gpurent.NewID(gpurent.PrefixVoucher)
	}
	v.Redemptions = 0
	v.ExpiresAt = normTime(v.ExpiresAt)
	v.CreatedAt = nowOr(v.CreatedAt)
	n, err := s.execN(ctx, `INSERT INTO vouchers (`+voucherCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING`,
		v.ID, v.Code, string(v.Kind), v.AmountFen, s.ts(v.ExpiresAt), v.MaxRedemptions, 0, v.CreatedBy, s.ts(v.CreatedAt))
	if err != nil {
		return s.dbErr(err, "create voucher")
	}
	if n == 0 {
		return gpurent.Errorf(gpurent.CodeConflict, "a voucher with this code or id already exists")
	}
	return nil
}

// VoucherByCode returns the voucher with code (normalised by the caller).
func (s *Store) VoucherByCode(ctx context.Context, code string) (*gpurent.Voucher, error) {
	v, err := scanVoucher(s.queryRow(ctx, `SELECT `+voucherCols+` FROM vouchers WHERE code = ?`, code))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("voucher", code)
	}
	if err != nil {
		return nil, s.dbErr(err, "read voucher")
	}
	return v, nil
}

// ListVouchers lists vouchers newest first, at most limit (1..1000; 0:
// 100).
func (s *Store) ListVouchers(ctx context.Context, limit int) ([]gpurent.Voucher, error) {
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	return queryAll(ctx, s, "list vouchers", `SELECT `+voucherCols+` FROM vouchers ORDER BY created_at DESC, id DESC LIMIT ?`,
		func(r rowScanner) (gpurent.Voucher, error) {
			v, err := scanVoucher(r)
			if err != nil {
				return gpurent.Voucher{}, err
			}
			return *v, nil
		}, limit)
}

// RedeemVoucher counts one redemption with a conditional update (the row
// lock it takes on PostgreSQL orders racing redeemers) and records who
// redeemed it; both in one transaction.
func (s *Store) RedeemVoucher(ctx context.Context, r *gpurent.VoucherRedemption) (*gpurent.Voucher, error) {
	if r.Code == "" || r.AccountID == "" || r.LedgerKey == "" {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "a redemption needs a code, an account and a ledger key")
	}
	rec := *r
	rec.RedeemedAt = nowOr(rec.RedeemedAt)
	var out *gpurent.Voucher
	err := s.atomic(ctx, func(st *Store) error {
		n, err := st.execN(ctx, `UPDATE vouchers SET redemptions = redemptions + 1
WHERE code = ? AND redemptions < max_redemptions AND expires_at > ?`, rec.Code, st.ts(rec.RedeemedAt))
		if err != nil {
			return st.dbErr(err, "redeem voucher")
		}
		v, err := st.VoucherByCode(ctx, rec.Code)
		if err != nil {
			return err
		}
		if n == 0 {
			if !rec.RedeemedAt.Before(v.ExpiresAt) {
				return gpurent.Errorf(gpurent.CodeInvalid, "voucher %s expired at %s", rec.Code,
					v.ExpiresAt.Format(time.RFC3339))
			}
			return gpurent.Errorf(gpurent.CodeConflict, "voucher %s was redeemed the most times it allows", rec.Code)
		}
		rec.VoucherID = v.ID
		n, err = st.execN(ctx, `INSERT INTO voucher_redemptions (voucher_id, account_id, redeemed_at, ledger_key)
VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, rec.VoucherID, rec.AccountID, st.ts(rec.RedeemedAt), rec.LedgerKey)
		if err != nil {
			return st.dbErr(err, "record voucher redemption")
		}
		if n == 0 {
			return gpurent.Errorf(gpurent.CodeConflict, "this account already redeemed voucher %s", rec.Code)
		}
		out = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	*r = rec
	return out, nil
}

// VoucherRedemption returns the account's redemption of the voucher.
func (s *Store) VoucherRedemption(ctx context.Context, voucherID, accountID string) (*gpurent.VoucherRedemption, error) {
	var r gpurent.VoucherRedemption
	err := s.queryRow(ctx, `SELECT r.voucher_id, v.code, r.account_id, r.redeemed_at, r.ledger_key
FROM voucher_redemptions r JOIN vouchers v ON v.id = r.voucher_id
WHERE r.voucher_id = ? AND r.account_id = ?`, voucherID, accountID).
		Scan(&r.VoucherID, &r.Code, &r.AccountID, timeCol{&r.RedeemedAt}, &r.LedgerKey)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("voucher redemption", voucherID+"/"+accountID)
	}
	if err != nil {
		return nil, s.dbErr(err, "read voucher redemption")
	}
	return &r, nil
}

const paymentCols = `id, provider, payment_id, account_id, amount_fen, state, pay_url, created_at, confirmed_at`

func scanPayment(r rowScanner) (*gpurent.Payment, error) {
	var p gpurent.Payment
	var state string
	err := r.Scan(&p.ID, &p.Provider, &p.PaymentID, &p.AccountID, &p.AmountFen, &state, &p.PayURL,
		timeCol{&p.CreatedAt}, nullTimeCol{&p.ConfirmedAt})
	p.State = gpurent.PaymentState(state)
	return &p, err
}

// CreatePayment inserts p as pending. An empty ID gets a new one, a zero
// CreatedAt now; a used (Provider, PaymentID) is a conflict.
func (s *Store) CreatePayment(ctx context.Context, p *gpurent.Payment) error {
	if p.Provider == "" || p.PaymentID == "" || p.AccountID == "" || p.AmountFen <= 0 {
		return gpurent.Errorf(gpurent.CodeInvalid, "a payment needs a provider, a payment id, an account and an amount > 0")
	}
	if p.ID == "" {
		p.ID = gpurent.NewID(gpurent.PrefixPayment)
	}
	p.State = gpurent.PaymentPending
	p.ConfirmedAt = nil
	p.CreatedAt = nowOr(p.CreatedAt)
	n, err := s.execN(ctx, `INSERT INTO payments (`+paymentCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING`,
		p.ID, p.Provider, p.PaymentID, p.AccountID, p.AmountFen, string(p.State), p.PayURL, s.ts(p.CreatedAt), nil)
	if err != nil {
		return s.dbErr(err, "create payment")
	}
	if n == 0 {
		return gpurent.Errorf(gpurent.CodeConflict, "payment %s/%s already exists", p.Provider, p.PaymentID)
	}
	return nil
}

// PaymentByProviderID returns the provider's payment.
func (s *Store) PaymentByProviderID(ctx context.Context, provider, paymentID string) (*gpurent.Payment, error) {
	p, err := scanPayment(s.queryRow(ctx, `SELECT `+paymentCols+` FROM payments WHERE provider = ? AND payment_id = ?`,
		provider, paymentID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("payment", provider+"/"+paymentID)
	}
	if err != nil {
		return nil, s.dbErr(err, "read payment")
	}
	return p, nil
}

// SettlePayment moves a pending payment of amountFen to state with a
// conditional update: of two racing calls exactly one moves it.
func (s *Store) SettlePayment(ctx context.Context, provider, paymentID string, state gpurent.PaymentState,
	amountFen int64, at time.Time) (*gpurent.Payment, bool, error) {
	if state != gpurent.PaymentConfirmed && state != gpurent.PaymentFailed {
		return nil, false, gpurent.Errorf(gpurent.CodeInvalid, "a payment settles as confirmed or failed, not %q", state)
	}
	n, err := s.execN(ctx, `UPDATE payments SET state = ?, confirmed_at = ?
WHERE provider = ? AND payment_id = ? AND state = 'pending' AND amount_fen = ?`,
		string(state), s.ts(nowOr(at)), provider, paymentID, amountFen)
	if err != nil {
		return nil, false, s.dbErr(err, "settle payment")
	}
	p, err := s.PaymentByProviderID(ctx, provider, paymentID)
	if err != nil {
		return nil, false, err
	}
	return p, n == 1, nil
}
