package app

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/client"
)

// TestDemoSeedCreditsThroughTheWallet: the demo customer's starting balance
// is an operator credit in the ledger, given once however often the demo
// restarts, and /me shows it.
func TestDemoSeedCreditsThroughTheWallet(t *testing.T) {
	ctx := context.Background()
	cfg := ServerConfig{DSN: filepath.Join(t.TempDir(), "gpurent.db"), Listen: "127.0.0.1:0", BcryptCost: 4}
	for range 2 { // a restart seeds again
		s, err := StartServer(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := seedDemoAccounts(ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := seedDemoAccounts(ctx, s); err != nil {
			t.Fatal(err)
		}
		cust, err := s.Store.AccountByEmail(ctx, DemoCustomerEmail)
		if err != nil {
			t.Fatal(err)
		}
		if cust.BalanceFen != 0 {
			t.Errorf("the legacy balance column was written: %d", cust.BalanceFen)
		}
		txs, err := s.Store.LedgerTxs(ctx, cust.ID, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(txs) != 1 || txs[0].AmountFen != DemoCustomerBalanceFen || txs[0].Op != "topup" {
			t.Fatalf("demo customer's ledger: %+v", txs)
		}
		op, err := s.Store.AccountByEmail(ctx, DemoOperatorEmail)
		if err != nil || op.Role != gpurent.RoleOperator || txs[0].Actor != op.ID {
			t.Fatalf("operator %+v (%v), credit by %q", op, err, txs[0].Actor)
		}
		c := client.New(s.URL, "", nil)
		lr, err := c.Login(ctx, apiv1.LoginRequest{Email: DemoCustomerEmail, Password: DemoCustomerPassword})
		if err != nil {
			t.Fatal(err)
		}
		me, err := client.New(s.URL, lr.Token, nil).Me(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if me.BalanceFen != DemoCustomerBalanceFen || lr.Account.BalanceFen != DemoCustomerBalanceFen {
			t.Fatalf("/me balance %d, login %d; want %d", me.BalanceFen, lr.Account.BalanceFen, DemoCustomerBalanceFen)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
