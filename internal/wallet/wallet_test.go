package wallet_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/clocktest"
	"github.com/gpurent/gpurent/internal/ledger"
	"github.com/gpurent/gpurent/internal/store/storetest"
	"github.com/gpurent/gpurent/internal/wallet"
)

type fixture struct {
	store    gpurent.Store
	svc      *wallet.Service
	clock    *clocktest.Clock
	fake     *wallet.FakeProvider
	operator *gpurent.Account
	alice    *gpurent.Account
	bob      *gpurent.Account
}

// backends runs fn on a real SQLite store and a real PostgreSQL database.
func backends(t *testing.T, fn func(t *testing.T, f *fixture)) {
	for name, open := range map[string]func(testing.TB) gpurent.Store{
		"sqlite": storetest.SQLite, "postgres": storetest.Postgres} {
		t.Run(name, func(t *testing.T) { fn(t, newFixture(t, open(t))) })
	}
}

func newFixture(t *testing.T, s gpurent.Store) *fixture {
	t.Helper()
	c := clocktest.New(time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	fake := wallet.NewFakeProvider("fake", "callback-secret", "http://127.0.0.1:1")
	f := &fixture{store: s, clock: c, fake: fake,
		svc: wallet.New(wallet.Config{Store: s, Now: c.Now, Providers: []wallet.PaymentProvider{fake},
			Logger: slog.New(slog.DiscardHandler)}),
		alice: storetest.SeedAccount(t, s, "alice@example.com"),
		bob:   storetest.SeedAccount(t, s, "bob@example.com"),
	}
	f.operator = &gpurent.Account{Email: "op@example.com", Name: "Op", Role: gpurent.RoleOperator, PasswordHash: "x"}
	if err := s.CreateAccount(context.Background(), f.operator); err != nil {
		t.Fatal(err)
	}
	return f
}

func wantCode(t *testing.T, err error, code gpurent.Code, what string) {
	t.Helper()
	if gpurent.ErrorCode(err) != code {
		t.Fatalf("%s: got %v, want code %s", what, err, code)
	}
}

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func (f *fixture) view(t *testing.T, a *gpurent.Account) *wallet.View {
	t.Helper()
	v, err := f.svc.Wallet(t.Context(), a)
	must(t, err, "wallet")
	return v
}

func TestCredit(t *testing.T) {
	backends(t, func(t *testing.T, f *fixture) {
		ctx := t.Context()
		v := f.view(t, f.alice)
		if v.SpendableFen != 0 || v.RunwaySeconds != ledger.NoLimit || v.BurnFenPerHour != 0 || len(v.Lots) != 0 {
			t.Fatalf("empty wallet: %+v", v)
		}
		e, dup, err := f.svc.Credit(ctx, f.operator, f.alice.ID, 1_000_000, "welcome", "req-1")
		must(t, err, "credit")
		if dup || e.NetFen != 1_000_000 || e.Op != "topup" || e.Note != "operator credit: welcome" {
			t.Fatalf("credit entry %+v dup %v", e, dup)
		}
		// The same key answers the first credit, later too.
		f.clock.Advance(time.Hour)
		e2, dup, err := f.svc.Credit(ctx, f.operator, f.alice.ID, 1_000_000, "welcome", "req-1")
		must(t, err, "credit again")
		if !dup || e2.Seq != e.Seq || !e2.At.Equal(e.At) {
			t.Fatalf("retry answered %+v dup %v, want seq %d", e2, dup, e.Seq)
		}
		_, _, err = f.svc.Credit(ctx, f.operator, f.alice.ID, 5, "welcome", "req-1")
		wantCode(t, err, gpurent.CodeConflict, "same key, other amount")
		// The same key for another account is another credit.
		_, dup, err = f.svc.Credit(ctx, f.operator, f.bob.ID, 300, "goodwill", "req-1")
		must(t, err, "same key, other account")
		if dup {
			t.Fatal("credit for bob answered as alice's")
		}
		if got := f.view(t, f.alice).SpendableFen; got != 1_000_000 {
			t.Fatalf("alice spendable %d", got)
		}
		// Only operators; well-formed input; existing accounts.
		_, _, err = f.svc.Credit(ctx, f.alice, f.alice.ID, 100, "self", "k")
		wantCode(t, err, gpurent.CodeForbidden, "customer credits")
		_, _, err = f.svc.Credit(ctx, nil, f.alice.ID, 100, "x", "k")
		wantCode(t, err, gpurent.CodeUnauthorized, "nobody credits")
		for _, bad := range []struct {
			amount      int64
			reason, key string
		}{{0, "r", "k"}, {-5, "r", "k"}, {wallet.MaxCreditFen + 1, "r", "k"}, {1, " ", "k"}, {1, "r", ""}} {
			_, _, err = f.svc.Credit(ctx, f.operator, f.alice.ID, bad.amount, bad.reason, bad.key)
			wantCode(t, err, gpurent.CodeInvalid, fmt.Sprintf("bad credit %+v", bad))
		}
		_, _, err = f.svc.Credit(ctx, f.operator, "acc-missing", 100, "r", "k")
		wantCode(t, err, gpurent.CodeNotFound, "unknown account")
		_, _, err = f.svc.Credit(ctx, f.operator, "nobody@example.com", 100, "r", "k")
		wantCode(t, err, gpurent.CodeNotFound, "unknown email")
		byEmail, _, err := f.svc.Credit(ctx, f.operator, "BOB@example.com", 7, "by email", "k-mail")
		must(t, err, "credit by email")
		if byEmail.Key != "credit:"+f.bob.ID+":k-mail" {
			t.Fatalf("credit by email keyed %q", byEmail.Key)
		}
		long := strings.Repeat("k", wallet.MaxKeyLen)
		e1, _, err := f.svc.Credit(ctx, f.operator, f.bob.ID, 1, "long key", long)
		must(t, err, "long key")
		e2, dup, err = f.svc.Credit(ctx, f.operator, f.bob.ID, 1, "long key", long)
		must(t, err, "long key again")
		if !dup || e2.Seq != e1.Seq {
			t.Fatal("a long key did not make the credit idempotent")
		}
		_, _, err = f.svc.Credit(ctx, f.operator, f.bob.ID, 1, "too long", long+"k")
		wantCode(t, err, gpurent.CodeInvalid, "key too long")

		list, err := f.svc.Transactions(ctx, f.alice, 0, 0)
		must(t, err, "transactions")
		if len(list) != 1 || list[0].Seq != e.Seq {
			t.Fatalf("alice's history: %+v", list)
		}
		_, err = f.svc.Transactions(ctx, f.alice, 0, wallet.MaxListLimit+1)
		wantCode(t, err, gpurent.CodeInvalid, "limit too high")
	})
}

func TestBurnRateAndRunway(t *testing.T) {
	backends(t, func(t *testing.T, f *fixture) {
		ctx := t.Context()
		must(t, f.store.UpsertGPUType(ctx, gpurent.GPUType{ID: "h100-80g-sxm", Name: "H100", PriceHourlyFen: 3473}), "gpu type")
		must(t, f.store.UpsertGPUType(ctx, gpurent.GPUType{ID: "rtx4090-24g", Name: "4090", PriceHourlyFen: 521}), "gpu type")
		_, _, err := f.svc.Credit(ctx, f.operator, f.alice.ID, 10_000, "test", "k")
		must(t, err, "credit")
		run := func(typeID string, n int, state gpurent.InstanceState) {
			in := &gpurent.Instance{AccountID: f.alice.ID, Name: fmt.Sprintf("i-%s-%d-%s", typeID, n, state),
				Image: "busybox", TypeID: typeID, GPUCount: n, State: state, Plan: gpurent.PlanHourly}
			must(t, f.store.CreateInstance(ctx, in), "create instance")
		}
		run("h100-80g-sxm", 2, gpurent.StateRunning)
		run("rtx4090-24g", 1, gpurent.StateRunning)
		run("h100-80g-sxm", 8, gpurent.StateStopped) // stopped: burns nothing
		pkg := &gpurent.Instance{AccountID: f.alice.ID, Name: "monthly", Image: "busybox", TypeID: "h100-80g-sxm",
			GPUCount: 8, State: gpurent.StateRunning, Plan: gpurent.PlanMonthly}
		must(t, f.store.CreateInstance(ctx, pkg), "create package instance") // prepaid: burns nothing
		storetest.SeedInstance(t, f.store, f.bob.ID, "bobs")
		v := f.view(t, f.alice)
		// 2 × 3473 + 521 = 7467 fen/h; 10,000 fen last 10000×3600/7467 s.
		if v.BurnFenPerHour != 7467 || v.RunningInstances != 2 || v.RunwaySeconds != 10_000*3600/7467 {
			t.Fatalf("burn %d/h over %d instances, runway %d s", v.BurnFenPerHour, v.RunningInstances, v.RunwaySeconds)
		}
		if r := f.view(t, f.bob).RunwaySeconds; r != ledger.NoLimit {
			t.Fatalf("bob runs nothing: runway %d, want no limit", r)
		}
		// Running with nothing to spend: no runway at all.
		in := &gpurent.Instance{AccountID: f.bob.ID, Name: "bob-run", Image: "busybox", TypeID: "rtx4090-24g",
			GPUCount: 1, State: gpurent.StateRunning, Plan: gpurent.PlanHourly}
		must(t, f.store.CreateInstance(ctx, in), "create instance")
		if r := f.view(t, f.bob).RunwaySeconds; r != 0 {
			t.Fatalf("bob has nothing but runs: runway %d, want 0", r)
		}
		_, _, err = f.svc.Credit(ctx, f.operator, f.bob.ID, 521, "test", "k")
		must(t, err, "credit bob")
		if r := f.view(t, f.bob).RunwaySeconds; r != 3600 {
			t.Fatalf("bob: one hour of credit, runway %d", r)
		}
	})
}

func TestVouchers(t *testing.T) {
	backends(t, func(t *testing.T, f *fixture) {
		ctx := t.Context()
		expires := f.clock.Now().Add(30 * 24 * time.Hour)
		promo, err := f.svc.CreateVoucher(ctx, f.operator, 5_000, gpurent.VoucherPromo, expires, 2)
		must(t, err, "create promo voucher")
		if wallet.NormalizeCode(promo.Code) != promo.Code || promo.MaxRedemptions != 2 {
			t.Fatalf("voucher %+v", promo)
		}
		cash, err := f.svc.CreateVoucher(ctx, f.operator, 20_000, gpurent.VoucherCash, expires, 1)
		must(t, err, "create cash voucher")
		if cash.Code == promo.Code {
			t.Fatal("two vouchers, one code")
		}
		_, err = f.svc.CreateVoucher(ctx, f.alice, 5_000, gpurent.VoucherCash, expires, 1)
		wantCode(t, err, gpurent.CodeForbidden, "customer creates a voucher")
		_, err = f.svc.CreateVoucher(ctx, f.operator, 5_000, gpurent.VoucherCash, f.clock.Now(), 1)
		wantCode(t, err, gpurent.CodeInvalid, "expired voucher")
		_, err = f.svc.CreateVoucher(ctx, f.operator, 5_000, "gift", expires, 1)
		wantCode(t, err, gpurent.CodeInvalid, "unknown kind")
		_, err = f.svc.CreateVoucher(ctx, f.operator, 5_000, gpurent.VoucherCash, expires, 0)
		wantCode(t, err, gpurent.CodeInvalid, "no redemptions")

		// Typed loosely: lower case, dashes, spaces.
		typed := " " + wallet.FormatCode(promo.Code) + " "
		r, err := f.svc.RedeemVoucher(ctx, f.alice, bytesLower(typed))
		must(t, err, "redeem promo")
		if r.Dup || r.Entry.Op != "grant" || r.Entry.NetFen != 5_000 || !r.Entry.ExpiresAt.Equal(expires) {
			t.Fatalf("promo redemption %+v entry %+v", r, r.Entry)
		}
		v := f.view(t, f.alice)
		if v.CreditFen != 5_000 || v.CashFen != 0 || len(v.Lots) != 1 || v.Lots[0].Kind != "promo" || !v.Lots[0].ExpiresAt.Equal(expires) {
			t.Fatalf("wallet after promo: %+v", v)
		}
		// Again: the first answer, nothing more credited.
		r2, err := f.svc.RedeemVoucher(ctx, f.alice, promo.Code)
		must(t, err, "redeem again")
		if !r2.Dup || r2.Entry.Seq != r.Entry.Seq || f.view(t, f.alice).SpendableFen != 5_000 {
			t.Fatalf("second redemption %+v", r2)
		}
		_, err = f.svc.RedeemVoucher(ctx, f.bob, promo.Code)
		must(t, err, "bob redeems")
		carol := storetest.SeedAccount(t, f.store, "carol@example.com")
		_, err = f.svc.RedeemVoucher(ctx, carol, promo.Code)
		wantCode(t, err, gpurent.CodeConflict, "past max redemptions")

		// A cash voucher tops cash up; it never expires once redeemed.
		r, err = f.svc.RedeemVoucher(ctx, f.alice, cash.Code)
		must(t, err, "redeem cash")
		if r.Entry.Op != "topup" {
			t.Fatalf("cash voucher posted %s", r.Entry.Op)
		}
		// Past the promo's expiry only cash is spendable.
		f.clock.Advance(31 * 24 * time.Hour)
		v = f.view(t, f.alice)
		if v.SpendableFen != 20_000 || v.CreditFen != 0 || len(v.Lots) != 0 {
			t.Fatalf("after expiry: %+v", v)
		}
		late, err := f.svc.CreateVoucher(ctx, f.operator, 1, gpurent.VoucherCash, f.clock.Now().Add(time.Hour), 5)
		must(t, err, "late voucher")
		f.clock.Advance(time.Hour)
		_, err = f.svc.RedeemVoucher(ctx, f.bob, late.Code)
		wantCode(t, err, gpurent.CodeInvalid, "redeem at expiry")
		_, err = f.svc.RedeemVoucher(ctx, f.bob, "0000-0000-0000")
		wantCode(t, err, gpurent.CodeNotFound, "unknown code")
		_, err = f.svc.RedeemVoucher(ctx, f.bob, "short")
		wantCode(t, err, gpurent.CodeInvalid, "malformed code")
	})
}

func bytesLower(s string) string { return string(bytes.ToLower([]byte(s))) }

// TestRedeemRace: many goroutines redeem one voucher for the same account
// and others at once. Each account gets it once, the voucher's limit holds,
// and the ledger has exactly one grant per winner.
func TestRedeemRace(t *testing.T) {
	backends(t, func(t *testing.T, f *fixture) {
		ctx := t.Context()
		v, err := f.svc.CreateVoucher(ctx, f.operator, 100, gpurent.VoucherCash, f.clock.Now().Add(time.Hour), 3)
		must(t, err, "voucher")
		accs := []*gpurent.Account{f.alice, f.bob}
		for i := range 3 {
			accs = append(accs, storetest.SeedAccount(t, f.store, fmt.Sprintf("r%d@example.com", i)))
		}
		var wg sync.WaitGroup
		errs := make([]error, 20)
		for i := range errs {
			wg.Go(func() { _, errs[i] = f.svc.RedeemVoucher(ctx, accs[i%len(accs)], v.Code) })
		}
		wg.Wait()
		paid := 0
		for i, a := range accs {
			if sp := f.view(t, a).SpendableFen; sp == 100 {
				paid++
			} else if sp != 0 {
				t.Fatalf("account %d got %d", i, sp)
			}
		}
		for _, err := range errs {
			if err != nil && !gpurent.IsCode(err, gpurent.CodeConflict) {
				t.Fatalf("redeem: %v", err)
			}
		}
		got, err := f.store.VoucherByCode(ctx, v.Code)
		must(t, err, "voucher")
		if paid != 3 || got.Redemptions != 3 {
			t.Fatalf("%d accounts paid, %d redemptions; want 3 and 3", paid, got.Redemptions)
		}
	})
}

func TestPayments(t *testing.T) {
	backends(t, func(t *testing.T, f *fixture) {
		ctx := t.Context()
		p, err := f.svc.StartPayment(ctx, f.alice, "fake", 50_000)
		must(t, err, "start payment")
		if p.State != gpurent.PaymentPending || p.PayURL == "" || p.PaymentID == "" {
			t.Fatalf("payment %+v", p)
		}
		if f.view(t, f.alice).SpendableFen != 0 {
			t.Fatal("credited before the confirmation")
		}
		_, err = f.svc.StartPayment(ctx, f.alice, "paypal", 50_000)
		wantCode(t, err, gpurent.CodeNotFound, "unknown provider")
		_, err = f.svc.StartPayment(ctx, f.alice, "fake", wallet.MinPaymentFen-1)
		wantCode(t, err, gpurent.CodeInvalid, "too small")

		// A forged callback is refused.
		body, sig := f.fake.SignedCallback(p.PaymentID, 50_000, true)
		_, err = f.svc.HandleCallback(ctx, "fake", body, "sha256=00")
		wantCode(t, err, gpurent.CodeUnauthorized, "bad signature")
		forged := wallet.NewFakeProvider("fake", "wrong-secret", "")
		fb, fs := forged.SignedCallback(p.PaymentID, 50_000, true)
		_, err = f.svc.HandleCallback(ctx, "fake", fb, fs)
		wantCode(t, err, gpurent.CodeUnauthorized, "other secret")
		// Another amount is a conflict and credits nothing.
		_, err = f.svc.ConfirmPayment(ctx, "fake", p.PaymentID, 49_999)
		wantCode(t, err, gpurent.CodeConflict, "other amount")

		// Racing confirmations: one top-up, every answer the same.
		var wg sync.WaitGroup
		res := make([]*wallet.PaymentResult, 10)
		errs := make([]error, 10)
		for i := range res {
			wg.Go(func() { res[i], errs[i] = f.svc.HandleCallback(ctx, "fake", body, sig) })
		}
		wg.Wait()
		firsts := 0
		for i := range res {
			must(t, errs[i], "confirm")
			if !res[i].Dup {
				firsts++
			}
			if res[i].Entry == nil || res[i].Entry.Seq != res[0].Entry.Seq || res[i].Payment.State != gpurent.PaymentConfirmed {
				t.Fatalf("answer %d: %+v", i, res[i])
			}
		}
		if firsts != 1 || f.view(t, f.alice).CashFen != 50_000 {
			t.Fatalf("%d first confirmations, cash %d", firsts, f.view(t, f.alice).CashFen)
		}
		_, err = f.svc.ConfirmPayment(ctx, "fake", p.PaymentID, 1)
		wantCode(t, err, gpurent.CodeConflict, "confirmed payment, other amount")
		_, err = f.svc.FailPayment(ctx, "fake", p.PaymentID, 50_000)
		wantCode(t, err, gpurent.CodeConflict, "fail a confirmed payment")
		_, err = f.svc.ConfirmPayment(ctx, "fake", "fake_nope", 1)
		wantCode(t, err, gpurent.CodeNotFound, "unknown payment")

		// A failed payment credits nothing and cannot be confirmed later.
		p2, err := f.svc.StartPayment(ctx, f.bob, "fake", 10_000)
		must(t, err, "second payment")
		fbody, fsig := f.fake.SignedCallback(p2.PaymentID, 10_000, false)
		r, err := f.svc.HandleCallback(ctx, "fake", fbody, fsig)
		must(t, err, "failure callback")
		if r.Payment.State != gpurent.PaymentFailed || r.Entry != nil {
			t.Fatalf("failed payment: %+v", r)
		}
		_, err = f.svc.ConfirmPayment(ctx, "fake", p2.PaymentID, 10_000)
		wantCode(t, err, gpurent.CodeConflict, "confirm a failed payment")
		if f.view(t, f.bob).SpendableFen != 0 {
			t.Fatal("failed payment credited")
		}
		_, err = f.svc.HandleCallback(ctx, "fake", []byte("{"), f.fake.Sign([]byte("{")))
		wantCode(t, err, gpurent.CodeInvalid, "malformed body")
	})
}

func TestNormalizeCode(t *testing.T) {
	for in, want := range map[string]string{
		"7kq2-m9xd-4rtb":  "7KQ2M9XD4RTB",
		" 7KQ2 M9XD 4RTB": "7KQ2M9XD4RTB",
		"OIL0-0000-0000":  "011000000000",
		"7KQ2-M9XD-4RT":   "",
		"7KQ2-M9XD-4RTBX": "",
		"7KQ2-M9XD-4RTU":  "",
		"７KQ2-M9XD-4RTB":  "",
		"":                "",
	} {
		if got := wallet.NormalizeCode(in); got != want {
			t.Errorf("NormalizeCode(%q) = %q, want %q", in, got, want)
		}
	}
	if got := wallet.FormatCode("7KQ2M9XD4RTB"); got != "7KQ2-M9XD-4RTB" {
		t.Errorf("FormatCode: %q", got)
	}
}
