package api

import (
	"math"
	"net/http"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/ledger"
	"github.com/gpurent/gpurent/internal/wallet"
)

// headerSignature carries a payment provider's signature of a callback's
// body: for the fake provider, "sha256=" + hex HMAC-SHA256(secret, body).
const headerSignature = "Gpurent-Signature"

func walletView(v *wallet.View) apiv1.Wallet {
	out := apiv1.Wallet{
		AccountID: v.AccountID, At: v.At.UTC(), CashFen: v.CashFen, CreditFen: v.CreditFen,
		SpendableFen: v.SpendableFen, ArrearsFen: v.ArrearsFen, Credits: []apiv1.CreditLot{},
		BurnFenPerHour: v.BurnFenPerHour, RunningInstances: v.RunningInstances,
	}
	if v.RunwaySeconds != ledger.NoLimit {
		r := v.RunwaySeconds
		out.RunwaySeconds = &r
	}
	for _, l := range v.Lots {
		out.Credits = append(out.Credits, apiv1.CreditLot{ID: l.ID, Kind: l.Kind, BalanceFen: l.BalanceFen,
			ExpiresAt: l.ExpiresAt.UTC()})
	}
	return out
}

func ledgerEntryView(e *wallet.Entry) apiv1.LedgerEntry {
	out := apiv1.LedgerEntry{Seq: e.Seq, Key: e.Key, Op: e.Op, At: e.At.UTC(), AmountFen: e.AmountFen,
		NetFen: e.NetFen, Charge: e.Charge, Credit: e.Credit, Lot: e.Lot, Note: e.Note,
		Postings: make([]apiv1.LedgerPosting, 0, len(e.Postings))}
	if !e.ExpiresAt.IsZero() {
		t := e.ExpiresAt.UTC()
		out.ExpiresAt = &t
	}
	for _, p := range e.Postings {
		out.Postings = append(out.Postings, apiv1.LedgerPosting{Account: p.Kind, Lot: p.Lot,
			Platform: p.Customer == "", AmountFen: p.AmountFen})
	}
	return out
}

func voucherView(v *gpurent.Voucher) apiv1.Voucher {
	return apiv1.Voucher{ID: v.ID, Code: wallet.FormatCode(v.Code), Kind: string(v.Kind), AmountFen: v.AmountFen,
		ExpiresAt: v.ExpiresAt.UTC(), MaxRedemptions: v.MaxRedemptions, Redemptions: v.Redemptions,
		CreatedAt: v.CreatedAt.UTC()}
}

func paymentView(p *gpurent.Payment) apiv1.Payment {
	out := apiv1.Payment{ID: p.ID, Provider: p.Provider, PaymentID: p.PaymentID, AmountFen: p.AmountFen,
		State: string(p.State), PayURL: p.PayURL, CreatedAt: p.CreatedAt.UTC()}
	if p.ConfirmedAt != nil {
		t := p.ConfirmedAt.UTC()
		out.ConfirmedAt = &t
	}
	return out
}

func (s *Server) handleWallet(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	v, err := s.wallet.Wallet(r.Context(), acc)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, walletView(v))
}

