// Package auth manages accounts and the bearer credentials that prove them:
// registration with bcrypt-hashed passwords, password login into expiring
// session tokens, long-lived API tokens for scripts, and the lookup of an
// account from a presented bearer secret.
//
// Secrets look like "gpr_<random>" and are shown once; only their hex SHA-256
// is stored, so a leaked database holds no usable credential.
package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/mail"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"github.com/gpurent/gpurent"
)

// Limits on what an account is made of.
const (
	// SecretPrefix starts every user bearer secret.
	SecretPrefix = "gpr_"
	// MinPasswordBytes and MaxPasswordBytes bound a password. bcrypt reads
	// at most 72 bytes; a longer password is rejected rather than silently
	// truncated.
	MinPasswordBytes = 8
	MaxPasswordBytes = 72
	// MaxNameRunes bounds account and token names.
	MaxNameRunes = 100
	// MaxEmailBytes is the longest address SMTP can carry.
	MaxEmailBytes = 254
	// DefaultSessionTTL is how long a password login lasts.
	DefaultSessionTTL = 30 * 24 * time.Hour
	// secretBytes is the entropy of a secret: 256 bits.
	secretBytes = 32
	// maxBearerBytes bounds what Authenticate hashes.
	maxBearerBytes = 256
)

// Store is what the auth service reads and writes: the accounts and their
// tokens, a password reset's writes in one transaction.
type Store interface {
	gpurent.AccountStore
	gpurent.TokenStore
	gpurent.Transactor
}

// Config configures the service.
type Config struct {
	Store Store
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// BcryptCost is the password hashing cost; 0 is bcrypt.DefaultCost.
	// Tests may lower it to bcrypt.MinCost.
	BcryptCost int
	// SessionTTL is how long a login session lasts; 0 is DefaultSessionTTL.
	SessionTTL time.Duration
}

// Service registers accounts and checks credentials. It is safe for
// concurrent use.
type Service struct {
	store      Store
	now        func() time.Time
	cost       int
	sessionTTL time.Duration

	// dummyHash is a bcrypt hash of a random password at the service's cost,
	// compared against when a login names no account, so that an unknown
	// e-mail costs as much as a wrong password.
	dummyOnce sync.Once
	dummyHash []byte
}

// New makes the service.
func New(cfg Config) *Service {
	s := &Service{store: cfg.Store, now: cfg.Now, cost: cfg.BcryptCost, sessionTTL: cfg.SessionTTL}
	if s.now == nil {
		s.now = time.Now
	}
	if s.cost == 0 {
		s.cost = bcrypt.DefaultCost
	}
	if s.sessionTTL <= 0 {
		s.sessionTTL = DefaultSessionTTL
	}
	return s
}

// errBadCredentials is the one answer to a failed login, whatever failed.
func errBadCredentials() error {
	return gpurent.Errorf(gpurent.CodeUnauthorized, "wrong e-mail or password")
}

// errBadToken is the one answer to an unusable bearer secret.
func errBadToken() error {
	return gpurent.Errorf(gpurent.CodeUnauthorized, "missing, unknown or expired token")
}

// Register creates a customer account with a zero balance.
func (s *Service) Register(ctx context.Context, email, name, password string) (*gpurent.Account, error) {
	return s.CreateAccount(ctx, email, name, password, gpurent.RoleCustomer, 0)
}

// CreateAccount creates an account of any role with an opening balance; the
// composition root uses it to seed operators and demo customers.
func (s *Service) CreateAccount(ctx context.Context, email, name, password string, role gpurent.Role, balanceFen int64) (*gpurent.Account, error) {
	addr, err := NormalizeEmail(email)
	if err != nil {
		return nil, err
	}
	name, err = validateName("name", name)
	if err != nil {
		return nil, err
	}
	if err := ValidatePassword(password); err != nil {
		return nil, err
	}
	if role != gpurent.RoleCustomer && role != gpurent.RoleOperator {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "unknown role %q", role)
	}
	if balanceFen < 0 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "opening balance must not be negative")
	}
	hash, err := s.hashPassword(password)
	if err != nil {
		return nil, err
	}
	acc := &gpurent.Account{
		ID:           gpurent.NewID(gpurent.PrefixAccount),
		Email:        addr,
		Name:         name,
		Role:         role,
		PasswordHash: hash,
		BalanceFen:   balanceFen,
		CreatedAt:    s.now().UTC(),
	}
	if err := s.store.CreateAccount(ctx, acc); err != nil {
		if gpurent.IsCode(err, gpurent.CodeConflict) {
			return nil, gpurent.WrapError(gpurent.CodeConflict, err, "an account with this e-mail already exists")
		}
		return nil, err
	}
	return acc, nil
}

