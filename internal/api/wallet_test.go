package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
)

func TestMeShowsLedgerBalance(t *testing.T) {
	e := newEnv(t)
	u := e.customer() // credited 1,000,000.00 CNY through the ledger
	me := decode[apiv1.Account](t, e.do(req{method: "GET", path: "/api/v1/me", token: u.token}), 200)
	if me.BalanceFen != 1_000_000_00 {
		t.Fatalf("me balance %d, want the ledger's 100000000", me.BalanceFen)
	}
	// The legacy column is not the truth any more: changing nothing in it,
	// a credit shows at once.
	op := e.operator()
	decode[apiv1.LedgerEntry](t, e.do(req{method: "POST", path: "/api/v1/accounts/" + u.acc.ID + "/credit",
		token: op.token, body: apiv1.CreditRequest{AmountFen: 55, Reason: "test"}}), 201)
	me = decode[apiv1.Account](t, e.do(req{method: "GET", path: "/api/v1/me", token: u.token}), 200)
	if me.BalanceFen != 1_000_000_55 {
		t.Fatalf("me balance %d after a credit", me.BalanceFen)
	}
}

func TestWalletView(t *testing.T) {
	e := newEnv(t)
	u := e.account(gpurent.RoleCustomer, 0)
	wl := decode[apiv1.Wallet](t, e.do(req{method: "GET", path: "/api/v1/wallet", token: u.token}), 200)
	if wl.AccountID != u.acc.ID || wl.SpendableFen != 0 || wl.RunwaySeconds != nil || len(wl.Credits) != 0 {
		t.Fatalf("empty wallet %+v", wl)
	}
	problem(t, e.do(req{method: "GET", path: "/api/v1/wallet"}), 401, gpurent.CodeUnauthorized)

	op := e.operator()
	decode[apiv1.LedgerEntry](t, e.do(req{method: "POST", path: "/api/v1/accounts/" + u.acc.ID + "/credit",
		token: op.token, body: apiv1.CreditRequest{AmountFen: 1_000_00, Reason: "welcome"}}), 201)
	v := decode[apiv1.Voucher](t, e.do(req{method: "POST", path: "/api/v1/vouchers", token: op.token,
		body: apiv1.CreateVoucherRequest{AmountFen: 500, Kind: "promo", ExpiresAt: time.Now().Add(48 * time.Hour),
			MaxRedemptions: 10}}), 201)
	decode[apiv1.VoucherRedemption](t, e.do(req{method: "POST", path: "/api/v1/vouchers/redeem", token: u.token,
		body: apiv1.RedeemVoucherRequest{Code: v.Code}}), 201)

	// A running instance burns: 1 × rtx4090 at its hourly list price.
	h := e.host("gpu-w", 2)
	in := e.rent(u, 1)
	d := decode[agentproto.Desired](t, e.do(req{method: "GET", path: agentproto.PathDesired + "?after=0", token: h.token}), 200)
	if len(d.Instances) != 1 {
		t.Fatalf("desired %+v", d)
	}
	rep := agentproto.Report{ReportID: "r-w", At: time.Now().UTC(), Runtime: "docker",
		Instances: []agentproto.ActualInstance{{InstanceID: in.ID, AllocationID: d.Instances[0].AllocationID,
			State: agentproto.StateRunning, StartedAt: time.Now().UTC()}}}
	decode[agentproto.ReportResponse](t, e.do(req{method: "POST", path: agentproto.PathReport, token: h.token, body: rep}), 200)
	wl = decode[apiv1.Wallet](t, e.do(req{method: "GET", path: "/api/v1/wallet", token: u.token}), 200)
	if wl.CashFen != 1_000_00 || wl.CreditFen != 500 || wl.SpendableFen != 1_005_00 || len(wl.Credits) != 1 ||
		wl.Credits[0].Kind != "promo" || wl.Credits[0].BalanceFen != 500 {
		t.Fatalf("wallet %+v", wl)
	}
	gt, err := e.st.GPUType(context.Background(), testGPUType)
	if err != nil {
		t.Fatal(err)
	}
	if wl.RunningInstances != 1 || wl.BurnFenPerHour != gt.PriceHourlyFen || wl.RunwaySeconds == nil ||
		*wl.RunwaySeconds != 1_005_00*3600/gt.PriceHourlyFen {
		t.Fatalf("burn %d/h over %d, runway %v; want %d/h", wl.BurnFenPerHour, wl.RunningInstances, wl.RunwaySeconds, gt.PriceHourlyFen)
	}

	// Another customer sees only their own wallet and history.
	other := e.account(gpurent.RoleCustomer, 0)
	ow := decode[apiv1.Wallet](t, e.do(req{method: "GET", path: "/api/v1/wallet", token: other.token}), 200)
	if ow.AccountID != other.acc.ID || ow.SpendableFen != 0 {
		t.Fatalf("other's wallet %+v", ow)
	}
	oh := decode[apiv1.LedgerEntryList](t, e.do(req{method: "GET", path: "/api/v1/wallet/transactions", token: other.token}), 200)
	if len(oh.Entries) != 0 {
		t.Fatalf("other sees entries %+v", oh)
	}
}

