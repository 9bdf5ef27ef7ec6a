package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/gpurent/gpurent"
)

const accountCols = `id, email, name, role, password_hash, balance_fen, created_at, academic_until`

func scanAccount(r rowScanner) (*gpurent.Account, error) {
	var a gpurent.Account
	var role string
	err := r.Scan(&a.ID, &a.Email, &a.Name, &role, &a.PasswordHash, &a.BalanceFen, timeCol{&a.CreatedAt},
		nullTimeCol{&a.AcademicUntil})
	a.Role = gpurent.Role(role)
	return &a, err
}

// CreateAccount inserts a; its email is stored lower-case and must be unused
// (case-insensitively). An empty ID gets a new one, a zero CreatedAt now; a
// is updated to what was stored.
func (s *Store) CreateAccount(ctx context.Context, a *gpurent.Account) error {
	email := strings.ToLower(strings.TrimSpace(a.Email))
	if email == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "account email is required")
	}
	if a.ID == "" {
		a.ID = gpurent.NewID(gpurent.PrefixAccount)
	}
	a.Email = email
	a.CreatedAt = nowOr(a.CreatedAt)
	a.AcademicUntil = normTimePtr(a.AcademicUntil)
	n, err := s.execN(ctx, `INSERT INTO accounts (`+accountCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING`,
		a.ID, a.Email, a.Name, string(a.Role), a.PasswordHash, a.BalanceFen, s.ts(a.CreatedAt), s.tsp(a.AcademicUntil))
	if err != nil {
		return s.dbErr(err, "create account")
	}
	if n == 0 {
		return gpurent.Errorf(gpurent.CodeConflict, "an account with this email already exists")
	}
	return nil
}

// AccountByID returns the account with id.
func (s *Store) AccountByID(ctx context.Context, id string) (*gpurent.Account, error) {
	a, err := scanAccount(s.queryRow(ctx, `SELECT `+accountCols+` FROM accounts WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("account", id)
	}
	if err != nil {
		return nil, s.dbErr(err, "read account")
	}
	return a, nil
}

// AccountByEmail returns the account with email, compared case-insensitively.
func (s *Store) AccountByEmail(ctx context.Context, email string) (*gpurent.Account, error) {
	a, err := scanAccount(s.queryRow(ctx, `SELECT `+accountCols+` FROM accounts WHERE email = ?`,
		strings.ToLower(strings.TrimSpace(email))))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "no account with this email")
	}
	if err != nil {
		return nil, s.dbErr(err, "read account")
	}
	return a, nil
}

// ListAccounts returns every account, oldest first.
func (s *Store) ListAccounts(ctx context.Context) ([]gpurent.Account, error) {
	rows, err := s.query(ctx, `SELECT `+accountCols+` FROM accounts ORDER BY created_at, id`)
	if err != nil {
		return nil, s.dbErr(err, "list accounts")
	}
	defer rows.Close()
	var out []gpurent.Account
	for rows.Next() {
		a, err := scanAccount(rows)
		if err != nil {
			return nil, s.dbErr(err, "list accounts")
		}
		out = append(out, *a)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "list accounts")
	}
	return out, nil
}

const tokenCols = `id, account_id, kind, name, hash, created_at, expires_at`

// CreateToken inserts t; its hash must be unused. An empty ID gets a new
// one, a zero CreatedAt now.
func (s *Store) CreateToken(ctx context.Context, t *gpurent.Token) error {
	if t.Hash == "" || t.AccountID == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "token hash and account are required")
	}
	if t.ID == "" {
		t.ID = gpurent.NewID(gpurent.PrefixToken)
	}
	t.CreatedAt = nowOr(t.CreatedAt)
	t.ExpiresAt = normTimePtr(t.ExpiresAt)
	n, err := s.execN(ctx, `INSERT INTO tokens (`+tokenCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING`,
		t.ID, t.AccountID, string(t.Kind), t.Name, t.Hash, s.ts(t.CreatedAt), s.tsp(t.ExpiresAt))
	if err != nil {
		return s.dbErr(err, "create token")
	}
	if n == 0 {
		return gpurent.Errorf(gpurent.CodeConflict, "token already exists")
	}
	return nil
}

// TokenByHash returns the token whose secret hashes to hash, expired or not:
// the caller checks ExpiresAt.
func (s *Store) TokenByHash(ctx context.Context, hash string) (*gpurent.Token, error) {
	if hash == "" {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "token not found")
	}
	var t gpurent.Token
	var kind string
	err := s.queryRow(ctx, `SELECT `+tokenCols+` FROM tokens WHERE hash = ?`, hash).
		Scan(&t.ID, &t.AccountID, &kind, &t.Name, &t.Hash, timeCol{&t.CreatedAt}, nullTimeCol{&t.ExpiresAt})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "token not found")
	}
	if err != nil {
		return nil, s.dbErr(err, "read token")
	}
	t.Kind = gpurent.TokenKind(kind)
	return &t, nil
}

// accountTokenCols are accountCols then tokenCols, qualified for the join in
// AccountByTokenHash (a for accounts, t for tokens).
const accountTokenCols = `a.id, a.email, a.name, a.role, a.password_hash, a.balance_fen, a.created_at, a.academic_until,
t.id, t.account_id, t.kind, t.name, t.hash, t.created_at, t.expires_at`

// AccountByTokenHash returns the token whose secret hashes to hash, expired
// or not, and its account, in one statement. The join is driven by the
// unique index on tokens.hash, then the accounts primary key.
func (s *Store) AccountByTokenHash(ctx context.Context, hash string) (*gpurent.Account, *gpurent.Token, error) {
	if hash == "" {
		return nil, nil, gpurent.Errorf(gpurent.CodeNotFound, "token not found")
	}
	var a gpurent.Account
	var t gpurent.Token
	var role, kind string
	err := s.queryRow(ctx, `SELECT `+accountTokenCols+`
FROM tokens t JOIN accounts a ON a.id = t.account_id
WHERE t.hash = ?`, hash).Scan(
		&a.ID, &a.Email, &a.Name, &role, &a.PasswordHash, &a.BalanceFen, timeCol{&a.CreatedAt}, nullTimeCol{&a.AcademicUntil},
		&t.ID, &t.AccountID, &kind, &t.Name, &t.Hash, timeCol{&t.CreatedAt}, nullTimeCol{&t.ExpiresAt})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, gpurent.Errorf(gpurent.CodeNotFound, "token not found")
	}
	if err != nil {
		return nil, nil, s.dbErr(err, "read token and account")
	}
	a.Role = gpurent.Role(role)
	t.Kind = gpurent.TokenKind(kind)
	return &a, &t, nil
}

// DeleteToken deletes the token with id.
func (s *Store) DeleteToken(ctx context.Context, id string) error {
	n, err := s.execN(ctx, `DELETE FROM tokens WHERE id = ?`, id)
	if err != nil {
		return s.dbErr(err, "delete token")
	}
	if n == 0 {
		return notFound("token", id)
	}
	return nil
}
