package sqlstore

import (
	"context"

	"github.com/gpurent/gpurent"
)

// AddPriceVersion stores a new price version. An empty ID gets one and a
// zero CreatedAt is now; a version with the same EffectiveAt is a conflict.
func (s *Store) AddPriceVersion(ctx context.Context, v *gpurent.PriceVersion) error {
	if v.EffectiveAt.IsZero() || len(v.Document) == 0 {
		return gpurent.Errorf(gpurent.CodeInvalid, "a price version needs an effective time and a document")
	}
	if v.ID == "" {
		v.ID = gpurent.NewID(gpurent.PrefixPrice)
	}
	v.EffectiveAt = normTime(v.EffectiveAt)
	v.CreatedAt = nowOr(v.CreatedAt)
	n, err := s.execN(ctx, `INSERT INTO price_versions (id, effective_at, document, note, created_by, created_at)
VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		v.ID, s.ts(v.EffectiveAt), string(v.Document), v.Note, v.CreatedBy, s.ts(v.CreatedAt))
	if err != nil {
		return s.dbErr(err, "add price version")
	}
	if n == 0 {
		return gpurent.Errorf(gpurent.CodeConflict, "a price version effective at %s exists already",
			v.EffectiveAt.Format("2006-01-02T15:04:05Z07:00"))
	}
	return nil
}

// PriceVersions returns every price version, oldest effective first.
func (s *Store) PriceVersions(ctx context.Context) ([]gpurent.PriceVersion, error) {
	rows, err := s.query(ctx, `SELECT id, effective_at, document, note, created_by, created_at
FROM price_versions ORDER BY effective_at`)
	if err != nil {
		return nil, s.dbErr(err, "list price versions")
	}
	defer rows.Close()
	var out []gpurent.PriceVersion
	for rows.Next() {
		var v gpurent.PriceVersion
		var doc string
		if err := rows.Scan(&v.ID, timeCol{&v.EffectiveAt}, &doc, &v.Note, &v.CreatedBy, timeCol{&v.CreatedAt}); err != nil {
			return nil, s.dbErr(err, "list price versions")
		}
		v.Document = []byte(doc)
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "list price versions")
	}
	return out, nil
}