func TestWalletTransactions(t *testing.T) {
	e := newEnv(t)
	u := e.account(gpurent.RoleCustomer, 0)
	op := e.operator()
	for i := range 5 {
		decode[apiv1.LedgerEntry](t, e.do(req{method: "POST", path: "/api/v1/accounts/" + u.acc.ID + "/credit",
			token: op.token, body: apiv1.CreditRequest{AmountFen: int64(100 * (i + 1)), Reason: fmt.Sprintf("r%d", i)}}), 201)
	}
	page := decode[apiv1.LedgerEntryList](t, e.do(req{method: "GET", path: "/api/v1/wallet/transactions?limit=2", token: u.token}), 200)
	if len(page.Entries) != 2 || page.Entries[0].AmountFen != 500 || page.NextBefore != page.Entries[1].Seq {
		t.Fatalf("first page %+v", page)
	}
	e0 := page.Entries[0]
	if e0.Op != "topup" || e0.NetFen != 500 || e0.Note != "operator credit: r4" || len(e0.Postings) != 2 ||
		e0.Postings[0].Account != "clearing" || !e0.Postings[0].Platform || e0.Postings[1].Account != "cash" {
		t.Fatalf("entry %+v", e0)
	}
	rest := decode[apiv1.LedgerEntryList](t, e.do(req{method: "GET",
		path: fmt.Sprintf("/api/v1/wallet/transactions?before=%d", page.NextBefore), token: u.token}), 200)
	if len(rest.Entries) != 3 || rest.NextBefore != 0 || rest.Entries[2].AmountFen != 100 {
		t.Fatalf("second page %+v", rest)
	}
	for _, q := range []string{"limit=-1", "limit=x", "limit=501", "before=abc"} {
		problem(t, e.do(req{method: "GET", path: "/api/v1/wallet/transactions?" + q, token: u.token}), 400, gpurent.CodeInvalid)
	}
	problem(t, e.do(req{method: "GET", path: "/api/v1/wallet/transactions"}), 401, gpurent.CodeUnauthorized)
}

func TestCreditRoute(t *testing.T) {
	e := newEnv(t)
	u := e.account(gpurent.RoleCustomer, 0)
	op := e.operator()
	path := "/api/v1/accounts/" + u.acc.ID + "/credit"
	body := apiv1.CreditRequest{AmountFen: 12_345, Reason: "bank transfer 2026-11-02"}
	key := map[string]string{"Idempotency-Key": "credit-1"}

	// Customers may not credit, themselves or others.
	problem(t, e.do(req{method: "POST", path: path, token: u.token, body: body}), 403, gpurent.CodeForbidden)
	problem(t, e.do(req{method: "POST", path: path, body: body}), 401, gpurent.CodeUnauthorized)

	first := decode[apiv1.LedgerEntry](t, e.do(req{method: "POST", path: path, token: op.token, body: body, headers: key}), 201)
	w := e.do(req{method: "POST", path: path, token: op.token, body: body, headers: key})
	again := decode[apiv1.LedgerEntry](t, w, 201)
	if w.Header().Get("Idempotent-Replayed") != "true" || again.Seq != first.Seq {
		t.Fatalf("replay %+v (replayed %q)", again, w.Header().Get("Idempotent-Replayed"))
	}
	// The same key with another body is a conflict, and nothing moves.
	problem(t, e.do(req{method: "POST", path: path, token: op.token, headers: key,
		body: apiv1.CreditRequest{AmountFen: 1, Reason: "x"}}), 409, gpurent.CodeConflict)
	// By e-mail.
	decode[apiv1.LedgerEntry](t, e.do(req{method: "POST", path: "/api/v1/accounts/" + u.acc.Email + "/credit",
		token: op.token, body: apiv1.CreditRequest{AmountFen: 5, Reason: "by email"}}), 201)
	wl := decode[apiv1.Wallet](t, e.do(req{method: "GET", path: "/api/v1/wallet", token: u.token}), 200)
	if wl.CashFen != 12_350 {
		t.Fatalf("cash %d, want 12350", wl.CashFen)
	}
	// Bad input.
	for _, b := range []any{
		apiv1.CreditRequest{AmountFen: 0, Reason: "r"},
		apiv1.CreditRequest{AmountFen: -5, Reason: "r"},
		apiv1.CreditRequest{AmountFen: 5},
		`{"amount_fen": 1.5, "reason": "r"}`,
		`{"amount_fen": 5, "reason": "r", "extra": 1}`,
	} {
		problem(t, e.do(req{method: "POST", path: path, token: op.token, body: b}), 400, gpurent.CodeInvalid)
	}
	problem(t, e.do(req{method: "POST", path: "/api/v1/accounts/acc-nope/credit", token: op.token, body: body}), 404, gpurent.CodeNotFound)
}

