package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/gpurent/gpurent"
)

const joinTokenCols = `id, hash, zone_id, name, host_id, created_by, created_at, expires_at, used_at, used_name, revoked_at`

func scanJoinToken(r rowScanner) (gpurent.JoinToken, error) {
	var t gpurent.JoinToken
	err := r.Scan(&t.ID, &t.Hash, &t.ZoneID, &t.Name, &t.HostID, &t.CreatedBy, timeCol{&t.CreatedAt},
		timeCol{&t.ExpiresAt}, nullTimeCol{&t.UsedAt}, &t.UsedName, nullTimeCol{&t.RevokedAt})
	return t, err
}

// CreateJoinToken stores t.
func (s *Store) CreateJoinToken(ctx context.Context, t *gpurent.JoinToken) error {
	if t.Hash == "" || t.ZoneID == "" || t.ExpiresAt.IsZero() {
		return gpurent.Errorf(gpurent.CodeInvalid, "a join token needs a hash, a zone and an expiry")
	}
	if t.ID == "" {
		t.ID = gpurent.NewID(gpurent.PrefixJoinToken)
	}
	t.CreatedAt = nowOr(t.CreatedAt)
	t.ExpiresAt = normTime(t.ExpiresAt)
	n, err := s.execN(ctx, `INSERT INTO join_tokens (`+joinTokenCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, '', NULL)
ON CONFLICT DO NOTHING`,
		t.ID, t.Hash, t.ZoneID, t.Name, t.HostID, t.CreatedBy, s.ts(t.CreatedAt), s.ts(t.ExpiresAt))
	if err != nil {
		return s.dbErr(err, "create join token")
	}
	if n == 0 {
		return gpurent.Errorf(gpurent.CodeConflict, "join token already exists")
	}
	t.UsedAt, t.UsedName, t.RevokedAt = nil, "", nil
	return nil
}

// UseJoinToken marks the token used in one conditional write: of
// concurrent uses the database lets exactly one through.
func (s *Store) UseJoinToken(ctx context.Context, hash, name string, at time.Time) (*gpurent.JoinToken, error) {
	if hash == "" {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "join token not found")
	}
	at = nowOr(at)
	t, err := scanJoinToken(s.writeRow(ctx, `UPDATE join_tokens SET used_at = ?, used_name = ?
WHERE hash = ? AND used_at IS NULL AND revoked_at IS NULL AND expires_at > ?
RETURNING `+joinTokenCols, s.ts(at), name, hash, s.ts(at)))
	if err == nil {
		return &t, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, s.dbErr(err, "use join token")
	}
	t, err = scanJoinToken(s.queryRow(ctx, `SELECT `+joinTokenCols+` FROM join_tokens WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "join token not found")
	}
	if err != nil {
		return nil, s.dbErr(err, "read join token")
	}
	return nil, gpurent.Errorf(gpurent.CodeConflict, "join token %s is %s", t.ID, t.State(at))
}

// ListJoinTokens lists every join token, newest first.
func (s *Store) ListJoinTokens(ctx context.Context) ([]gpurent.JoinToken, error) {
	return queryAll(ctx, s, "list join tokens", `SELECT `+joinTokenCols+` FROM join_tokens ORDER BY created_at DESC, id DESC`,
		scanJoinToken)
}

// RevokeJoinToken revokes an unused, unrevoked token.
func (s *Store) RevokeJoinToken(ctx context.Context, id string, at time.Time) error {
	return s.atomic(ctx, func(st *Store) error {
		t, err := scanJoinToken(st.queryRow(ctx, `SELECT `+joinTokenCols+` FROM join_tokens WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("join token", id)
		}
		if err != nil {
			return st.dbErr(err, "read join token")
		}
		n, err := st.execN(ctx, `UPDATE join_tokens SET revoked_at = ? WHERE id = ? AND used_at IS NULL AND revoked_at IS NULL`,
			st.ts(nowOr(at)), id)
		if err != nil {
			return st.dbErr(err, "revoke join token")
		}
		if n == 0 {
			return gpurent.Errorf(gpurent.CodeConflict, "join token %s is %s; only an unused one can be revoked", id, t.State(nowOr(at)))
		}
		return nil
	})
}

// ResetHostCredential clears the host's agent token hash and last-seen
// time and revokes the unused join tokens issued for it.
func (s *Store) ResetHostCredential(ctx context.Context, hostID string, at time.Time) error {
	return s.atomic(ctx, func(st *Store) error {
		n, err := st.execN(ctx, `UPDATE hosts SET agent_token_hash = '', last_seen_at = NULL WHERE id = ?`, hostID)
		if err != nil {
			return st.dbErr(err, "reset host credential")
		}
		if n == 0 {
			return notFound("host", hostID)
		}
		if _, err := st.exec(ctx, `UPDATE join_tokens SET revoked_at = ? WHERE host_id = ? AND used_at IS NULL AND revoked_at IS NULL`,
			st.ts(nowOr(at)), hostID); err != nil {
			return st.dbErr(err, "revoke the host's join tokens")
		}
		return nil
	})
}