func (s *Server) handleWalletTransactions(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	q := r.URL.Query()
	limit, err := queryInt(q.Get("limit"), "limit", wallet.DefaultListLimit, 1, wallet.MaxListLimit)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	before, err := queryInt(q.Get("before"), "before", 0, 0, math.MaxInt)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	es, err := s.wallet.Transactions(r.Context(), acc, int64(before), limit)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out := apiv1.LedgerEntryList{Entries: make([]apiv1.LedgerEntry, 0, len(es))}
	for i := range es {
		out.Entries = append(out.Entries, ledgerEntryView(&es[i]))
	}
	if len(es) == limit {
		out.NextBefore = es[len(es)-1].Seq
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleRedeemVoucher(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.idempotent(w, r, idem{scope: acc.ID, body: body}, func(w http.ResponseWriter) {
		var req apiv1.RedeemVoucherRequest
		if err := decodeJSON(body, &req); err != nil {
			s.writeProblem(w, r, err)
			return
		}
		red, err := s.wallet.RedeemVoucher(r.Context(), acc, req.Code)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		status := http.StatusCreated
		if red.Dup {
			status = http.StatusOK
		}
		writeJSON(w, status, apiv1.VoucherRedemption{Code: wallet.FormatCode(red.Voucher.Code),
			Kind: string(red.Voucher.Kind), AmountFen: red.Voucher.AmountFen, RedeemedAt: red.RedeemedAt.UTC(),
			AlreadyRedeemed: red.Dup, Entry: ledgerEntryView(red.Entry)})
	})
}

func (s *Server) handleCreateVoucher(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.idempotent(w, r, idem{scope: acc.ID, body: body}, func(w http.ResponseWriter) {
		var req apiv1.CreateVoucherRequest
		if err := decodeJSON(body, &req); err != nil {
			s.writeProblem(w, r, err)
			return
		}
		v, err := s.wallet.CreateVoucher(r.Context(), acc, req.AmountFen, gpurent.VoucherKind(req.Kind),
			req.ExpiresAt, req.MaxRedemptions)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		writeJSON(w, http.StatusCreated, voucherView(v))
	})
}

func (s *Server) handleCredit(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.idempotent(w, r, idem{scope: acc.ID, body: body}, func(w http.ResponseWriter) {
		var req apiv1.CreditRequest
		if err := decodeJSON(body, &req); err != nil {
			s.writeProblem(w, r, err)
			return
		}
		// The request's Idempotency-Key is the credit's own key, so that a
		// retry through another replica still credits once. Without one
		// every request is a new credit.
		key := r.Header.Get(headerIdempotencyKey)
		if key == "" {
			key = gpurent.NewID("req")
		}
		e, dup, err := s.wallet.Credit(r.Context(), acc, r.PathValue("id"), req.AmountFen, req.Reason, key)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		status := http.StatusCreated
		if dup {
			status = http.StatusOK
		}
		writeJSON(w, status, ledgerEntryView(e))
	})
}

func (s *Server) handleCreatePayment(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.idempotent(w, r, idem{scope: acc.ID, body: body}, func(w http.ResponseWriter) {
		var req apiv1.CreatePaymentRequest
		if err := decodeJSON(body, &req); err != nil {
			s.writeProblem(w, r, err)
			return
		}
		p, err := s.wallet.StartPayment(r.Context(), acc, req.Provider, req.AmountFen)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		writeJSON(w, http.StatusCreated, paymentView(p))
	})
}

// handlePaymentCallback is the provider's confirmation. It carries no
// bearer token: the provider signs the raw body (header Gpurent-Signature)
// and the provider's adapter checks it; settling is idempotent on the
// payment id, so the provider's retries are harmless.
func (s *Server) handlePaymentCallback(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	res, err := s.wallet.HandleCallback(r.Context(), r.PathValue("provider"), body, r.Header.Get(headerSignature))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.PaymentCallbackResponse{Payment: paymentView(res.Payment), AlreadySettled: res.Dup})
}

// handleSettlePayment is an operator confirming (or failing) a payment by
// hand, as for a bank transfer seen on the operator's account. It is
// idempotent on the payment id like a gateway's callback.
func (s *Server) handleSettlePayment(w http.ResponseWriter, r *http.Request, acc *gpurent.Account) {
	body, err := readBody(w, r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	var req apiv1.SettlePaymentRequest
	if err := decodeJSON(body, &req); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	provider, id := r.PathValue("provider"), r.PathValue("id")
	settle := s.wallet.ConfirmPayment
	if req.Failed {
		settle = s.wallet.FailPayment
	}
	res, err := settle(r.Context(), provider, id, req.AmountFen)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.log.Info("payment settled by an operator", "operator", acc.ID, "provider", provider, "payment", id, "failed", req.Failed)
	writeJSON(w, http.StatusOK, apiv1.PaymentCallbackResponse{Payment: paymentView(res.Payment), AlreadySettled: res.Dup})
}
