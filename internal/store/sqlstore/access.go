package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/gpurent/gpurent"
)

const sshKeyCols = `id, account_id, name, public_key, fingerprint, created_at, last_used_at`

func scanSSHKey(r rowScanner) (*gpurent.SSHKey, error) {
	var k gpurent.SSHKey
	err := r.Scan(&k.ID, &k.AccountID, &k.Name, &k.PublicKey, &k.Fingerprint, timeCol{&k.CreatedAt}, nullTimeCol{&k.LastUsedAt})
	return &k, err
}

// AddSSHKey stores a key; a fingerprint the account registered already is
// a conflict (other accounts may hold the same key).
func (s *Store) AddSSHKey(ctx context.Context, k *gpurent.SSHKey) error {
	if k.AccountID == "" || k.PublicKey == "" || k.Fingerprint == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "an SSH key needs its account, public key and fingerprint")
	}
	if k.ID == "" {
		k.ID = gpurent.NewID("key")
	}
	k.CreatedAt = nowOr(k.CreatedAt)
	_, err := s.exec(ctx, `INSERT INTO ssh_keys (`+sshKeyCols+`) VALUES (?, ?, ?, ?, ?, ?, NULL)`,
		k.ID, k.AccountID, k.Name, k.PublicKey, k.Fingerprint, s.ts(k.CreatedAt))
	if s.d.Classify(err) == ErrUnique {
		return gpurent.Errorf(gpurent.CodeConflict, "this SSH key (%s) is registered on the account already", k.Fingerprint)
	}
	return s.dbErr(err, "add SSH key")
}

// ListSSHKeys lists the account's keys, oldest first.
func (s *Store) ListSSHKeys(ctx context.Context, accountID string) ([]gpurent.SSHKey, error) {
	rows, err := s.query(ctx, `SELECT `+sshKeyCols+` FROM ssh_keys WHERE account_id = ? ORDER BY created_at, id`, accountID)
	if err != nil {
		return nil, s.dbErr(err, "list SSH keys")
	}
	defer rows.Close()
	var out []gpurent.SSHKey
	for rows.Next() {
		k, err := scanSSHKey(rows)
		if err != nil {
			return nil, s.dbErr(err, "list SSH keys")
		}
		out = append(out, *k)
	}
	return out, s.dbErr(rows.Err(), "list SSH keys")
}

// DeleteSSHKey removes one of the account's keys.
func (s *Store) DeleteSSHKey(ctx context.Context, accountID, id string) error {
	n, err := s.execN(ctx, `DELETE FROM ssh_keys WHERE id = ? AND account_id = ?`, id, accountID)
	if err != nil {
		return s.dbErr(err, "delete SSH key")
	}
	if n == 0 {
		return notFound("SSH key", id)
	}
	return nil
}

// SSHKeyByFingerprint finds the oldest registration of the key with the
// fingerprint.
func (s *Store) SSHKeyByFingerprint(ctx context.Context, fingerprint string) (*gpurent.SSHKey, error) {
	return s.sshKeyWhere(ctx, `fingerprint = ? ORDER BY created_at, id LIMIT 1`, fingerprint)
}

// SSHKeyOfAccount finds the account's registration of the key with the
// fingerprint.
func (s *Store) SSHKeyOfAccount(ctx context.Context, accountID, fingerprint string) (*gpurent.SSHKey, error) {
	return s.sshKeyWhere(ctx, `account_id = ? AND fingerprint = ?`, accountID, fingerprint)
}