// Login checks an e-mail and password and opens a session. It answers the
// same error, after comparable work, whether the e-mail is unknown or the
// password wrong.
func (s *Service) Login(ctx context.Context, email, password string) (secret string, tok *gpurent.Token, acc *gpurent.Account, err error) {
	addr, addrErr := NormalizeEmail(email)
	if addrErr == nil {
		acc, err = s.store.AccountByEmail(ctx, addr)
		if err != nil && !gpurent.IsCode(err, gpurent.CodeNotFound) {
			return "", nil, nil, err
		}
	}
	if acc == nil {
		// Spend what a real comparison costs, then fail the same way.
		_ = bcrypt.CompareHashAndPassword(s.dummy(), []byte(clip(password)))
		return "", nil, nil, errBadCredentials()
	}
	if len(password) > MaxPasswordBytes {
		// No stored password can be this long; compare anyway for timing.
		_ = bcrypt.CompareHashAndPassword([]byte(acc.PasswordHash), []byte(clip(password)))
		return "", nil, nil, errBadCredentials()
	}
	if err := bcrypt.CompareHashAndPassword([]byte(acc.PasswordHash), []byte(password)); err != nil {
		if errors.Is(err, bcrypt.ErrMismatchedHashAndPassword) {
			return "", nil, nil, errBadCredentials()
		}
		return "", nil, nil, gpurent.WrapError(gpurent.CodeInternal, err, "checking the password failed")
	}
	expires := s.now().UTC().Add(s.sessionTTL)
	secret, tok, err = s.issue(ctx, acc, gpurent.TokenSession, "login", &expires)
	if err != nil {
		return "", nil, nil, err
	}
	return secret, tok, acc, nil
}

// Authenticate returns the account holding bearer, a "gpr_..." secret.
// Unknown, malformed and expired secrets are unauthorized.
// It makes one store query: the token and its account are read together.
func (s *Service) Authenticate(ctx context.Context, bearer string) (*gpurent.Account, error) {
	if !wellFormed(bearer) {
		return nil, errBadToken()
	}
	acc, tok, err := s.store.AccountByTokenHash(ctx, HashSecret(bearer))
	if err != nil {
		if gpurent.IsCode(err, gpurent.CodeNotFound) {
			return nil, errBadToken()
		}
		return nil, err
	}
	if s.expired(tok) {
		return nil, errBadToken()
	}
	return acc, nil
}

// CreateAPIToken makes a token that does not expire, for scripts and the
// CLI. The secret is returned once and never again.
func (s *Service) CreateAPIToken(ctx context.Context, acc *gpurent.Account, name string) (secret string, tok *gpurent.Token, err error) {
	if acc == nil {
		return "", nil, errBadToken()
	}
	name, err = validateName("token name", name)
	if err != nil {
		return "", nil, err
	}
	return s.issue(ctx, acc, gpurent.TokenAPI, name, nil)
}

// Logout revokes the presented token, session or API.
func (s *Service) Logout(ctx context.Context, bearer string) error {
	tok, err := s.lookup(ctx, bearer)
	if err != nil {
		return err
	}
	if err := s.store.DeleteToken(ctx, tok.ID); err != nil && !gpurent.IsCode(err, gpurent.CodeNotFound) {
		return err
	}
	return nil
}

// HashSecret is the stored form of a secret: its hex SHA-256.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// NormalizeEmail checks that email is one bare address (no display name,
// no angle brackets) and returns it lower-cased.
func NormalizeEmail(email string) (string, error) {
	email = strings.TrimSpace(email)
	if email == "" {
		return "", gpurent.Errorf(gpurent.CodeInvalid, "e-mail is required")
	}
	if len(email) > MaxEmailBytes {
		return "", gpurent.Errorf(gpurent.CodeInvalid, "e-mail must be at most %d bytes", MaxEmailBytes)
	}
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Name != "" || addr.Address != email {
		return "", gpurent.Errorf(gpurent.CodeInvalid, "e-mail %q is not a valid address (expected name@example.com)", email)
	}
	at := strings.LastIndexByte(email, '@')
	if at <= 0 || !strings.Contains(email[at+1:], ".") || strings.ContainsAny(email, " \t\r\n") {
		return "", gpurent.Errorf(gpurent.CodeInvalid, "e-mail %q is not a valid address (expected name@example.com)", email)
	}
	return strings.ToLower(email), nil
}

