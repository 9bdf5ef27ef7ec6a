package storetest

import (
	"testing"

	"github.com/gpurent/gpurent"
)

// testCredentials: an account's tokens listed by kind, deleted by kind
// without touching another account's, and its password hash replaced.
func testCredentials(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	a := SeedAccount(t, s, "cred-a@example.com")
	b := SeedAccount(t, s, "cred-b@example.com")
	mk := func(acc *gpurent.Account, kind gpurent.TokenKind, hash string, n int) *gpurent.Token {
		tok := &gpurent.Token{AccountID: acc.ID, Kind: kind, Name: hash, Hash: hash, CreatedAt: at(n)}
		must(t, s.CreateToken(ctx, tok), "create token "+hash)
		return tok
	}
	api1 := mk(a, gpurent.TokenAPI, "a-api-1", 1)
	mk(a, gpurent.TokenSession, "a-session", 2)
	api2 := mk(a, gpurent.TokenAPI, "a-api-2", 3)
	mk(a, gpurent.TokenReset, "a-reset", 4)
	mk(b, gpurent.TokenAPI, "b-api", 5)
	mk(b, gpurent.TokenSession, "b-session", 6)

	apis, err := s.ListTokens(ctx, a.ID, gpurent.TokenAPI)
	must(t, err, "list api tokens")
	same(t, "a's API tokens, oldest first", apis, []gpurent.Token{*api1, *api2})
	all, err := s.ListTokens(ctx, a.ID)
	must(t, err, "list all tokens")
	if len(all) != 4 {
		t.Fatalf("a has %d tokens, want 4: %+v", len(all), all)
	}
	none, err := s.ListTokens(ctx, "acc-missing")
	must(t, err, "list tokens of nobody")
	if len(none) != 0 {
		t.Fatalf("an unknown account has tokens: %+v", none)
	}

	_, err = s.DeleteAccountTokens(ctx, a.ID)
	wantCode(t, err, gpurent.CodeInvalid, "delete without kinds")
	n, err := s.DeleteAccountTokens(ctx, a.ID, gpurent.TokenSession, gpurent.TokenReset)
	must(t, err, "delete a's sessions and resets")
	if n != 2 {
		t.Fatalf("deleted %d tokens, want 2", n)
	}
	all, err = s.ListTokens(ctx, a.ID)
	must(t, err, "list after delete")
	same(t, "a keeps its API tokens", all, []gpurent.Token{*api1, *api2})
	bs, err := s.ListTokens(ctx, b.ID)
	must(t, err, "list b")
	if len(bs) != 2 {
		t.Fatalf("deleting a's tokens touched b's: %+v", bs)
	}

	must(t, s.SetPasswordHash(ctx, a.ID, "new-hash"), "set password hash")
	got, err := s.AccountByID(ctx, a.ID)
	must(t, err, "read a")
	if got.PasswordHash != "new-hash" {
		t.Fatalf("password hash %q, want new-hash", got.PasswordHash)
	}
	if other, _ := s.AccountByID(ctx, b.ID); other.PasswordHash == "new-hash" {
		t.Fatal("setting a's hash set b's")
	}
	wantCode(t, s.SetPasswordHash(ctx, "acc-missing", "h"), gpurent.CodeNotFound, "unknown account")
	wantCode(t, s.SetPasswordHash(ctx, a.ID, ""), gpurent.CodeInvalid, "empty hash")
}
