// Package postgres opens the PostgreSQL backend of the store, through pgx's
// database/sql driver. Transactions run at READ COMMITTED: the store's rules
// are enforced by constraints and conditional updates, not by isolation.
// Migrations are serialised across concurrently starting replicas with a
// transaction-scoped advisory lock.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/gpurent/gpurent/internal/store/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations returns the schema migrations of this backend.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic("postgres: embedded migrations: " + err.Error()) // cannot happen: the directory is embedded
	}
	return sub
}

// migrationLockKey is the advisory lock key migrations take ("gpurent" in
// ASCII), so that concurrent Opens apply them one at a time.
const migrationLockKey = 0x67707572656e74

// Options tune Open. The zero value is the production default.
type Options struct {
	// MaxConns bounds the connection pool (default 20). Keep the sum over
	// every control-plane replica under the server's max_connections.
	MaxConns int
}

// Store is the PostgreSQL store: the shared SQL store, plus the host change
// feed (gpurent.HostWatcher) that LISTEN/NOTIFY gives.
type Store struct {
	*sqlstore.Store
	cfg *pgx.ConnConfig
}

// Open connects to the database at dsn (a postgres:// URL or key=value
// string) and applies any pending migrations.
func Open(ctx context.Context, dsn string) (*Store, error) {
	return OpenOptions(ctx, dsn, Options{})
}

// OpenOptions is Open with options.
func OpenOptions(ctx context.Context, dsn string, o Options) (*Store, error) {
	if o.MaxConns <= 0 {
		o.MaxConns = 20
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse dsn: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(o.MaxConns)
	db.SetMaxIdleConns(o.MaxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	db.SetConnMaxLifetime(time.Hour)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: connect to %s: %w", safeTarget(cfg), err)
	}
	d := Dialect()
	if _, err := sqlstore.Migrate(ctx, db, d, Migrations()); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: migrate %s: %w", safeTarget(cfg), err)
	}
	return &Store{Store: sqlstore.New(d, db, db, nil), cfg: cfg}, nil
}

// safeTarget names the server and database without the password.
func safeTarget(cfg *pgx.ConnConfig) string {
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
}

// Dialect is the PostgreSQL dialect: $n placeholders, times as timestamptz,
// errors classified by SQLSTATE.
func Dialect() sqlstore.Dialect {
	return sqlstore.Dialect{
		Name:                 "postgres",
		NumberedPlaceholders: true,
		Classify:             classify,
		EncodeTime:           func(t time.Time) any { return t },
		MigrationLock:        fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", int64(migrationLockKey)),
		NotifyHost:           "SELECT pg_notify('" + hostChannel + "', ?)",
		RowLock:              "FOR NO KEY UPDATE",
		StatementAtomicInTx:  true,
		ModifyingCTEs:        true,
		CastValues:           true,
	}
}

func classify(err error) sqlstore.ErrorKind {
	var e *pgconn.PgError
	if !errors.As(err, &e) {
		return sqlstore.ErrOther
	}
	switch e.Code {
	case "23505": // unique_violation
		return sqlstore.ErrUnique
	case "23503": // foreign_key_violation
		return sqlstore.ErrForeignKey
	case "40001", "40P01": // serialization_failure, deadlock_detected
		return sqlstore.ErrRetry
	case "55P03": // lock_not_available
		return sqlstore.ErrBusy
	}
	if strings.HasPrefix(e.Code, "23") { // other integrity constraint violations
		return sqlstore.ErrConstraint
	}
	return sqlstore.ErrOther
}
