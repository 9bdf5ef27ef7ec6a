package auth_test

import (
	"context"
	"testing"

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
