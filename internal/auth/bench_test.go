package auth_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/auth"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// BenchmarkLoginFailure compares a wrong password with an unknown e-mail at
// the production bcrypt cost: the two should cost about the same, so that
// timing does not tell which e-mails have accounts.
func BenchmarkLoginFailure(b *testing.B) {
	ctx := context.Background()
	svc := auth.New(auth.Config{Store: storetest.SQLite(b)})
	if _, err := svc.Register(ctx, "known@example.com", "Known", "password1"); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, email string }{
		{"wrong-password", "known@example.com"},
		{"unknown-email", "unknown@example.com"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, _, _, err := svc.Login(ctx, c.email, "password2"); err == nil {
					b.Fatal("login succeeded")
				}
			}
		})
	}
}

// BenchmarkBearerLookup measures what every authenticated request costs the
// database, on both stores, from many goroutines as the API serves them:
// "authenticate" is the service's path; "joined" is its one store read;
// "two-reads" is TokenByHash then AccountByID, the path it replaced, kept
// here so that one run compares the two under the same load.
func BenchmarkBearerLookup(b *testing.B) {
	for _, backend := range []struct {
		name string
		open func(testing.TB) gpurent.Store
	}{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}} {
		b.Run(backend.name, func(b *testing.B) {
			ctx := context.Background()
			st := backend.open(b)
			svc := auth.New(auth.Config{Store: st, BcryptCost: bcrypt.MinCost})
			const accounts = 32
			secrets := make([]string, accounts)
			for i := range secrets {
				acc, err := svc.Register(ctx, fmt.Sprintf("user%d@example.com", i), "User", "password1")
				if err != nil {
					b.Fatal(err)
				}
				if secrets[i], _, err = svc.CreateAPIToken(ctx, acc, "bench"); err != nil {
					b.Fatal(err)
				}
			}
			run := func(b *testing.B, lookup func(secret string) error) {
				var next atomic.Int64
				b.SetParallelism(16)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					secret := secrets[int(next.Add(1)-1)%accounts]
					for pb.Next() {
						if err := lookup(secret); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			b.Run("authenticate", func(b *testing.B) {
				run(b, func(secret string) error {
					_, err := svc.Authenticate(ctx, secret)
					return err
				})
			})
			b.Run("joined", func(b *testing.B) {
				run(b, func(secret string) error {
					_, _, err := st.AccountByTokenHash(ctx, auth.HashSecret(secret))
					return err
				})
			})
			b.Run("two-reads", func(b *testing.B) {
				run(b, func(secret string) error {
					tok, err := st.TokenByHash(ctx, auth.HashSecret(secret))
					if err != nil {
						return err
					}
					_, err = st.AccountByID(ctx, tok.AccountID)
					return err
				})
			})
		})
	}
}
