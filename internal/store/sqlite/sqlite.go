// Package sqlite opens the SQLite backend of the store (pure Go, through
// modernc.org/sqlite, so CGO_ENABLED=0 builds work).
//
// The database runs in WAL mode with foreign keys on, synchronous=NORMAL
// and a busy timeout. Writes go through exactly one connection — every
// transaction begins IMMEDIATE on it, so writers queue in Go instead of
// failing with SQLITE_BUSY — and reads outside a transaction go through a
// separate pool of read-only connections, which WAL lets run alongside the
// writer.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"runtime"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/store/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations returns the schema migrations of this backend.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic("sqlite: embedded migrations: " + err.Error()) // cannot happen: the directory is embedded
	}
	return sub
}

// Options tune Open. The zero value is the production default.
type Options struct {
	// BusyTimeout is how long a connection waits for a lock another
	// process holds (default 10 s).
	BusyTimeout time.Duration
	// MaxReaders bounds the read pool (default: 4 or the CPU count, the
	// larger).
	MaxReaders int
}

// Open opens (creating if needed) the database file at path and applies any
// pending migrations. In-memory databases are refused: the writer and the
// read pool must see the same database, so tests use a temporary file.
func Open(ctx context.Context, path string) (*sqlstore.Store, error) {
	return OpenOptions(ctx, path, Options{})
}

// OpenOptions is Open with options.
func OpenOptions(ctx context.Context, path string, o Options) (*sqlstore.Store, error) {
	if path == "" || strings.Contains(path, ":memory:") || strings.Contains(path, "mode=memory") {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "sqlite: a database file path is required (in-memory databases are not supported)")
	}
	if strings.ContainsAny(path, "?#") {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "sqlite: database path must not contain '?' or '#'")
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 10 * time.Second
	}
	if o.MaxReaders <= 0 {
		o.MaxReaders = max(4, runtime.NumCPU())
	}

	common := url.Values{}
	common.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", o.BusyTimeout.Milliseconds()))
	common.Add("_pragma", "foreign_keys(1)")
	common.Add("_pragma", "synchronous(NORMAL)")

	wq := url.Values{}
	for k, v := range common {
		wq[k] = append([]string(nil), v...)
	}
	wq.Add("_pragma", "journal_mode(WAL)")
	wq.Set("_txlock", "immediate")
	write, err := sql.Open("sqlite", path+"?"+wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	write.SetConnMaxIdleTime(0)

	d := Dialect()
	if _, err := sqlstore.Migrate(ctx, write, d, Migrations()); err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlite: migrate %s: %w", path, err)
	}

	rq := common
	rq.Add("_pragma", "query_only(1)")
	read, err := sql.Open("sqlite", path+"?"+rq.Encode())
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	read.SetMaxOpenConns(o.MaxReaders)
	read.SetMaxIdleConns(o.MaxReaders)
	read.SetConnMaxIdleTime(5 * time.Minute)

	s := sqlstore.New(d, read, write, nil)
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Dialect is the SQLite dialect: '?' placeholders, times as fixed-width
// UTC text, errors classified by SQLite's extended result codes.
func Dialect() sqlstore.Dialect {
	return sqlstore.Dialect{
		Name:       "sqlite",
		Classify:   classify,
		EncodeTime: func(t time.Time) any { return t.Format(sqlstore.SQLiteTimeLayout) },
		// One process holds the file and writes through one connection.
		SoleWriter:      true,
		CacheStatements: true,
	}
}

func classify(err error) sqlstore.ErrorKind {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return sqlstore.ErrOther
	}
	switch e.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return sqlstore.ErrUnique
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return sqlstore.ErrForeignKey
	}
	switch e.Code() & 0xff {
	case sqlite3.SQLITE_CONSTRAINT:
		return sqlstore.ErrConstraint
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return sqlstore.ErrBusy
	}
	return sqlstore.ErrOther
}
