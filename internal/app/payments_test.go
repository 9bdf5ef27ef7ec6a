package app

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/wallet"
)

// TestBankTransferTopUp: with `serve --bank-transfer-payee`, a customer's
// `gpurent wallet topup` answers a reference to quote; the operator, seeing
// the money arrive, confirms it; the wallet is credited exactly once.
func TestBankTransferTopUp(t *testing.T) {
	ctx := context.Background()
	s, err := StartServer(ctx, ServerConfig{DSN: filepath.Join(t.TempDir(), "gpurent.db"), Listen: "127.0.0.1:0",
		JoinToken: "join-bt", BcryptCost: 4, PollWait: time.Second,
		PaymentProviders: []wallet.PaymentProvider{wallet.NewBankTransferProvider("ICBC Chengdu, gpurent Ltd, 6222 1234")}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cust := newUser(t, s.URL)
	cust.signUp("bt@lab.example", "bt-password-12")
	if _, err := s.Auth.CreateAccount(ctx, "ops@bt.example", "Ops", "ops-password-12", gpurent.RoleOperator, 0); err != nil {
		t.Fatal(err)
	}
	ops := newUser(t, s.URL)
	if out, errOut, err := ops.run("ops-password-12\n", "login", "--email", "ops@bt.example", "--password-stdin"); err != nil {
		t.Fatalf("operator login: %v %s%s", err, out, errOut)
	}

	var p apiv1.Payment
	if err := json.Unmarshal([]byte(cust.must("wallet", "topup", "500", "-o", "json")), &p); err != nil {
		t.Fatal(err)
	}
	if p.Provider != "bank-transfer" || !strings.HasPrefix(p.PaymentID, "BT") || p.State != "pending" ||
		!strings.Contains(p.PayURL, "ICBC Chengdu") || !strings.Contains(p.PayURL, p.PaymentID) {
		t.Fatalf("payment %+v", p)
	}
	acc, err := s.Store.AccountByEmail(ctx, "bt@lab.example")
	if err != nil {
		t.Fatal(err)
	}
	cash := func() int64 {
		b, err := s.Store.LedgerBalances(ctx, acc.ID)
		if err != nil {
			t.Fatal(err)
		}
		return b.CashFen
	}
	if cash() != 0 {
		t.Fatal("credited before the transfer was confirmed")
	}
	if _, stderr, err := cust.run("", "payment", "bank-transfer", p.PaymentID, "500"); err == nil || !strings.Contains(err.Error()+stderr, "operator") {
		t.Errorf("a customer confirming their own transfer: %v %q", err, stderr)
	}
	if _, stderr, err := ops.run("", "payment", "bank-transfer", p.PaymentID, "499"); err == nil || !strings.Contains(err.Error()+stderr, "conflict") {
		t.Errorf("confirming another amount: %v %q", err, stderr)
	}
	if out := ops.must("payment", "bank-transfer", p.PaymentID, "500"); !strings.Contains(out, "confirmed") {
		t.Errorf("confirm: %q", out)
	}
	if out := ops.must("payment", "bank-transfer", p.PaymentID, "500"); !strings.Contains(out, "settled before") {
		t.Errorf("confirm again: %q", out)
	}
	if got := cash(); got != 50_000 {
		t.Errorf("cash %d, want 50,000 fen, credited once", got)
	}
	hist := cust.must("wallet", "history")
	if !strings.Contains(hist, p.PaymentID) {
		t.Errorf("the top-up is not in the history:\n%s", hist)
	}
	// Forged callbacks are refused: transfers have no gateway.
	if _, err := s.Wallet.HandleCallback(ctx, "bank-transfer", []byte(`{}`), "sha256=00"); !gpurent.IsCode(err, gpurent.CodeForbidden) {
		t.Errorf("a callback for a bank transfer: %v", err)
	}
}
