package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
)

const baseImageCols = `name, ref, description, framework, versions, min_cuda, gpu_types, size_bytes, prepull, created_at, updated_at`

func scanBaseImage(r rowScanner) (gpurent.BaseImage, error) {
	var (
		img            gpurent.BaseImage
		versions, gpus string
	)
	if err := r.Scan(&img.Name, &img.Ref, &img.Description, &img.Framework, &versions, &img.MinCUDA, &gpus,
		&img.SizeBytes, &img.Prepull, timeCol{&img.CreatedAt}, timeCol{&img.UpdatedAt}); err != nil {
		return img, err
	}
	if versions != "" && versions != "{}" {
		if err := json.Unmarshal([]byte(versions), &img.Versions); err != nil {
			return img, err
		}
	}
	if gpus != "" {
		img.GPUTypes = strings.Split(gpus, ",")
	}
	return img, nil
}

// PutBaseImage adds or replaces the image of img.Name.
func (s *Store) PutBaseImage(ctx context.Context, img *gpurent.BaseImage) error {
	if img.Name == "" || img.Ref == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "a base image needs a name and an image reference")
	}
	for _, g := range img.GPUTypes {
		if g == "" || strings.Contains(g, ",") {
			return gpurent.Errorf(gpurent.CodeInvalid, "GPU type ids must be non-empty and without commas")
		}
	}
	versions := []byte("{}")
	if len(img.Versions) > 0 {
		var err error
		if versions, err = json.Marshal(img.Versions); err != nil {
			return gpurent.WrapError(gpurent.CodeInvalid, err, "base image versions")
		}
	}
	now := nowOr(img.UpdatedAt)
	got, err := scanBaseImage(s.writeRow(ctx, `INSERT INTO base_images (`+baseImageCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET ref = excluded.ref, description = excluded.description, framework = excluded.framework,
versions = excluded.versions, min_cuda = excluded.min_cuda, gpu_types = excluded.gpu_types, size_bytes = excluded.size_bytes,
prepull = excluded.prepull, updated_at = excluded.updated_at
RETURNING `+baseImageCols,
		img.Name, img.Ref, img.Description, img.Framework, string(versions), img.MinCUDA, strings.Join(img.GPUTypes, ","),
		img.SizeBytes, img.Prepull, s.ts(now), s.ts(now)))
	if err != nil {
		return s.dbErr(err, "put base image")
	}
	*img = got
	return nil
}

// BaseImage answers the image named name.
func (s *Store) BaseImage(ctx context.Context, name string) (*gpurent.BaseImage, error) {
	img, err := scanBaseImage(s.queryRow(ctx, `SELECT `+baseImageCols+` FROM base_images WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("base image", name)
	}
	if err != nil {
		return nil, s.dbErr(err, "read base image")
	}
	return &img, nil
}

// ListBaseImages answers the catalog by name.
func (s *Store) ListBaseImages(ctx context.Context) ([]gpurent.BaseImage, error) {
	rows, err := s.query(ctx, `SELECT `+baseImageCols+` FROM base_images ORDER BY name`)
	if err != nil {
		return nil, s.dbErr(err, "list base images")
	}
	defer rows.Close()
	out := []gpurent.BaseImage{}
	for rows.Next() {
		img, err := scanBaseImage(rows)
		if err != nil {
			return nil, s.dbErr(err, "list base images")
		}
		out = append(out, img)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "list base images")
	}
	return out, nil
}

// DeleteBaseImage removes the image named name.
func (s *Store) DeleteBaseImage(ctx context.Context, name string) error {
	n, err := s.execN(ctx, `DELETE FROM base_images WHERE name = ?`, name)
	if err != nil {
		return s.dbErr(err, "delete base image")
	}
	if n == 0 {
		return notFound("base image", name)
	}
	return nil
}

// SetBaseImagePrepull sets the image's pre-pull flag.
func (s *Store) SetBaseImagePrepull(ctx context.Context, name string, prepull bool, at time.Time) error {
	n, err := s.execN(ctx, `UPDATE base_images SET prepull = ?, updated_at = ? WHERE name = ?`, prepull, s.ts(nowOr(at)), name)
	if err != nil {
		return s.dbErr(err, "set base image pre-pull")
	}
	if n == 0 {
		return notFound("base image", name)
	}
	return nil
}

// SetHostImages replaces the images the host holds, in one transaction.
func (s *Store) SetHostImages(ctx context.Context, hostID string, refs []string) error {
	refs = slices.Compact(slices.Sorted(slices.Values(refs)))
	return s.atomic(ctx, func(st *Store) error {
		if _, err := st.exec(ctx, `DELETE FROM host_images WHERE host_id = ?`, hostID); err != nil {
			return st.dbErr(err, "set host images")
		}
		for _, r := range refs {
			if r == "" {
				continue
			}
			if _, err := st.exec(ctx, `INSERT INTO host_images (host_id, ref) VALUES (?, ?)`, hostID, r); err != nil {
				return st.dbErr(err, "set host images")
			}
		}
		return nil
	})
}

// HostsHolding answers the hosts that hold ref, by id.
func (s *Store) HostsHolding(ctx context.Context, ref string) ([]string, error) {
	rows, err := s.query(ctx, `SELECT host_id FROM host_images WHERE ref = ? ORDER BY host_id`, ref)
	if err != nil {
		return nil, s.dbErr(err, "list hosts holding an image")
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.dbErr(err, "list hosts holding an image")
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
