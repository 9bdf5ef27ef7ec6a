package cli_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/apiv1"
)

var (
	fxRunway = int64(3*3600 + 5*60)
	fxWallet = apiv1.Wallet{AccountID: "acc-1", At: fxNow, CashFen: 100_000, CreditFen: 2_550, SpendableFen: 102_550,
		ArrearsFen: 0, BurnFenPerHour: 3_999, RunningInstances: 2, RunwaySeconds: &fxRunway,
		Credits: []apiv1.CreditLot{{ID: "voucher:vch-1:acc-1", Kind: "promo", BalanceFen: 2_550, ExpiresAt: t0.Add(72 * time.Hour)}}}
	fxHistory = apiv1.LedgerEntryList{Entries: []apiv1.LedgerEntry{
		{Seq: 7, Key: "debit:l1:3", Op: "debit", At: t0.Add(time.Hour), AmountFen: 120, NetFen: -120, Charge: "compute",
			Postings: []apiv1.LedgerPosting{{Account: "cash", AmountFen: -120}, {Account: "revenue", Platform: true, AmountFen: 120}}},
		{Seq: 3, Key: "credit:acc-1:k", Op: "topup", At: t0, AmountFen: 100_120, NetFen: 100_120, Note: "operator credit: welcome",
			Postings: []apiv1.LedgerPosting{{Account: "clearing", Platform: true, AmountFen: -100_120}, {Account: "cash", AmountFen: 100_120}}},
	}, NextBefore: 3}
)

// walletAPI is a fake of the wallet routes that records what it was sent.
type walletAPI struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []got
}

func newWalletAPI(t *testing.T) *walletAPI {
	f := &walletAPI{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/wallet", func(w http.ResponseWriter, r *http.Request) { reply(w, 200, fxWallet) })
	mux.HandleFunc("GET /api/v1/wallet/transactions", func(w http.ResponseWriter, r *http.Request) { reply(w, 200, fxHistory) })
	mux.HandleFunc("POST /api/v1/vouchers/redeem", func(w http.ResponseWriter, r *http.Request) {
		var req apiv1.RedeemVoucherRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		switch req.Code {
		case "used-up":
			problem(w, 409, "conflict", "voucher USED-UP was redeemed the most times it allows")
		case "again":
			reply(w, 200, apiv1.VoucherRedemption{Code: "AGAI-N000-0000", Kind: "cash", AmountFen: 500, RedeemedAt: t0,
				AlreadyRedeemed: true, Entry: apiv1.LedgerEntry{Seq: 2}})
		case "promo":
			exp := t0.Add(48 * time.Hour)
			reply(w, 201, apiv1.VoucherRedemption{Code: "PR0M-0000-0000", Kind: "promo", AmountFen: 5_000, RedeemedAt: t0,
				Entry: apiv1.LedgerEntry{Seq: 4, Op: "grant", ExpiresAt: &exp}})
		default:
			reply(w, 201, apiv1.VoucherRedemption{Code: "7KQ2-M9XD-4RTB", Kind: "cash", AmountFen: 20_000, RedeemedAt: t0,
				Entry: apiv1.LedgerEntry{Seq: 5, Op: "topup"}})
		}
	})
	mux.HandleFunc("POST /api/v1/vouchers", func(w http.ResponseWriter, r *http.Request) {
		var req apiv1.CreateVoucherRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		reply(w, 201, apiv1.Voucher{ID: "vch-1", Code: "7KQ2-M9XD-4RTB", Kind: req.Kind, AmountFen: req.AmountFen,
			ExpiresAt: req.ExpiresAt, MaxRedemptions: req.MaxRedemptions, CreatedAt: t0})
	})
	mux.HandleFunc("POST /api/v1/accounts/{id}/credit", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == "nobody@example.com" {
			problem(w, 404, "not_found", `account "nobody@example.com" not found`)
			return
		}
		var req apiv1.CreditRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		reply(w, 201, apiv1.LedgerEntry{Seq: 9, Op: "topup", AmountFen: req.AmountFen, NetFen: req.AmountFen})
	})
	mux.HandleFunc("POST /api/v1/payments", func(w http.ResponseWriter, r *http.Request) {
		var req apiv1.CreatePaymentRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		reply(w, 201, apiv1.Payment{ID: "pay-1", Provider: req.Provider, PaymentID: "fake_1", AmountFen: req.AmountFen,
			State: "pending", PayURL: "http://127.0.0.1/fakepay/fake_1", CreatedAt: t0})
	})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		f.mu.Lock()
		f.reqs = append(f.reqs, got{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"),
			r.Header.Get("Idempotency-Key"), b})
		f.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer tok-env" {
			problem(w, 401, "unauthorized", "missing or invalid token")
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *walletAPI) last() got {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reqs[len(f.reqs)-1]
}

func walletHarness(t *testing.T) (*harness, *walletAPI) {
	f := newWalletAPI(t)
	h := newHarness(t)
	h.vars["GPURENT_SERVER"] = f.srv.URL
	h.vars["GPURENT_TOKEN"] = "tok-env"
	return h, f
}

