package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/store/postgres"
	"github.com/gpurent/gpurent/internal/store/sqlstore"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) gpurent.Store { return storetest.Postgres(t) })
}

// TestConcurrentOpenMigratesOnce starts several replicas at once on an
// empty database: the advisory lock lets one apply the migrations, the
// others find them applied.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	const replicas = 6
	stores := make([]gpurent.Store, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), dsn)
			errs[i] = err
			if err == nil {
				stores[i] = s
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n, distinct int
	if err := conn.QueryRow(t.Context(), `SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	ms, err := sqlstore.ParseMigrations(postgres.Migrations())
	if err != nil {
		t.Fatal(err)
	}
	if n != len(ms) || distinct != len(ms) {
		t.Fatalf("schema_migrations has %d rows (%d versions), want %d", n, distinct, len(ms))
	}
	// Every replica works on the one schema.
	if err := stores[replicas-1].CreateAccount(t.Context(), &gpurent.Account{Email: "x@example.com"}); err != nil {
		t.Fatal(err)
	}
	if _, err := stores[0].AccountByEmail(t.Context(), "X@example.com"); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkCreateAllocation(b *testing.B) {
	storetest.BenchCreateAllocation(b, storetest.Postgres(b))
}

func BenchmarkListHosts(b *testing.B) {
	storetest.BenchListHosts(b, storetest.Postgres(b))
}

func BenchmarkLatestSummaries(b *testing.B) {
	storetest.BenchLatestSummaries(b, storetest.Postgres(b))
}
