package auth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/auth"
	"github.com/gpurent/gpurent/internal/clocktest"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

func newService(t *testing.T) (*auth.Service, gpurent.Store, *clocktest.Clock) {
	t.Helper()
	st := storetest.SQLite(t)
	clk := clocktest.New(time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC))
	return auth.New(auth.Config{Store: st, Now: clk.Now, BcryptCost: bcrypt.MinCost}), st, clk
}

func wantCode(t *testing.T, err error, code gpurent.Code) {
	t.Helper()
	if got := gpurent.ErrorCode(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}

func TestRegisterLoginAuthenticateLogout(t *testing.T) {
	ctx := context.Background()
	svc, st, _ := newService(t)

	acc, err := svc.Register(ctx, "  Alice@Example.COM ", " Alice ", "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if acc.Email != "alice@example.com" || acc.Name != "Alice" || acc.Role != gpurent.RoleCustomer || acc.BalanceFen != 0 {
		t.Fatalf("account = %+v", acc)
	}
	if acc.PasswordHash == "" || strings.Contains(acc.PasswordHash, "correct horse") {
		t.Fatalf("password hash %q", acc.PasswordHash)
	}
	stored, err := st.AccountByID(ctx, acc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Email != "alice@example.com" {
		t.Fatalf("stored e-mail %q", stored.Email)
	}

	secret, tok, got, err := svc.Login(ctx, "ALICE@example.com", "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, auth.SecretPrefix) || len(secret) < 40 {
		t.Fatalf("secret %q", secret)
	}
	if got.ID != acc.ID || tok.AccountID != acc.ID || tok.Kind != gpurent.TokenSession || tok.ExpiresAt == nil {
		t.Fatalf("token %+v account %+v", tok, got)
	}
	if tok.Hash != auth.HashSecret(secret) || strings.Contains(tok.Hash, secret) {
		t.Fatalf("token hash %q is not the SHA-256 of the secret", tok.Hash)
	}
	// Only the hash is stored: the secret itself finds nothing.
	if _, err := st.TokenByHash(ctx, secret); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Fatalf("lookup by raw secret: %v", err)
	}

	who, err := svc.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	if who.ID != acc.ID {
		t.Fatalf("authenticated %s, want %s", who.ID, acc.ID)
	}

	if err := svc.Logout(ctx, secret); err != nil {
		t.Fatal(err)
	}
	_, err = svc.Authenticate(ctx, secret)
	wantCode(t, err, gpurent.CodeUnauthorized)
	wantCode(t, svc.Logout(ctx, secret), gpurent.CodeUnauthorized)
}

func TestRegisterValidation(t *testing.T) {
	ctx := context.Background()
	svc, _, _ := newService(t)
	cases := []struct {
		name, email, accName, password, wantInMsg string
	}{
		{"empty e-mail", "", "A", "password1", "required"},
		{"no at", "alice.example.com", "A", "password1", "not a valid address"},
		{"display name", "Alice <alice@example.com>", "A", "password1", "not a valid address"},
		{"no dot in domain", "alice@localhost", "A", "password1", "not a valid address"},
		{"too long e-mail", strings.Repeat("a", 250) + "@example.com", "A", "password1", "at most 254"},
		{"short password", "a@example.com", "A", "short", "at least 8"},
		{"73-byte password", "a@example.com", "A", strings.Repeat("p", 73), "at most 72 bytes"},
		{"72 two-byte runes", "a@example.com", "A", strings.Repeat("é", 37), "at most 72 bytes"},
		{"empty name", "a@example.com", "   ", "password1", "name is required"},
		{"long name", "a@example.com", strings.Repeat("名", 101), "password1", "at most 100"},
		{"control char", "a@example.com", "A\x07B", "password1", "control"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := svc.Register(ctx, tc.email, tc.accName, tc.password)
			wantCode(t, err, gpurent.CodeInvalid)
			if msg := gpurent.ErrorMessage(err); !strings.Contains(msg, tc.wantInMsg) {
				t.Fatalf("message %q lacks %q", msg, tc.wantInMsg)
			}
		})
	}
	// The limits themselves are accepted.
	if _, err := svc.Register(ctx, "edge@example.com", strings.Repeat("名", 100), strings.Repeat("p", 72)); err != nil {
		t.Fatalf("72-byte password, 100-rune name: %v", err)
	}
	if _, err := svc.Register(ctx, "edge2@example.com", "E", "12345678"); err != nil {
		t.Fatalf("8-byte password: %v", err)
	}
}

func TestRegisterDuplicateEmailIsConflict(t *testing.T) {
	ctx := context.Background()
	svc, _, _ := newService(t)
	if _, err := svc.Register(ctx, "bob@example.com", "Bob", "password1"); err != nil {
		t.Fatal(err)
	}
	_, err := svc.Register(ctx, "BOB@Example.com", "Bob again", "password2")
	wantCode(t, err, gpurent.CodeConflict)
	if !strings.Contains(gpurent.ErrorMessage(err), "already exists") {
		t.Fatalf("message %q", gpurent.ErrorMessage(err))
	}
}