func TestWalletShowsBalancesCreditsAndRunway(t *testing.T) {
	h, _ := walletHarness(t)
	contains(t, "wallet", h.ok("wallet"),
		"Spendable:", "¥1,025.50", "Cash:", "¥1,000.00", "Credit:", "¥25.50", "Arrears:", "¥0.00",
		"Burn rate:", "¥39.99/h (2 running)", "Runway:", "3h 05m",
		"CREDIT", "EXPIRES", "voucher:vch-1:acc-1", "promo", "2025-03-04 08:00:00 UTC")
	var back apiv1.Wallet
	if err := json.Unmarshal([]byte(h.ok("wallet", "-o", "json")), &back); err != nil || !reflect.DeepEqual(back, fxWallet) {
		t.Fatalf("wallet -o json: %+v %v", back, err)
	}
	contains(t, "history", h.ok("wallet", "history"),
		"SEQ", "WHAT", "CHANGE", "debit compute", "-¥1.20", "topup", "+¥1,001.20", "operator credit: welcome",
		"More: gpurent wallet history --before 3")
}

func TestWalletNothingRunningAndArrears(t *testing.T) {
	saved := fxWallet
	t.Cleanup(func() { fxWallet = saved })
	fxWallet.RunwaySeconds, fxWallet.ArrearsFen, fxWallet.Credits = nil, 250, nil
	h, _ := walletHarness(t)
	contains(t, "wallet", h.ok("wallet"), "no limit (nothing is running)", "¥2.50 (no instance can start until this is paid)")
}

func TestVoucherRedeem(t *testing.T) {
	h, f := walletHarness(t)
	contains(t, "redeem", h.ok("voucher", "redeem", "7kq2-m9xd-4rtb"), "Redeemed 7KQ2-M9XD-4RTB: ¥200.00 added to your cash balance.")
	r := f.last()
	if r.Path != "/api/v1/vouchers/redeem" || r.Key == "" || string(r.Body) != `{"code":"7kq2-m9xd-4rtb"}` {
		t.Fatalf("sent %+v body %s", r, r.Body)
	}
	contains(t, "promo", h.ok("voucher", "redeem", "promo"), "¥50.00 of promo credit, usable until 2025-03-03 08:00:00 UTC")
	contains(t, "again", h.ok("voucher", "redeem", "again"), "You already redeemed AGAI-N000-0000", "nothing more was credited")
	res := h.run("", "voucher", "redeem", "used-up")
	if res.code != 1 || !bytes.Contains([]byte(res.stderr), []byte("redeemed the most times it allows (conflict)")) {
		t.Fatalf("used-up: %+v", res)
	}
	if res := h.run("", "voucher", "redeem"); res.code != 2 {
		t.Fatalf("no code: exit %d", res.code)
	}
}

func TestVoucherCreate(t *testing.T) {
	h, f := walletHarness(t)
	contains(t, "create", h.ok("voucher", "create", "50", "--promo", "--expires", "2026-12-31", "--max", "100"),
		"Code:", "7KQ2-M9XD-4RTB", "promo", "¥50.00", "2027-01-01 00:00:00 UTC", "up to 100")
	var req apiv1.CreateVoucherRequest
	if err := json.Unmarshal(f.last().Body, &req); err != nil {
		t.Fatal(err)
	}
	want := apiv1.CreateVoucherRequest{AmountFen: 5_000, Kind: "promo", ExpiresAt: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), MaxRedemptions: 100}
	if !reflect.DeepEqual(req, want) || f.last().Key == "" {
		t.Fatalf("sent %+v, want %+v", req, want)
	}
	h.ok("voucher", "create", "0.05", "--expires", "2026-12-31T10:00:00+08:00")
	if err := json.Unmarshal(f.last().Body, &req); err != nil || req.Kind != "cash" || req.AmountFen != 5 || req.MaxRedemptions != 1 ||
		!req.ExpiresAt.Equal(time.Date(2026, 12, 31, 2, 0, 0, 0, time.UTC)) {
		t.Fatalf("cash voucher sent %+v %v", req, err)
	}
	for _, args := range [][]string{
		{"voucher", "create", "50"},                               // no --expires
		{"voucher", "create", "50", "--expires", "31/12/2026"},    // bad date
		{"voucher", "create", "5.005", "--expires", "2026-12-31"}, // three decimals
		{"voucher", "create", "-5", "--expires", "2026-12-31"},
		{"voucher", "create", "1e3", "--expires", "2026-12-31"},
	} {
		if res := h.run("", args...); res.code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, res.code, res.stderr)
		}
	}
}

func TestCredit(t *testing.T) {
	h, f := walletHarness(t)
	contains(t, "credit", h.ok("credit", "li@example.com", "1,234.56", "--reason", "bank transfer"),
		"Credited ¥1,234.56 to li@example.com (ledger entry 9).")
	r := f.last()
	if r.Path != "/api/v1/accounts/li@example.com/credit" || r.Key == "" ||
		string(r.Body) != `{"amount_fen":123456,"reason":"bank transfer"}` {
		t.Fatalf("sent %+v body %s", r, r.Body)
	}
	if res := h.run("", "credit", "li@example.com", "10"); res.code != 2 || !bytes.Contains([]byte(res.stderr), []byte("--reason is required")) {
		t.Fatalf("no reason: %+v", res)
	}
	if res := h.run("", "credit", "nobody@example.com", "10", "--reason", "x"); res.code != 1 ||
		!bytes.Contains([]byte(res.stderr), []byte("not found (not_found)")) {
		t.Fatalf("unknown account: %+v", res)
	}
}

func TestWalletTopUp(t *testing.T) {
	h, f := walletHarness(t)
	contains(t, "topup", h.ok("wallet", "topup", "100", "--provider", "fake"), "Payment fake_1 of ¥100.00 started with fake.",
		"Pay: http://127.0.0.1/fakepay/fake_1")
	if string(f.last().Body) != `{"provider":"fake","amount_fen":10000}` {
		t.Fatalf("sent %s", f.last().Body)
	}
}
