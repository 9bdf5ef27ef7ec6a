package auth_test

import (
	"context"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/auth"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

func TestAccountsOperatorsOnly(t *testing.T) {
	st := storetest.SQLite(t)
	a := auth.New(auth.Config{Store: st, BcryptCost: 4})
	ctx := context.Background()
	cust, err := a.CreateAccount(ctx, "c@lab.example", "C", "password-123", gpurent.RoleCustomer, 0)
	if err != nil {
		t.Fatal(err)
	}
	op, err := a.CreateAccount(ctx, "o@lab.example", "O", "password-123", gpurent.RoleOperator, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Accounts(ctx, cust); !gpurent.IsCode(err, gpurent.CodeForbidden) {
		t.Fatalf("a customer listed the accounts: %v", err)
	}
	if _, err := a.Accounts(ctx, nil); !gpurent.IsCode(err, gpurent.CodeForbidden) {
		t.Fatalf("nobody listed the accounts: %v", err)
	}
	list, err := a.Accounts(ctx, op)
	if err != nil || len(list) != 2 {
		t.Fatalf("accounts: %v %d", err, len(list))
	}
}
