package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/store/sqlite"
	"github.com/gpurent/gpurent/internal/store/sqlstore"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) gpurent.Store { return storetest.SQLite(t) })
}

func migrationCount(t *testing.T, path string) (int, string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	var last string
	if err := db.QueryRow(`SELECT count(*), max(applied_at) FROM schema_migrations`).Scan(&n, &last); err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	return n, last
}

// TestReopenKeepsDataAndSkipsMigrations reopens an existing file: the data
// is there and no migration runs again.
func TestReopenKeepsDataAndSkipsMigrations(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "gpurent.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	a := &gpurent.Account{Email: "keep@example.com", Role: gpurent.RoleCustomer}
	if err := s.CreateAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	n1, at1 := migrationCount(t, path)
	ms, err := sqlstore.ParseMigrations(sqlite.Migrations())
	if err != nil {
		t.Fatal(err)
	}
	if n1 != len(ms) {
		t.Fatalf("%d migrations recorded, want %d", n1, len(ms))
	}

	s, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	got, err := s.AccountByID(ctx, a.ID)
	if err != nil {
		t.Fatalf("account after reopen: %v", err)
	}
	if got.Email != a.Email {
		t.Fatalf("account after reopen: %+v", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	n2, at2 := migrationCount(t, path)
	if n2 != n1 || at2 != at1 {
		t.Fatalf("reopen re-ran migrations: %d rows at %s, before %d at %s", n2, at2, n1, at1)
	}

	// Migrate itself reports nothing to apply.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	applied, err := sqlstore.Migrate(ctx, db, sqlite.Dialect(), sqlite.Migrations())
	if err != nil || len(applied) != 0 {
		t.Fatalf("second Migrate applied %v, err %v; want nothing", applied, err)
	}
}

// TestRefusesNewerSchema: a database migrated by a newer release is not
// touched by an older one.
func TestRefusesNewerSchema(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "gpurent.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, '9999_future.sql', 'x')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err := sqlite.Open(ctx, path); err == nil {
		s.Close()
		t.Fatalf("opened a database with a newer schema")
	}
}

func TestRejectsMemory(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file::memory:?cache=shared"} {
		if s, err := sqlite.Open(context.Background(), p); err == nil {
			s.Close()
			t.Fatalf("Open(%q) succeeded; in-memory databases cannot share a writer and a read pool", p)
		} else if !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Fatalf("Open(%q): %v, want an invalid-argument error", p, err)
		}
	}
}

// TestPragmas checks the connection settings the store relies on.
func TestPragmas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gpurent.db")
	s := storetest.SQLiteAt(t, path)
	_ = s
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode %q (%v), want wal", mode, err)
	}
	// Foreign keys are on for the store's connections: a dangling
	// reference is refused.
	err = s.CreateToken(t.Context(), &gpurent.Token{AccountID: "acc-none", Hash: "h", Kind: gpurent.TokenAPI})
	if !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Fatalf("token of a missing account: %v, want refused by a foreign key", err)
	}
}

func BenchmarkCreateAllocation(b *testing.B) {
	storetest.BenchCreateAllocation(b, storetest.SQLite(b))
}

func BenchmarkListHosts(b *testing.B) {
	storetest.BenchListHosts(b, storetest.SQLite(b))
}

func BenchmarkLatestSummaries(b *testing.B) {
	storetest.BenchLatestSummaries(b, storetest.SQLite(b))
}