func TestVoucherRoutes(t *testing.T) {
	e := newEnv(t)
	u := e.account(gpurent.RoleCustomer, 0)
	u2 := e.account(gpurent.RoleCustomer, 0)
	op := e.operator()
	exp := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second)
	create := apiv1.CreateVoucherRequest{AmountFen: 20_00, Kind: "cash", ExpiresAt: exp, MaxRedemptions: 1}
	problem(t, e.do(req{method: "POST", path: "/api/v1/vouchers", token: u.token, body: create}), 403, gpurent.CodeForbidden)
	key := map[string]string{"Idempotency-Key": "v-1"}
	v := decode[apiv1.Voucher](t, e.do(req{method: "POST", path: "/api/v1/vouchers", token: op.token, body: create, headers: key}), 201)
	if len(v.Code) != 14 || v.Code[4] != '-' || v.Kind != "cash" || !v.ExpiresAt.Equal(exp) || v.Redemptions != 0 {
		t.Fatalf("voucher %+v", v)
	}
	// A replayed create answers the same code, not a second voucher.
	v2 := decode[apiv1.Voucher](t, e.do(req{method: "POST", path: "/api/v1/vouchers", token: op.token, body: create, headers: key}), 201)
	if v2.Code != v.Code {
		t.Fatalf("replay made another voucher: %s vs %s", v2.Code, v.Code)
	}
	for _, b := range []apiv1.CreateVoucherRequest{
		{AmountFen: 0, Kind: "cash", ExpiresAt: exp, MaxRedemptions: 1},
		{AmountFen: 1, Kind: "gift", ExpiresAt: exp, MaxRedemptions: 1},
		{AmountFen: 1, Kind: "cash", ExpiresAt: time.Now().Add(-time.Hour), MaxRedemptions: 1},
		{AmountFen: 1, Kind: "cash", ExpiresAt: exp, MaxRedemptions: 0},
	} {
		problem(t, e.do(req{method: "POST", path: "/api/v1/vouchers", token: op.token, body: b}), 400, gpurent.CodeInvalid)
	}

	redeem := func(u user, code string) *httptest.ResponseRecorder {
		return e.do(req{method: "POST", path: "/api/v1/vouchers/redeem", token: u.token,
			body: apiv1.RedeemVoucherRequest{Code: code}})
	}
	r := decode[apiv1.VoucherRedemption](t, redeem(u, strings.ToLower(v.Code)), 201)
	if r.AlreadyRedeemed || r.AmountFen != 20_00 || r.Entry.Op != "topup" || r.Entry.NetFen != 20_00 {
		t.Fatalf("redemption %+v", r)
	}
	r2 := decode[apiv1.VoucherRedemption](t, redeem(u, v.Code), 200)
	if !r2.AlreadyRedeemed || r2.Entry.Seq != r.Entry.Seq {
		t.Fatalf("second redemption %+v", r2)
	}
	// Single use: another customer cannot have it.
	problem(t, redeem(u2, v.Code), 409, gpurent.CodeConflict)
	problem(t, redeem(u2, "ZZZZ-ZZZZ-ZZZZ"), 404, gpurent.CodeNotFound)
	problem(t, redeem(u2, "not a code"), 400, gpurent.CodeInvalid)
	problem(t, e.do(req{method: "POST", path: "/api/v1/vouchers/redeem", body: apiv1.RedeemVoucherRequest{Code: v.Code}}),
		401, gpurent.CodeUnauthorized)
	wl := decode[apiv1.Wallet](t, e.do(req{method: "GET", path: "/api/v1/wallet", token: u2.token}), 200)
	if wl.SpendableFen != 0 {
		t.Fatalf("u2 got %d", wl.SpendableFen)
	}
}

