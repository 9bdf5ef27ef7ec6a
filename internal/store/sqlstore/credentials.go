package sqlstore

import (
	"context"

	"github.com/gpurent/gpurent"
)

// ListTokens returns the account's tokens of the given kinds (all kinds
// when none is given), oldest first.
func (s *Store) ListTokens(ctx context.Context, accountID string, kinds ...gpurent.TokenKind) ([]gpurent.Token, error) {
	q := `SELECT ` + tokenCols + ` FROM tokens WHERE account_id = ?`
	args := []any{accountID}
	if len(kinds) > 0 {
		q += ` AND kind IN (` + placeholders(len(kinds)) + `)`
		for _, k := range kinds {
			args = append(args, string(k))
		}
	}
	return queryAll(ctx, s, "list tokens", q+` ORDER BY created_at, id`, func(r rowScanner) (gpurent.Token, error) {
		var t gpurent.Token
		var kind string
		err := r.Scan(&t.ID, &t.AccountID, &kind, &t.Name, &t.Hash, timeCol{&t.CreatedAt}, nullTimeCol{&t.ExpiresAt})
		t.Kind = gpurent.TokenKind(kind)
		return t, err
	}, args...)
}

// DeleteAccountTokens deletes the account's tokens of the given kinds.
func (s *Store) DeleteAccountTokens(ctx context.Context, accountID string, kinds ...gpurent.TokenKind) (int, error) {
	if len(kinds) == 0 {
		return 0, gpurent.Errorf(gpurent.CodeInvalid, "name the kinds of tokens to delete")
	}
	args := []any{accountID}
	for _, k := range kinds {
		args = append(args, string(k))
	}
	n, err := s.execN(ctx, `DELETE FROM tokens WHERE account_id = ? AND kind IN (`+placeholders(len(kinds))+`)`, args...)
	if err != nil {
		return 0, s.dbErr(err, "delete tokens")
	}
	return int(n), nil
}

// SetPasswordHash replaces the account's password hash.
func (s *Store) SetPasswordHash(ctx context.Context, accountID, hash string) error {
	if hash == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "a password hash is required")
	}
	n, err := s.execN(ctx, `UPDATE accounts SET password_hash = ? WHERE id = ?`, hash, accountID)
	if err != nil {
		return s.dbErr(err, "set password hash")
	}
	if n == 0 {
		return notFound("account", accountID)
	}
	return nil
}
