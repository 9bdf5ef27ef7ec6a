// Package storetest holds the conformance suite every gpurent.Store backend
// must pass, and helpers that give other packages' tests a real store:
// SQLite on a temporary file, or PostgreSQL in a fresh database.
//
// Nothing here is mocked. PostgreSQL tests need GPURENT_TEST_POSTGRES_DSN
// (an admin DSN, e.g.
// postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable);
// without it, or with the server unreachable, they fail saying so.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/store/postgres"
	"github.com/gpurent/gpurent/internal/store/sqlite"
	"github.com/gpurent/gpurent/internal/testtier"
)

// PostgresDSNEnv names the environment variable holding the admin DSN.
const PostgresDSNEnv = "GPURENT_TEST_POSTGRES_DSN"

// SQLite returns a store on a new SQLite file in a temporary directory,
// closed when the test ends.
func SQLite(t testing.TB) gpurent.Store {
	t.Helper()
	return SQLiteAt(t, filepath.Join(t.TempDir(), "gpurent.db"))
}

// SQLiteAt opens the SQLite store at path, closed when the test ends.
func SQLiteAt(t testing.TB, path string) gpurent.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("open SQLite store at %s: %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close SQLite store: %v", err)
		}
	})
	return s
}

// Postgres returns a store on a new PostgreSQL database with a random name,
// closed and dropped when the test ends.
func Postgres(t testing.TB) gpurent.Store {
	t.Helper()
	dsn := PostgresDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open PostgreSQL store: %v", err)
	}
	// Cleanups run last-in first-out: this close runs before the drop
	// PostgresDSN registered.
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close PostgreSQL store: %v", err)
		}
	})
	return s
}

// PostgresDSN creates an empty PostgreSQL database with a random name and
// returns a DSN for it; the database is dropped when the test ends. It fails
// the test if GPURENT_TEST_POSTGRES_DSN is unset or the server unreachable.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	testtier.Require(t, "PostgreSQL")
	admin := os.Getenv(PostgresDSNEnv)
	if admin == "" {
		t.Fatalf("PostgreSQL is required: %s is not set (want an admin DSN such as "+
			"postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable); "+
			"`make test` installs and starts PostgreSQL and sets it", PostgresDSNEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("PostgreSQL is required but unreachable through %s: %v; "+
			"`make test` installs and starts PostgreSQL", PostgresDSNEnv, err)
	}
	defer conn.Close(context.Background())

	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random database name: %v", err)
	}
	name := "gpurent_test_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("drop test database %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	dsn, err := withDatabase(admin, name)
	if err != nil {
		t.Fatalf("%s: %v", PostgresDSNEnv, err)
	}
	return dsn
}

// withDatabase returns dsn pointing at database name instead.
func withDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", err
		}
		u.Path = "/" + name
		u.RawPath = ""
		return u.String(), nil
	}
	// key=value form: a later key overrides an earlier one.
	return dsn + " dbname=" + name, nil
}
