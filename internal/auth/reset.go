package auth

import (
	"context"
	"errors"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gpurent/gpurent"
)

// Password changes and resets.
const (
	// ResetTTL is how long a password-reset link works.
	ResetTTL = time.Hour
	// ResetPrefix starts every reset secret. It is not SecretPrefix, so a
	// reset secret is never accepted as a bearer credential: Authenticate
	// and Logout refuse it before they hash it.
	ResetPrefix = "gpreset_"
)

// credentialStore is what password changes and token lists need of the
// store beyond the reads and writes every other method uses: an account's
// tokens listed and deleted by kind, and its password hash replaced.
type credentialStore interface {
	ListTokens(ctx context.Context, accountID string, kinds ...gpurent.TokenKind) ([]gpurent.Token, error)
	DeleteAccountTokens(ctx context.Context, accountID string, kinds ...gpurent.TokenKind) (int, error)
	SetPasswordHash(ctx context.Context, accountID, hash string) error
}

// credentials answers q as a credentialStore, or unavailable when the
// store cannot do it.
func credentials(q any) (credentialStore, error) {
	c, ok := q.(credentialStore)
	if !ok {
		return nil, gpurent.Errorf(gpurent.CodeUnavailable,
			"this server's store cannot change passwords or list tokens (it lacks ListTokens, DeleteAccountTokens and SetPasswordHash)")
	}
	return c, nil
}

// errBadReset is the one answer to an unusable reset secret.
func errBadReset() error {
	return gpurent.Errorf(gpurent.CodeUnauthorized, "this password-reset link is unknown, used or expired: ask for a new one")
}

// RequestPasswordReset issues a password-reset secret for the account with
// this e-mail, valid for ResetTTL; only its hash is stored, and any earlier
// reset secret of the account stops working. It answers "" and no error
// when no account has the address, so that the caller sends nothing and
// says the same either way. A malformed address is invalid.
func (s *Service) RequestPasswordReset(ctx context.Context, email string) (string, error) {
	addr, err := NormalizeEmail(email)
	if err != nil {
		return "", err
	}
	cs, err := credentials(s.store)
	if err != nil {
		return "", err
	}
	acc, err := s.store.AccountByEmail(ctx, addr)
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if _, err := cs.DeleteAccountTokens(ctx, acc.ID, gpurent.TokenReset); err != nil {
		return "", err
	}
	secret := ResetPrefix + gpurent.RandomSecret(secretBytes)
	expires := s.now().UTC().Add(ResetTTL)
	tok := &gpurent.Token{ID: gpurent.NewID(gpurent.PrefixToken), AccountID: acc.ID, Kind: gpurent.TokenReset,
		Name: "password reset", Hash: HashSecret(secret), CreatedAt: s.now().UTC(), ExpiresAt: &expires}
	if err := s.store.CreateToken(ctx, tok); err != nil {
		return "", err
	}
	return secret, nil
}

// CheckReset reports whether secret is a live reset secret (the reset page
// asks before it shows its form), answering the account's e-mail.
func (s *Service) CheckReset(ctx context.Context, secret string) (string, error) {
	tok, err := s.resetToken(ctx, secret)
	if err != nil {
		return "", err
	}
	acc, err := s.store.AccountByID(ctx, tok.AccountID)
	if err != nil {
		if gpurent.IsCode(err, gpurent.CodeNotFound) {
			return "", errBadReset()
		}
		return "", err
	}
	return acc.Email, nil
}

// ResetPassword sets a new password with a reset secret: the secret must be
// a live reset token's. It is used up, and every session and reset token of
// the account is deleted with the change (API tokens stay), in one
// transaction, so a link works once even when used twice at the same time.
func (s *Service) ResetPassword(ctx context.Context, secret, newPassword string) error {
	tok, err := s.resetToken(ctx, secret)
	if err != nil {
		return err
	}
	if err := ValidatePassword(newPassword); err != nil {
		return err
	}
	hash, err := s.hashPassword(newPassword)
	if err != nil {
		return err
	}
	return s.store.InTx(ctx, func(q gpurent.Queries) error {
		if err := q.DeleteToken(ctx, tok.ID); err != nil {
			if gpurent.IsCode(err, gpurent.CodeNotFound) {
				return errBadReset() // used meanwhile
			}
			return err
		}
		return replacePassword(ctx, q, tok.AccountID, hash)
	})
}

// ChangePassword replaces the signed-in account's password after checking
// the current one (a wrong one is unauthorized). Every session of the
// account ends with it, this one too: the caller signs in again with the
// new password. API tokens stay.
func (s *Service) ChangePassword(ctx context.Context, acc *gpurent.Account, current, newPassword string) error {
	if acc == nil {
		return errBadToken()
	}
	fresh, err := s.store.AccountByID(ctx, acc.ID)
	if err != nil {
		return err
	}
	if len(current) > MaxPasswordBytes {
		return gpurent.Errorf(gpurent.CodeUnauthorized, "the current password is wrong")
	}
	if err := bcrypt.CompareHashAndPassword([]byte(fresh.PasswordHash), []byte(current)); err != nil {
		if errors.Is(err, bcrypt.ErrMismatchedHashAndPassword) {
			return gpurent.Errorf(gpurent.CodeUnauthorized, "the current password is wrong")
		}
		return gpurent.WrapError(gpurent.CodeInternal, err, "checking the password failed")
	}
	if err := ValidatePassword(newPassword); err != nil {
		return err
	}
	hash, err := s.hashPassword(newPassword)
	if err != nil {
		return err
	}
	return s.store.InTx(ctx, func(q gpurent.Queries) error {
		return replacePassword(ctx, q, acc.ID, hash)
	})
}

// replacePassword writes the hash and ends the account's sessions and
// reset links, inside the caller's transaction.
func replacePassword(ctx context.Context, q gpurent.Queries, accountID, hash string) error {
	cs, err := credentials(q)
	if err != nil {
		return err
	}
	if err := cs.SetPasswordHash(ctx, accountID, hash); err != nil {
		return err
	}
	_, err = cs.DeleteAccountTokens(ctx, accountID, gpurent.TokenSession, gpurent.TokenReset)
	return err
}

// resetToken finds the live reset token for secret.
func (s *Service) resetToken(ctx context.Context, secret string) (*gpurent.Token, error) {
	if !strings.HasPrefix(secret, ResetPrefix) || len(secret) > maxBearerBytes {
		return nil, errBadReset()
	}
	tok, err := s.store.TokenByHash(ctx, HashSecret(secret))
	if err != nil {
		if gpurent.IsCode(err, gpurent.CodeNotFound) {
			return nil, errBadReset()
		}
		return nil, err
	}
	if tok.Kind != gpurent.TokenReset || s.expired(tok) {
		return nil, errBadReset()
	}
	return tok, nil
}