func TestLoginFailuresLookAlike(t *testing.T) {
	ctx := context.Background()
	svc, _, _ := newService(t)
	if _, err := svc.Register(ctx, "carol@example.com", "Carol", "password1"); err != nil {
		t.Fatal(err)
	}
	var errs []error
	for _, c := range []struct{ email, password string }{
		{"carol@example.com", "password2"},              // wrong password
		{"nobody@example.com", "password1"},             // unknown e-mail
		{"not an address", "password1"},                 // malformed e-mail
		{"carol@example.com", ""},                       // empty password
		{"carol@example.com", strings.Repeat("p", 100)}, // over bcrypt's limit
	} {
		_, _, _, err := svc.Login(ctx, c.email, c.password)
		wantCode(t, err, gpurent.CodeUnauthorized)
		errs = append(errs, err)
	}
	for _, err := range errs[1:] {
		if gpurent.ErrorMessage(err) != gpurent.ErrorMessage(errs[0]) {
			t.Fatalf("messages differ: %q vs %q", gpurent.ErrorMessage(err), gpurent.ErrorMessage(errs[0]))
		}
	}
}

func TestSessionExpires(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t)
	clk := clocktest.New(time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC))
	svc := auth.New(auth.Config{Store: st, Now: clk.Now, BcryptCost: bcrypt.MinCost, SessionTTL: time.Hour})
	if _, err := svc.Register(ctx, "dave@example.com", "Dave", "password1"); err != nil {
		t.Fatal(err)
	}
	secret, tok, _, err := svc.Login(ctx, "dave@example.com", "password1")
	if err != nil {
		t.Fatal(err)
	}
	if want := clk.Now().Add(time.Hour); !tok.ExpiresAt.Equal(want) {
		t.Fatalf("expires %v, want %v", tok.ExpiresAt, want)
	}
	clk.Advance(59 * time.Minute)
	if _, err := svc.Authenticate(ctx, secret); err != nil {
		t.Fatalf("before expiry: %v", err)
	}
	clk.Advance(time.Minute)
	_, err = svc.Authenticate(ctx, secret)
	wantCode(t, err, gpurent.CodeUnauthorized)
}

func TestDefaultSessionTTL(t *testing.T) {
	ctx := context.Background()
	svc, _, clk := newService(t)
	if _, err := svc.Register(ctx, "erin@example.com", "Erin", "password1"); err != nil {
		t.Fatal(err)
	}
	_, tok, _, err := svc.Login(ctx, "erin@example.com", "password1")
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.ExpiresAt.Sub(clk.Now()); got != 30*24*time.Hour {
		t.Fatalf("session TTL %v, want 30 days", got)
	}
}

func TestAPITokens(t *testing.T) {
	ctx := context.Background()
	svc, _, clk := newService(t)
	acc, err := svc.Register(ctx, "frank@example.com", "Frank", "password1")
	if err != nil {
		t.Fatal(err)
	}
	secret, tok, err := svc.CreateAPIToken(ctx, acc, " ci runner ")
	if err != nil {
		t.Fatal(err)
	}
	if tok.Kind != gpurent.TokenAPI || tok.Name != "ci runner" || tok.ExpiresAt != nil || !strings.HasPrefix(secret, "gpr_") {
		t.Fatalf("token %+v secret %q", tok, secret)
	}
	other, _, err := svc.CreateAPIToken(ctx, acc, "second")
	if err != nil {
		t.Fatal(err)
	}
	if other == secret {
		t.Fatal("two tokens share a secret")
	}
	clk.Advance(10 * 365 * 24 * time.Hour)
	who, err := svc.Authenticate(ctx, secret)
	if err != nil {
		t.Fatalf("API token after ten years: %v", err)
	}
	if who.ID != acc.ID {
		t.Fatalf("authenticated %s", who.ID)
	}
	_, _, err = svc.CreateAPIToken(ctx, acc, "")
	wantCode(t, err, gpurent.CodeInvalid)

	// Logging out with one token leaves the other.
	if err := svc.Logout(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, other); err != nil {
		t.Fatalf("other token after logout: %v", err)
	}
}

func TestAuthenticateRejectsGarbage(t *testing.T) {
	ctx := context.Background()
	svc, _, _ := newService(t)
	for _, b := range []string{"", "gpr_", "abc", "gpr_doesnotexist", "Bearer gpr_x", "gpr_" + strings.Repeat("a", 1000)} {
		_, err := svc.Authenticate(ctx, b)
		wantCode(t, err, gpurent.CodeUnauthorized)
	}
}

func TestCreateAccountForSeeding(t *testing.T) {
	ctx := context.Background()
	svc, _, _ := newService(t)
	op, err := svc.CreateAccount(ctx, "ops@example.com", "Ops", "password1", gpurent.RoleOperator, 0)
	if err != nil {
		t.Fatal(err)
	}
	if op.Role != gpurent.RoleOperator {
		t.Fatalf("role %q", op.Role)
	}
	rich, err := svc.CreateAccount(ctx, "rich@example.com", "Rich", "password1", gpurent.RoleCustomer, 100_000_00)
	if err != nil {
		t.Fatal(err)
	}
	if rich.BalanceFen != 100_000_00 {
		t.Fatalf("balance %d", rich.BalanceFen)
	}
	_, err = svc.CreateAccount(ctx, "x@example.com", "X", "password1", gpurent.Role("admin"), 0)
	wantCode(t, err, gpurent.CodeInvalid)
	_, err = svc.CreateAccount(ctx, "y@example.com", "Y", "password1", gpurent.RoleCustomer, -1)
	wantCode(t, err, gpurent.CodeInvalid)
}

func TestNormalizeEmail(t *testing.T) {
	for in, want := range map[string]string{
		"A@B.CO":                "a@b.co",
		" first.last@mail.cn ":  "first.last@mail.cn",
		"x+tag@sub.example.org": "x+tag@sub.example.org",
	} {
		got, err := auth.NormalizeEmail(in)
		if err != nil || got != want {
			t.Errorf("NormalizeEmail(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
