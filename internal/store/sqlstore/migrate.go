package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"time"
)

// Migration is one numbered schema change.
type Migration struct {
	Version int    // from the file name's number
	Name    string // the file name
	SQL     string
}

var migrationName = regexp.MustCompile(`^([0-9]{4})_[a-z0-9_]+\.sql$`)

// ParseMigrations reads the migrations at the root of fsys: files named
// NNNN_description.sql, numbered 1, 2, 3, ... without gaps or repeats.
func ParseMigrations(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var ms []Migration
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %q is not named NNNN_description.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		ms = append(ms, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: expected number %04d (numbers start at 1 with no gaps or repeats)", m.Name, i+1)
		}
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("no migrations found")
	}
	return ms, nil
}

// Migrate applies the migrations in fsys that db has not recorded in
// schema_migrations, all in one transaction begun on db (for SQLite, the
// writer pool, whose transactions begin IMMEDIATE), after the dialect's
// migration lock. Applying them again is a no-op. A database recording a
// version this binary does not know is refused: it was migrated by a newer
// release.
func Migrate(ctx context.Context, db *sql.DB, d Dialect, fsys fs.FS) (applied []int, err error) {
	ms, err := ParseMigrations(fsys)
	if err != nil {
		return nil, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin migration transaction: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if d.MigrationLock != "" {
		if _, err := tx.ExecContext(ctx, d.MigrationLock); err != nil {
			return nil, fmt.Errorf("take migration lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    BIGINT NOT NULL PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_at TEXT NOT NULL
)`); err != nil {
		return nil, fmt.Errorf("create schema_migrations: %w", err)
	}
	done := map[int]bool{}
	rows, err := tx.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read schema_migrations: %w", err)
		}
		done[v] = true
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	known := len(ms)
	for v := range done {
		if v > known {
			return nil, fmt.Errorf("database schema is at version %d, newer than this binary knows (%d): run a newer gpurent", v, known)
		}
	}
	insert := d.rebind("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)")
	for _, m := range ms {
		if done[m.Version] {
			continue
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return nil, fmt.Errorf("apply migration %s: %w", m.Name, err)
		}
		at := time.Now().UTC().Format(time.RFC3339Nano)
		if _, err := tx.ExecContext(ctx, insert, m.Version, m.Name, at); err != nil {
			return nil, fmt.Errorf("record migration %s: %w", m.Name, err)
		}
		applied = append(applied, m.Version)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("commit migrations: %w", err)
	}
	return applied, nil
}