func TestPaymentRoutes(t *testing.T) {
	e := newEnv(t)
	u := e.account(gpurent.RoleCustomer, 0)
	problem(t, e.do(req{method: "POST", path: "/api/v1/payments", body: apiv1.CreatePaymentRequest{Provider: "fake", AmountFen: 100_00}}),
		401, gpurent.CodeUnauthorized)
	p := decode[apiv1.Payment](t, e.do(req{method: "POST", path: "/api/v1/payments", token: u.token,
		body: apiv1.CreatePaymentRequest{Provider: "fake", AmountFen: 100_00}}), 201)
	if p.State != "pending" || p.PayURL == "" || p.PaymentID == "" {
		t.Fatalf("payment %+v", p)
	}
	problem(t, e.do(req{method: "POST", path: "/api/v1/payments", token: u.token,
		body: apiv1.CreatePaymentRequest{Provider: "nope", AmountFen: 100_00}}), 404, gpurent.CodeNotFound)
	problem(t, e.do(req{method: "POST", path: "/api/v1/payments", token: u.token,
		body: apiv1.CreatePaymentRequest{Provider: "fake", AmountFen: 99}}), 400, gpurent.CodeInvalid)

	cb := func(body []byte, sig string) *httptest.ResponseRecorder {
		return e.do(req{method: "POST", path: "/api/v1/payments/fake/callback", body: body,
			headers: map[string]string{"Gpurent-Signature": sig}})
	}
	body, sig := e.fakePay.SignedCallback(p.PaymentID, 100_00, true)
	// Unsigned, wrongly signed, or signed for another body: refused.
	problem(t, cb(body, ""), 401, gpurent.CodeUnauthorized)
	problem(t, cb(body, "sha256=deadbeef"), 401, gpurent.CodeUnauthorized)
	other, _ := e.fakePay.SignedCallback(p.PaymentID, 1_000_000_00, true)
	problem(t, cb(other, sig), 401, gpurent.CodeUnauthorized)
	// A customer's bearer token is no substitute for the signature.
	problem(t, e.do(req{method: "POST", path: "/api/v1/payments/fake/callback", token: u.token, body: body}),
		401, gpurent.CodeUnauthorized)
	if wl := decode[apiv1.Wallet](t, e.do(req{method: "GET", path: "/api/v1/wallet", token: u.token}), 200); wl.CashFen != 0 {
		t.Fatalf("credited before a valid confirmation: %d", wl.CashFen)
	}

	// The provider retries its callback, concurrently: one top-up.
	var wg sync.WaitGroup
	answers := make([]*httptest.ResponseRecorder, 6)
	for i := range answers {
		wg.Go(func() { answers[i] = cb(body, sig) })
	}
	wg.Wait()
	firsts := 0
	for _, w := range answers {
		res := decode[apiv1.PaymentCallbackResponse](t, w, http.StatusOK)
		if res.Payment.State != "confirmed" {
			t.Fatalf("callback answered %+v", res)
		}
		if !res.AlreadySettled {
			firsts++
		}
	}
	wl := decode[apiv1.Wallet](t, e.do(req{method: "GET", path: "/api/v1/wallet", token: u.token}), 200)
	if firsts != 1 || wl.CashFen != 100_00 {
		t.Fatalf("%d first settlements, cash %d", firsts, wl.CashFen)
	}
	// Another amount for the same payment is a conflict.
	b2, s2 := e.fakePay.SignedCallback(p.PaymentID, 100_01, true)
	problem(t, cb(b2, s2), 409, gpurent.CodeConflict)
	b3, s3 := e.fakePay.SignedCallback("fake_unknown", 100, true)
	problem(t, cb(b3, s3), 404, gpurent.CodeNotFound)
	problem(t, e.do(req{method: "POST", path: "/api/v1/payments/nope/callback", body: body,
		headers: map[string]string{"Gpurent-Signature": sig}}), 404, gpurent.CodeNotFound)
}