// hashPassword is the bcrypt hash, at the service's cost, of a password
// the caller has validated.
func (s *Service) hashPassword(password string) (string, error) {
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.cost)
	if err != nil {
		return "", gpurent.WrapError(gpurent.CodeInternal, err, "hashing the password failed")
	}
	return string(hash), nil
}

// ValidatePassword checks a new password's length in bytes.
func ValidatePassword(password string) error {
	switch {
	case len(password) < MinPasswordBytes:
		return gpurent.Errorf(gpurent.CodeInvalid, "password must be at least %d bytes", MinPasswordBytes)
	case len(password) > MaxPasswordBytes:
		return gpurent.Errorf(gpurent.CodeInvalid, "password must be at most %d bytes (bcrypt reads no more); use a shorter passphrase", MaxPasswordBytes)
	case !utf8.ValidString(password):
		return gpurent.Errorf(gpurent.CodeInvalid, "password must be valid UTF-8")
	}
	return nil
}

// validateName trims a display name and checks it is 1..MaxNameRunes
// printable characters.
func validateName(what, name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", gpurent.Errorf(gpurent.CodeInvalid, "%s is required", what)
	}
	if !utf8.ValidString(name) {
		return "", gpurent.Errorf(gpurent.CodeInvalid, "%s must be valid UTF-8", what)
	}
	if n := utf8.RuneCountInString(name); n > MaxNameRunes {
		return "", gpurent.Errorf(gpurent.CodeInvalid, "%s must be at most %d characters, got %d", what, MaxNameRunes, n)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) && r != ' ' {
			return "", gpurent.Errorf(gpurent.CodeInvalid, "%s must not contain control or invisible characters", what)
		}
	}
	return name, nil
}

// issue stores a new token for acc and returns its secret.
func (s *Service) issue(ctx context.Context, acc *gpurent.Account, kind gpurent.TokenKind, name string, expires *time.Time) (string, *gpurent.Token, error) {
	secret := SecretPrefix + gpurent.RandomSecret(secretBytes)
	tok := &gpurent.Token{
		ID:        gpurent.NewID(gpurent.PrefixToken),
		AccountID: acc.ID,
		Kind:      kind,
		Name:      name,
		Hash:      HashSecret(secret),
		CreatedAt: s.now().UTC(),
		ExpiresAt: expires,
	}
	if err := s.store.CreateToken(ctx, tok); err != nil {
		return "", nil, err
	}
	return secret, tok, nil
}

// lookup finds the live token for bearer.
func (s *Service) lookup(ctx context.Context, bearer string) (*gpurent.Token, error) {
	if !wellFormed(bearer) {
		return nil, errBadToken()
	}
	tok, err := s.store.TokenByHash(ctx, HashSecret(bearer))
	if err != nil {
		if gpurent.IsCode(err, gpurent.CodeNotFound) {
			return nil, errBadToken()
		}
		return nil, err
	}
	if s.expired(tok) {
		return nil, errBadToken()
	}
	return tok, nil
}

// wellFormed reports whether bearer could be a secret this service issued;
// anything else is refused before it is hashed or looked up.
func wellFormed(bearer string) bool {
	return strings.HasPrefix(bearer, SecretPrefix) && len(bearer) <= maxBearerBytes
}

// expired reports whether tok can no longer be used: it expires at the
// instant ExpiresAt, not after it.
func (s *Service) expired(tok *gpurent.Token) bool {
	return tok.ExpiresAt != nil && !s.now().Before(*tok.ExpiresAt)
}

// dummy returns the hash compared against for unknown e-mails.
func (s *Service) dummy() []byte {
	s.dummyOnce.Do(func() {
		// Fails only for an invalid cost, which fails every registration
		// too; a nil hash then makes the comparison fail at once.
		s.dummyHash, _ = bcrypt.GenerateFromPassword([]byte(gpurent.RandomSecret(16)), s.cost)
	})
	return s.dummyHash
}

// clip cuts a password to what bcrypt reads, for timing-only comparisons.
func clip(p string) string {
	if len(p) > MaxPasswordBytes {
		return p[:MaxPasswordBytes]
	}
	return p
}
