package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/gpurent/gpurent"
)

const volumeCols = `id, instance_id, account_id, host_id, size_gib, name, created_at, deleted_at`

// CreateVolume inserts v. An empty ID gets a new one, a zero CreatedAt now.
func (s *Store) CreateVolume(ctx context.Context, v *gpurent.Volume) error {
	if v.AccountID == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "volume account is required")
	}
	if v.ID == "" {
		v.ID = gpurent.NewID(gpurent.PrefixVolume)
	}
	v.CreatedAt = nowOr(v.CreatedAt)
	v.DeletedAt = normTimePtr(v.DeletedAt)
	n, err := s.execN(ctx, `INSERT INTO volumes (`+volumeCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING`,
		v.ID, v.InstanceID, v.AccountID, v.HostID, v.SizeGiB, v.Name, s.ts(v.CreatedAt), s.tsp(v.DeletedAt))
	if err != nil {
		return s.dbErr(err, "create volume")
	}
	if n == 0 {
		return gpurent.Errorf(gpurent.CodeConflict, "volume %q already exists", v.ID)
	}
	return nil
}

// VolumeByID returns the volume with id, deleted or not.
func (s *Store) VolumeByID(ctx context.Context, id string) (*gpurent.Volume, error) {
	var v gpurent.Volume
	err := s.queryRow(ctx, `SELECT `+volumeCols+` FROM volumes WHERE id = ?`, id).
		Scan(&v.ID, &v.InstanceID, &v.AccountID, &v.HostID, &v.SizeGiB, &v.Name,
			timeCol{&v.CreatedAt}, nullTimeCol{&v.DeletedAt})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("volume", id)
	}
	if err != nil {
		return nil, s.dbErr(err, "read volume")
	}
	return &v, nil
}

// MarkVolumeDeleted records that the volume was deleted at at. Marking a
// deleted volume again keeps the first time.
func (s *Store) MarkVolumeDeleted(ctx context.Context, id string, at time.Time) error {
	n, err := s.execN(ctx, `UPDATE volumes SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL`, s.ts(nowOr(at)), id)
	if err != nil {
		return s.dbErr(err, "delete volume")
	}
	if n == 0 {
		ok, err := s.exists(ctx, `SELECT 1 FROM volumes WHERE id = ?`, id)
		if err != nil {
			return s.dbErr(err, "delete volume")
		}
		if !ok {
			return notFound("volume", id)
		}
	}
	return nil
}

// SetVolumeHost records that the volume's data now lives on hostID. An
// unknown volume is not_found; an empty hostID is invalid.
func (s *Store) SetVolumeHost(ctx context.Context, volumeID, hostID string) error {
	if hostID == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "volume host is required")
	}
	n, err := s.execN(ctx, `UPDATE volumes SET host_id = ? WHERE id = ?`, hostID, volumeID)
	if err != nil {
		return s.dbErr(err, "set volume host")
	}
	if n == 0 {
		return notFound("volume", volumeID)
	}
	return nil
}

// AddEvent appends e to its instance's history. An empty ID gets a new one,
// a zero At now.
func (s *Store) AddEvent(ctx context.Context, e *gpurent.Event) error {
	if e.InstanceID == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "event instance is required")
	}
	if e.ID == "" {
		e.ID = gpurent.NewID(gpurent.PrefixEvent)
	}
	e.At = nowOr(e.At)
	n, err := s.execN(ctx, `INSERT INTO events (id, instance_id, at, kind, message) VALUES (?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING`, e.ID, e.InstanceID, s.ts(e.At), e.Kind, e.Message)
	if err != nil {
		return s.dbErr(err, "add event")
	}
	if n == 0 {
		return gpurent.Errorf(gpurent.CodeConflict, "event %q already exists", e.ID)
	}
	return nil
}

// ListEvents returns the instance's history, oldest first (same instant:
// in the order added).
func (s *Store) ListEvents(ctx context.Context, instanceID string) ([]gpurent.Event, error) {
	rows, err := s.query(ctx, `SELECT id, instance_id, at, kind, message FROM events WHERE instance_id = ?
ORDER BY at, seq`, instanceID)
	if err != nil {
		return nil, s.dbErr(err, "list events")
	}
	defer rows.Close()
	var out []gpurent.Event
	for rows.Next() {
		var e gpurent.Event
		if err := rows.Scan(&e.ID, &e.InstanceID, timeCol{&e.At}, &e.Kind, &e.Message); err != nil {
			return nil, s.dbErr(err, "list events")
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "list events")
	}
	return out, nil
}

const idemCols = `account_id, key, method, path, request_hash, status, body, created_at`

// SaveIdempotency stores an API answer; (AccountID, Key) must be unused. A
// zero CreatedAt is now.
func (s *Store) SaveIdempotency(ctx context.Context, r *gpurent.IdempotencyRecord) error {
	if r.AccountID == "" || r.Key == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "idempotency record account and key are required")
	}
	r.CreatedAt = nowOr(r.CreatedAt)
	body := r.Body
	if body == nil {
		body = []byte{}
	}
	n, err := s.execN(ctx, `INSERT INTO idempotency_records (`+idemCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING`,
		r.AccountID, r.Key, r.Method, r.Path, r.RequestHash, r.Status, body, s.ts(r.CreatedAt))
	if err != nil {
		return s.dbErr(err, "save idempotency record")
	}
	if n == 0 {
		return gpurent.Errorf(gpurent.CodeConflict, "a request with this idempotency key was already answered")
	}
	return nil
}

// IdempotencyByKey returns the account's stored answer for key.
func (s *Store) IdempotencyByKey(ctx context.Context, accountID, key string) (*gpurent.IdempotencyRecord, error) {
	var r gpurent.IdempotencyRecord
	err := s.queryRow(ctx, `SELECT `+idemCols+` FROM idempotency_records WHERE account_id = ? AND key = ?`,
		accountID, key).
		Scan(&r.AccountID, &r.Key, &r.Method, &r.Path, &r.RequestHash, &r.Status, &r.Body, timeCol{&r.CreatedAt})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "no answer stored for this idempotency key")
	}
	if err != nil {
		return nil, s.dbErr(err, "read idempotency record")
	}
	return &r, nil
}
