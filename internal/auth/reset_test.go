package auth_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/auth"
)

// TestPasswordReset: a reset link works once, within the hour, only with a
// valid new password; it ends every session but keeps API tokens, and its
// secret is never a bearer credential.
func TestPasswordReset(t *testing.T) {
	ctx := context.Background()
	svc, _, clk := newService(t)
	acc, err := svc.Register(ctx, "reset@example.com", "R", "old-password")
	if err != nil {
		t.Fatal(err)
	}
	session, _, _, err := svc.Login(ctx, "reset@example.com", "old-password")
	if err != nil {
		t.Fatal(err)
	}
	api, _, err := svc.CreateAPIToken(ctx, acc, "ci")
	if err != nil {
		t.Fatal(err)
	}

	if s, err := svc.RequestPasswordReset(ctx, "nobody@example.com"); err != nil || s != "" {
		t.Fatalf("unknown e-mail: %q, %v; want nothing to send and no error", s, err)
	}
	_, err = svc.RequestPasswordReset(ctx, "not an address")
	wantCode(t, err, gpurent.CodeInvalid)

	first, err := svc.RequestPasswordReset(ctx, "RESET@example.com")
	if err != nil || !strings.HasPrefix(first, auth.ResetPrefix) {
		t.Fatalf("reset secret %q, %v", first, err)
	}
	secret, err := svc.RequestPasswordReset(ctx, "reset@example.com")
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, svc.ResetPassword(ctx, first, "whatever-new"), gpurent.CodeUnauthorized) // the newer link replaced it
	_, err = svc.Authenticate(ctx, secret)
	wantCode(t, err, gpurent.CodeUnauthorized) // a reset secret is not a bearer
	wantCode(t, svc.Logout(ctx, secret), gpurent.CodeUnauthorized)
	if email, err := svc.CheckReset(ctx, secret); err != nil || email != "reset@example.com" {
		t.Fatalf("check reset: %q, %v", email, err)
	}
	_, err = svc.CheckReset(ctx, session)
	wantCode(t, err, gpurent.CodeUnauthorized) // a session secret is not a reset secret

	// A bad new password leaves the link usable.
	wantCode(t, svc.ResetPassword(ctx, secret, "short"), gpurent.CodeInvalid)
	if err := svc.ResetPassword(ctx, secret, "new-password-1"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, svc.ResetPassword(ctx, secret, "new-password-2"), gpurent.CodeUnauthorized) // used
	_, _, _, err = svc.Login(ctx, "reset@example.com", "old-password")
	wantCode(t, err, gpurent.CodeUnauthorized)
	if _, _, _, err := svc.Login(ctx, "reset@example.com", "new-password-1"); err != nil {
		t.Fatalf("login with the new password: %v", err)
	}
	_, err = svc.Authenticate(ctx, session)
	wantCode(t, err, gpurent.CodeUnauthorized) // the old session ended
	if _, err := svc.Authenticate(ctx, api); err != nil {
		t.Fatalf("the API token should survive a reset: %v", err)
	}

	// A link expires at the hour.
	late, err := svc.RequestPasswordReset(ctx, "reset@example.com")
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(auth.ResetTTL)
	wantCode(t, svc.ResetPassword(ctx, late, "new-password-3"), gpurent.CodeUnauthorized)
	_, err = svc.CheckReset(ctx, late)
	wantCode(t, err, gpurent.CodeUnauthorized)
}

// TestPasswordResetOnce: the same link used twice at once resets once.
func TestPasswordResetOnce(t *testing.T) {
	ctx := context.Background()
	svc, _, _ := newService(t)
	if _, err := svc.Register(ctx, "race@example.com", "R", "old-password"); err != nil {
		t.Fatal(err)
	}
	secret, err := svc.RequestPasswordReset(ctx, "race@example.com")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = svc.ResetPassword(ctx, secret, "password-"+strings.Repeat("x", i+1)+"-long")
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !gpurent.IsCode(err, gpurent.CodeUnauthorized):
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d resets succeeded with one link, want 1 (%v)", ok, errs)
	}
}

// TestChangePassword: the current password is checked, every session ends,
// the new password signs in.
func TestChangePassword(t *testing.T) {
	ctx := context.Background()
	svc, _, _ := newService(t)
	acc, err := svc.Register(ctx, "change@example.com", "C", "old-password")
	if err != nil {
		t.Fatal(err)
	}
	session, _, _, err := svc.Login(ctx, "change@example.com", "old-password")
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, svc.ChangePassword(ctx, acc, "wrong-password", "new-password"), gpurent.CodeUnauthorized)
	wantCode(t, svc.ChangePassword(ctx, acc, strings.Repeat("x", 100), "new-password"), gpurent.CodeUnauthorized)
	wantCode(t, svc.ChangePassword(ctx, acc, "old-password", "short"), gpurent.CodeInvalid)
	wantCode(t, svc.ChangePassword(ctx, nil, "old-password", "new-password"), gpurent.CodeUnauthorized)
	if _, err := svc.Authenticate(ctx, session); err != nil {
		t.Fatalf("a refused change ended the session: %v", err)
	}
	if err := svc.ChangePassword(ctx, acc, "old-password", "new-password"); err != nil {
		t.Fatal(err)
	}
	_, err = svc.Authenticate(ctx, session)
	wantCode(t, err, gpurent.CodeUnauthorized)
	_, _, _, err = svc.Login(ctx, "change@example.com", "old-password")
	wantCode(t, err, gpurent.CodeUnauthorized)
	if _, _, _, err := svc.Login(ctx, "change@example.com", "new-password"); err != nil {
		t.Fatal(err)
	}
}

// TestAPITokenListAndRevoke: an account lists and revokes its own API
// tokens only; sessions are not listed.
func TestAPITokenListAndRevoke(t *testing.T) {
	ctx := context.Background()
	svc, _, _ := newService(t)
	a, err := svc.Register(ctx, "a@example.com", "A", "password-a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := svc.Register(ctx, "b@example.com", "B", "password-b")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := svc.Login(ctx, "a@example.com", "password-a"); err != nil {
		t.Fatal(err)
	}
	secret, tok, err := svc.CreateAPIToken(ctx, a, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	_, btok, err := svc.CreateAPIToken(ctx, b, "b's")
	if err != nil {
		t.Fatal(err)
	}
	list, err := svc.ListAPITokens(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != tok.ID || list[0].Name != "laptop" || list[0].Kind != gpurent.TokenAPI {
		t.Fatalf("a's tokens: %+v", list)
	}
	wantCode(t, svc.RevokeAPIToken(ctx, a, btok.ID), gpurent.CodeNotFound)
	if err := svc.RevokeAPIToken(ctx, a, tok.ID); err != nil {
		t.Fatal(err)
	}
	_, err = svc.Authenticate(ctx, secret)
	wantCode(t, err, gpurent.CodeUnauthorized)
	if list, _ := svc.ListAPITokens(ctx, b); len(list) != 1 {
		t.Fatalf("b's tokens after a's revoke: %+v", list)
	}
	_, err = svc.ListAPITokens(ctx, nil)
	wantCode(t, err, gpurent.CodeUnauthorized)
}
