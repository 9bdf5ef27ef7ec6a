package auth

import (
	"context"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
)

// E-mail verification.
const (
	// EmailVerifyTTL is how long a verification link works.
	EmailVerifyTTL = 48 * time.Hour
	// EmailVerifyPrefix starts every verification secret; like a reset
	// secret it is never accepted as a bearer credential.
	EmailVerifyPrefix = "gpverify_"
)

func errBadVerify() error {
	return gpurent.Errorf(gpurent.CodeUnauthorized, "this e-mail verification link is unknown, used, expired or another account's: ask for a new one")
}

// RequestEmailVerification issues a verification secret for the signed-in
// account's current address, valid for EmailVerifyTTL, to be mailed to
// that address; only its hash is stored, and earlier ones stop working.
// An address verified already answers "" (nothing to send).
func (s *Service) RequestEmailVerification(ctx context.Context, acc *gpurent.Account) (string, error) {
	if acc == nil {
		return "", errBadToken()
	}
	if ok, err := s.EmailVerified(ctx, acc); err != nil || ok {
		return "", err
	}
	cs, err := credentials(s.store)
	if err != nil {
		return "", err
	}
	if _, err := cs.DeleteAccountTokens(ctx, acc.ID, gpurent.TokenEmailVerify); err != nil {
		return "", err
	}
	secret := EmailVerifyPrefix + gpurent.RandomSecret(secretBytes)
	now := s.now().UTC()
	expires := now.Add(EmailVerifyTTL)
	// The token's name is the address it proves: a link mailed to an old
	// address proves nothing once the account's address changed.
	tok := &gpurent.Token{ID: gpurent.NewID(gpurent.PrefixToken), AccountID: acc.ID, Kind: gpurent.TokenEmailVerify,
		Name: acc.Email, Hash: HashSecret(secret), CreatedAt: now, ExpiresAt: &expires}
	if err := s.store.CreateToken(ctx, tok); err != nil {
		return "", err
	}
	return secret, nil
}

// ConfirmEmail proves the signed-in account's address with a secret mailed
// to it. The secret must be a live verification token of this account for
// its current address; it is used up in the transaction that records the
// address as verified, so a link works once.
func (s *Service) ConfirmEmail(ctx context.Context, acc *gpurent.Account, secret string) error {
	if acc == nil {
		return errBadToken()
	}
	if !strings.HasPrefix(secret, EmailVerifyPrefix) || len(secret) > maxBearerBytes {
		return errBadVerify()
	}
	tok, err := s.store.TokenByHash(ctx, HashSecret(secret))
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		return errBadVerify()
	}
	if err != nil {
		return err
	}
	if tok.Kind != gpurent.TokenEmailVerify || s.expired(tok) || tok.AccountID != acc.ID || tok.Name != acc.Email {
		return errBadVerify()
	}
	return s.store.InTx(ctx, func(q gpurent.Queries) error {
		if err := q.DeleteToken(ctx, tok.ID); err != nil {
			if gpurent.IsCode(err, gpurent.CodeNotFound) {
				return errBadVerify() // used meanwhile
			}
			return err
		}
		return q.SetEmailVerified(ctx, acc.ID, acc.Email, s.now().UTC())
	})
}

// EmailVerified reports whether the account proved its current address.
func (s *Service) EmailVerified(ctx context.Context, acc *gpurent.Account) (bool, error) {
	if acc == nil {
		return false, nil
	}
	at, err := s.store.EmailVerifiedAt(ctx, acc.ID, acc.Email)
	return at != nil, err
}

// MarkEmailVerified records the account's current address as verified
// without a link: for accounts the operator vouches for (the demo's).
func (s *Service) MarkEmailVerified(ctx context.Context, acc *gpurent.Account) error {
	return s.store.SetEmailVerified(ctx, acc.ID, acc.Email, s.now().UTC())
}