func (s *Store) sshKeyWhere(ctx context.Context, where string, args ...any) (*gpurent.SSHKey, error) {
	fingerprint := args[len(args)-1].(string)
	k, err := scanSSHKey(s.queryRow(ctx, `SELECT `+sshKeyCols+` FROM ssh_keys WHERE `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("SSH key", fingerprint)
	}
	if err != nil {
		return nil, s.dbErr(err, "read SSH key")
	}
	return k, nil
}

// TouchSSHKey records that the key was used at at.
func (s *Store) TouchSSHKey(ctx context.Context, id string, at time.Time) error {
	_, err := s.exec(ctx, `UPDATE ssh_keys SET last_used_at = ? WHERE id = ?`, s.ts(at), id)
	return s.dbErr(err, "touch SSH key")
}

// SetHostAccess records where the gateway reaches the host's agent.
func (s *Store) SetHostAccess(ctx context.Context, hostID, addr, hostKey string) error {
	n, err := s.execN(ctx, `UPDATE hosts SET access_addr = ?, access_host_key = ? WHERE id = ?`, addr, hostKey, hostID)
	if err != nil {
		return s.dbErr(err, "set host access")
	}
	if n == 0 {
		return notFound("host", hostID)
	}
	return nil
}

const accessSessionCols = `id, account_id, instance_id, kind, detail, client_addr, started_at, ended_at, exit_status, bytes_in, bytes_out`

// AddAccessSession writes an audit record.
func (s *Store) AddAccessSession(ctx context.Context, a *gpurent.AccessSession) error {
	if a.ID == "" {
		a.ID = gpurent.NewID("ses")
	}
	a.StartedAt = nowOr(a.StartedAt)
	var exit any
	if a.ExitStatus != nil {
		exit = int64(*a.ExitStatus)
	}
	_, err := s.exec(ctx, `INSERT INTO access_sessions (`+accessSessionCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.AccountID, a.InstanceID, a.Kind, a.Detail, a.ClientAddr, s.ts(a.StartedAt), s.tsp(a.EndedAt), exit, a.BytesIn, a.BytesOut)
	return s.dbErr(err, "add access session")
}

// EndAccessSession writes the record's end, exit status and byte counts.
func (s *Store) EndAccessSession(ctx context.Context, a *gpurent.AccessSession) error {
	var exit any
	if a.ExitStatus != nil {
		exit = int64(*a.ExitStatus)
	}
	ended := nowOr(time.Time{})
	if a.EndedAt != nil {
		ended = normTime(*a.EndedAt)
	}
	n, err := s.execN(ctx, `UPDATE access_sessions SET ended_at = ?, exit_status = ?, bytes_in = ?, bytes_out = ? WHERE id = ?`,
		s.ts(ended), exit, a.BytesIn, a.BytesOut, a.ID)
	if err != nil {
		return s.dbErr(err, "end access session")
	}
	if n == 0 {
		return notFound("access session", a.ID)
	}
	return nil
}

// ListAccessSessions lists the account's sessions, newest first ("" lists
// every account's, for operators).
func (s *Store) ListAccessSessions(ctx context.Context, accountID string, limit int) ([]gpurent.AccessSession, error) {
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	where, args := "", []any{}
	if accountID != "" {
		where, args = "WHERE account_id = ? ", append(args, accountID)
	}
	rows, err := s.query(ctx, `SELECT `+accessSessionCols+` FROM access_sessions `+where+`ORDER BY started_at DESC, id DESC LIMIT ?`,
		append(args, limit)...)
	if err != nil {
		return nil, s.dbErr(err, "list access sessions")
	}
	defer rows.Close()
	var out []gpurent.AccessSession
	for rows.Next() {
		var a gpurent.AccessSession
		var exit sql.NullInt64
		if err := rows.Scan(&a.ID, &a.AccountID, &a.InstanceID, &a.Kind, &a.Detail, &a.ClientAddr, timeCol{&a.StartedAt},
			nullTimeCol{&a.EndedAt}, &exit, &a.BytesIn, &a.BytesOut); err != nil {
			return nil, s.dbErr(err, "list access sessions")
		}
		if exit.Valid {
			e := int(exit.Int64)
			a.ExitStatus = &e
		}
		out = append(out, a)
	}
	return out, s.dbErr(rows.Err(), "list access sessions")
}
