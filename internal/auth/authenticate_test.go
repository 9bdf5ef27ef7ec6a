package auth_test

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/auth"
	"github.com/gpurent/gpurent/internal/clocktest"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// countingStore is a real store that counts the token and account reads
// made through it.
type countingStore struct {
	gpurent.Store
	tokenByHash, accountByID, accountByTokenHash atomic.Int64
}

func (c *countingStore) TokenByHash(ctx context.Context, hash string) (*gpurent.Token, error) {
	c.tokenByHash.Add(1)
	return c.Store.TokenByHash(ctx, hash)
}

func (c *countingStore) AccountByID(ctx context.Context, id string) (*gpurent.Account, error) {
	c.accountByID.Add(1)
	return c.Store.AccountByID(ctx, id)
}

func (c *countingStore) AccountByTokenHash(ctx context.Context, hash string) (*gpurent.Account, *gpurent.Token, error) {
	c.accountByTokenHash.Add(1)
	return c.Store.AccountByTokenHash(ctx, hash)
}

// TestAuthenticateBackends runs the bearer path against both real stores:
// the account comes back whole, the session is refused from the instant it
// expires, and an API token never expires.
func TestAuthenticateBackends(t *testing.T) {
	for _, backend := range []struct {
		name string
		open func(testing.TB) gpurent.Store
	}{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}} {
		t.Run(backend.name, func(t *testing.T) {
			ctx := context.Background()
			st := backend.open(t)
			clk := clocktest.New(time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC))
			svc := auth.New(auth.Config{Store: st, Now: clk.Now, BcryptCost: bcrypt.MinCost, SessionTTL: time.Hour})
			acc, err := svc.CreateAccount(ctx, "gina@example.com", "Gina", "password1", gpurent.RoleOperator, 12_345)
			if err != nil {
				t.Fatal(err)
			}
			session, _, _, err := svc.Login(ctx, "gina@example.com", "password1")
			if err != nil {
				t.Fatal(err)
			}
			api, _, err := svc.CreateAPIToken(ctx, acc, "ci")
			if err != nil {
				t.Fatal(err)
			}
			stored, err := st.AccountByID(ctx, acc.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, secret := range []string{session, api} {
				who, err := svc.Authenticate(ctx, secret)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(who, stored) {
					t.Fatalf("authenticated account\n got  %+v\n want %+v", who, stored)
				}
			}

			clk.Advance(time.Hour - time.Microsecond)
			if _, err := svc.Authenticate(ctx, session); err != nil {
				t.Fatalf("a microsecond before expiry: %v", err)
			}
			clk.Advance(time.Microsecond)
			_, err = svc.Authenticate(ctx, session)
			wantCode(t, err, gpurent.CodeUnauthorized)
			if _, err := svc.Authenticate(ctx, api); err != nil {
				t.Fatalf("API token after the session expired: %v", err)
			}

			if err := svc.Logout(ctx, api); err != nil {
				t.Fatal(err)
			}
			_, err = svc.Authenticate(ctx, api)
			wantCode(t, err, gpurent.CodeUnauthorized)
		})
	}
}

// TestAuthenticateIsOneRead guards the hot path: every authenticated API
// request reads the token and its account in one store call, and a
// malformed bearer reaches no store at all.
func TestAuthenticateIsOneRead(t *testing.T) {
	ctx := context.Background()
	st := &countingStore{Store: storetest.SQLite(t)}
	clk := clocktest.New(time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC))
	svc := auth.New(auth.Config{Store: st, Now: clk.Now, BcryptCost: bcrypt.MinCost, SessionTTL: time.Hour})
	if _, err := svc.Register(ctx, "hank@example.com", "Hank", "password1"); err != nil {
		t.Fatal(err)
	}
	secret, _, _, err := svc.Login(ctx, "hank@example.com", "password1")
	if err != nil {
		t.Fatal(err)
	}
	reads := func() [3]int64 {
		return [3]int64{st.tokenByHash.Load(), st.accountByID.Load(), st.accountByTokenHash.Load()}
	}
	start := reads()
	for range 3 {
		if _, err := svc.Authenticate(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	_, err = svc.Authenticate(ctx, "gpr_unknown")
	wantCode(t, err, gpurent.CodeUnauthorized)
	clk.Advance(time.Hour)
	_, err = svc.Authenticate(ctx, secret)
	wantCode(t, err, gpurent.CodeUnauthorized)
	_, err = svc.Authenticate(ctx, "not-a-secret")
	wantCode(t, err, gpurent.CodeUnauthorized)
	got, want := reads(), [3]int64{start[0], start[1], start[2] + 5}
	if got != want {
		t.Fatalf("reads (TokenByHash, AccountByID, AccountByTokenHash) = %v, want %v: five well-formed bearers, one joined read each", got, want)
	}
}
