package auth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/auth"
)

// TestEmailVerification: a verification link works once, within its time,
// only for the account it was sent to and only for the address it was
// sent to; a newer link replaces an older one; the secret is never a
// bearer credential.
func TestEmailVerification(t *testing.T) {
	ctx := context.Background()
	svc, st, clk := newService(t)
	acc, err := svc.Register(ctx, "li@std.uestc.edu.cn", "Li", "li-password-1")
	if err != nil {
		t.Fatal(err)
	}
	other, err := svc.Register(ctx, "wang@example.com", "Wang", "wang-password-1")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := svc.EmailVerified(ctx, acc); err != nil || ok {
		t.Fatalf("a new address verified: %v %v", ok, err)
	}
	old, err := svc.RequestEmailVerification(ctx, acc)
	if err != nil || !strings.HasPrefix(old, auth.EmailVerifyPrefix) {
		t.Fatalf("secret %q %v", old, err)
	}
	secret, err := svc.RequestEmailVerification(ctx, acc) // the resend button
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, svc.ConfirmEmail(ctx, acc, old), gpurent.CodeUnauthorized) // replaced
	if _, err := svc.Authenticate(ctx, secret); !gpurent.IsCode(err, gpurent.CodeUnauthorized) {
		t.Fatalf("a verification secret as a bearer: %v", err)
	}
	// Another account cannot use it (and it stays usable for its owner).
	wantCode(t, svc.ConfirmEmail(ctx, other, secret), gpurent.CodeUnauthorized)
	if ok, _ := svc.EmailVerified(ctx, other); ok {
		t.Fatal("the wrong account got verified")
	}
	wantCode(t, svc.ConfirmEmail(ctx, acc, "gpverify_nonsense"), gpurent.CodeUnauthorized)
	if err := svc.ConfirmEmail(ctx, acc, secret); err != nil {
		t.Fatal(err)
	}
	if ok, err := svc.EmailVerified(ctx, acc); err != nil || !ok {
		t.Fatalf("after confirming: %v %v", ok, err)
	}
	wantCode(t, svc.ConfirmEmail(ctx, acc, secret), gpurent.CodeUnauthorized) // single use
	if s, err := svc.RequestEmailVerification(ctx, acc); err != nil || s != "" {
		t.Fatalf("a verified address asked again: %q %v", s, err)
	}

	// Expiry.
	late, err := svc.RequestEmailVerification(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(auth.EmailVerifyTTL + time.Second)
	wantCode(t, svc.ConfirmEmail(ctx, other, late), gpurent.CodeUnauthorized)

	// A link proves the address it was mailed to, not a later one.
	sent, err := svc.RequestEmailVerification(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	moved := *other
	moved.Email = "wang@std.uestc.edu.cn"
	wantCode(t, svc.ConfirmEmail(ctx, &moved, sent), gpurent.CodeUnauthorized)
	if at, err := st.EmailVerifiedAt(ctx, other.ID, "wang@std.uestc.edu.cn"); err != nil || at != nil {
		t.Fatalf("the new address verified by the old link: %v %v", at, err)
	}
}
