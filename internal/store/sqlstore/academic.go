package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/gpurent/gpurent"
)

const academicCols = `id, account_id, method, institution, email, proof, state, decided_by, decided_at,
reason, verified_until, created_at`

func scanAcademic(r rowScanner) (*gpurent.AcademicApplication, error) {
	var a gpurent.AcademicApplication
	var method, state string
	err := r.Scan(&a.ID, &a.AccountID, &method, &a.Institution, &a.Email, &a.Proof, &state, &a.DecidedBy,
		nullTimeCol{&a.DecidedAt}, &a.Reason, nullTimeCol{&a.VerifiedUntil}, timeCol{&a.CreatedAt})
	a.Method, a.State = gpurent.AcademicMethod(method), gpurent.AcademicState(state)
	return &a, err
}

// CreateAcademicApplication records a pending application and its
// "applied" audit entry. A second pending application of the account is a
// conflict (a partial unique index decides).
func (s *Store) CreateAcademicApplication(ctx context.Context, a *gpurent.AcademicApplication) error {
	if a.AccountID == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "academic application: account is required")
	}
	switch a.Method {
	case gpurent.AcademicEmailDomain, gpurent.AcademicProof:
	default:
		return gpurent.Errorf(gpurent.CodeInvalid, "academic application: method must be email_domain or proof")
	}
	if a.ID == "" {
		a.ID = gpurent.NewID(gpurent.PrefixAcademic)
	}
	a.State, a.DecidedBy, a.DecidedAt, a.Reason, a.VerifiedUntil = gpurent.AcademicPending, "", nil, "", nil
	a.CreatedAt = nowOr(a.CreatedAt)
	return s.atomic(ctx, func(st *Store) error {
		n, err := st.execN(ctx, `INSERT INTO academic_applications (`+academicCols+`)
VALUES (?, ?, ?, ?, ?, ?, ?, '', NULL, '', NULL, ?) ON CONFLICT DO NOTHING`,
			a.ID, a.AccountID, string(a.Method), a.Institution, a.Email, a.Proof, string(a.State), st.ts(a.CreatedAt))
		if err != nil {
			return st.dbErr(err, "create academic application")
		}
		if n == 0 {
			return gpurent.Errorf(gpurent.CodeConflict, "an academic application of this account is already pending")
		}
		return st.addAcademicAudit(ctx, a.ID, a.CreatedAt, a.AccountID, "applied", string(a.Method)+": "+a.Institution)
	})
}

func (s *Store) addAcademicAudit(ctx context.Context, id string, at time.Time, actor, action, note string) error {
	_, err := s.exec(ctx, `INSERT INTO academic_audit (application_id, at, actor, action, note) VALUES (?, ?, ?, ?, ?)`,
		id, s.ts(at), actor, action, note)
	if err != nil {
		return s.dbErr(err, "add academic audit entry")
	}
	return nil
}

// AcademicApplication returns the application with id.
func (s *Store) AcademicApplication(ctx context.Context, id string) (*gpurent.AcademicApplication, error) {
	a, err := scanAcademic(s.queryRow(ctx, `SELECT `+academicCols+` FROM academic_applications WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("academic application", id)
	}
	if err != nil {
		return nil, s.dbErr(err, "read academic application")
	}
	return a, nil
}

// ListAcademicApplications lists applications, oldest first.
func (s *Store) ListAcademicApplications(ctx context.Context, f gpurent.AcademicFilter) ([]gpurent.AcademicApplication, error) {
	q := `SELECT ` + academicCols + ` FROM academic_applications WHERE 1 = 1`
	var args []any
	if f.AccountID != "" {
		q += ` AND account_id = ?`
		args = append(args, f.AccountID)
	}
	if f.State != "" {
		q += ` AND state = ?`
		args = append(args, string(f.State))
	}
	rows, err := s.query(ctx, q+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, s.dbErr(err, "list academic applications")
	}
	defer rows.Close()
	var out []gpurent.AcademicApplication
	for rows.Next() {
		a, err := scanAcademic(rows)
		if err != nil {
			return nil, s.dbErr(err, "list academic applications")
		}
		out = append(out, *a)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "list academic applications")
	}
	return out, nil
}

// DecideAcademicApplication approves or rejects a pending application; on
// approval the account's academic status runs until verifiedUntil. The
// state change, the account and the audit entry are written together.
func (s *Store) DecideAcademicApplication(ctx context.Context, id string, state gpurent.AcademicState, by, reason string,
	at time.Time, verifiedUntil *time.Time) (*gpurent.AcademicApplication, error) {
	switch state {
	case gpurent.AcademicApproved:
		if verifiedUntil == nil {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "an approval needs the end of the verification")
		}
	case gpurent.AcademicRejected:
		verifiedUntil = nil
	default:
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "decide: state must be approved or rejected")
	}
	at = nowOr(at)
	verifiedUntil = normTimePtr(verifiedUntil)
	var out *gpurent.AcademicApplication
	err := s.atomic(ctx, func(st *Store) error {
		a, err := st.AcademicApplication(ctx, id)
		if err != nil {
			return err
		}
		n, err := st.execN(ctx, `UPDATE academic_applications SET state = ?, decided_by = ?, decided_at = ?, reason = ?,
verified_until = ? WHERE id = ? AND state = 'pending'`, string(state), by, st.ts(at), reason, st.tsp(verifiedUntil), id)
		if err != nil {
			return st.dbErr(err, "decide academic application")
		}
		if n == 0 {
			return gpurent.Errorf(gpurent.CodeConflict, "academic application %s was already %s", id, a.State)
		}
		if state == gpurent.AcademicApproved {
			if _, err := st.exec(ctx, `UPDATE accounts SET academic_until = ? WHERE id = ?`, st.tsp(verifiedUntil), a.AccountID); err != nil {
				return st.dbErr(err, "set academic status")
			}
		}
		if err := st.addAcademicAudit(ctx, id, at, by, string(state), reason); err != nil {
			return err
		}
		out, err = st.AcademicApplication(ctx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AcademicAudit returns an application's history, oldest first.
func (s *Store) AcademicAudit(ctx context.Context, applicationID string) ([]gpurent.AcademicAuditEntry, error) {
	rows, err := s.query(ctx, `SELECT application_id, at, actor, action, note FROM academic_audit
WHERE application_id = ? ORDER BY seq`, applicationID)
	if err != nil {
		return nil, s.dbErr(err, "read academic audit")
	}
	defer rows.Close()
	var out []gpurent.AcademicAuditEntry
	for rows.Next() {
		var e gpurent.AcademicAuditEntry
		if err := rows.Scan(&e.ApplicationID, timeCol{&e.At}, &e.Actor, &e.Action, &e.Note); err != nil {
			return nil, s.dbErr(err, "read academic audit")
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "read academic audit")
	}
	return out, nil
}
