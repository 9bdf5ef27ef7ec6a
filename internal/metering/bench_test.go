package metering_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, to seed history
	_ "modernc.org/sqlite"             // the "sqlite" driver, to seed history

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/metering"
	"github.com/gpurent/gpurent/internal/rating"
	"github.com/gpurent/gpurent/internal/store/postgres"
	"github.com/gpurent/gpurent/internal/store/sqlite"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// benchStore is a store opened for a benchmark, with a second handle on
// the same database (raw) through which history is seeded in bulk, and the
// backend's encoding of a time column.
type benchStore struct {
	gpurent.Store
	raw    *sql.DB
	encode func(time.Time) any
	pg     bool
}

// benchStores are the backends every benchmark here runs on.
var benchStores = []struct {
	name string
	open func(testing.TB) *benchStore
}{{"sqlite", openBenchSQLite}, {"postgres", openBenchPostgres}}

func openBenchSQLite(t testing.TB) *benchStore {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gpurent.db")
	st := storetest.SQLiteAt(t, path)
	raw, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	raw.SetMaxOpenConns(1)
	t.Cleanup(func() { raw.Close() })
	return &benchStore{Store: st, raw: raw, encode: sqlite.Dialect().EncodeTime}
}

func openBenchPostgres(t testing.TB) *benchStore {
	t.Helper()
	dsn := storetest.PostgresDSN(t)
	st, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("open PostgreSQL store: %v", err)
	}
	// Cleanups run last-in first-out: these closes run before the drop
	// PostgresDSN registered.
	t.Cleanup(func() { st.Close() })
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("open PostgreSQL: %v", err)
	}
	t.Cleanup(func() { raw.Close() })
	return &benchStore{Store: st, raw: raw, encode: postgres.Dialect().EncodeTime, pg: true}
}

// History a benchmark starts from: a production-sized database rather than
// an empty one. An empty one is unrealistic, and on PostgreSQL misleading:
// the plans cached while the tables are tiny (sequential scans) stay in use
// as they grow, until an autovacuum ANALYZE (minutes away) replans them,
// which a running control plane gets long before its tables are this size.
const (
	seedAccounts       = 1000 // other customers, one instance and allocation each
	seedRunsPerAccount = 50   // ended and settled runs (two events each)
	seedDebitsPerRun   = 2    // ledger debits per run
)

// seedHistory bulk-loads the history of seedAccounts other customers,
// consistent the way the store keeps it: for each a topup and its usage
// runs, each run's two events and ledger debits, the transactions'
// postings and the balances they sum to. Then PostgreSQL's statistics are
// brought up to date (ANALYZE), as autovacuum keeps them in production;
// SQLite has none to keep unless asked, and the store never asks.
func seedHistory(b *testing.B, st *benchStore, hostID string, at time.Time) {
	b.Helper()
	ctx := context.Background()
	// Times, host and numbers are bound; PostgreSQL needs the time typed.
	ts, yes := "?", "1"
	if st.pg {
		ts, yes = "CAST(? AS TIMESTAMPTZ)", "TRUE"
	}
	t := st.encode(at.Add(-30 * 24 * time.Hour))
	runs := seedAccounts * seedRunsPerAccount
	// n(i) counts 1..100,000 on both backends; acct is i's customer.
	const nums = `WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000) `
	acct := fmt.Sprintf("((i %% %d) + 1)", seedAccounts)
	stmts := []struct {
		q    string
		args []any
	}{
		{nums + `INSERT INTO accounts (id, email, name, role, password_hash, balance_fen, created_at)
SELECT 'seed-acct-' || i, 'seed' || i || '@example.com', 'seed', 'customer', 'x', 0, ` + ts + fmt.Sprintf(` FROM n WHERE i <= %d`, seedAccounts),
			[]any{t}},
		{nums + `INSERT INTO instances (id, account_id, name, image, type_id, gpu_count, zone_id, host_id, state, state_reason, plan,
cpu_milli, memory_mib, volume_id, idempotency_key, request_hash, version, created_at, updated_at)
SELECT 'seed-inst-' || i, 'seed-acct-' || i, 'seed', 'busybox', 'h100-80g-sxm', 1, 'z1', CAST(? AS TEXT), 'stopped', '', 'hourly',
8000, 65536, '', '', '', 1, ` + ts + `, ` + ts + fmt.Sprintf(` FROM n WHERE i <= %d`, seedAccounts), []any{hostID, t, t}},
		{nums + `INSERT INTO allocations (id, instance_id, host_id, started_at, ended_at, start_reason, end_reason)
SELECT 'seed-alloc-' || i, 'seed-inst-' || i, CAST(? AS TEXT), ` + ts + `, ` + ts + fmt.Sprintf(`, 'start', 'stop' FROM n WHERE i <= %d`, seedAccounts),
			[]any{hostID, t, t}},
		{nums + `INSERT INTO usage_runs (id, instance_id, allocation_id, host_id, account_id, type_id, gpu_count, started_at, ended_at,
end_reason, last_seen_at, debited_fen, settled)
SELECT 'seed-alloc-' || ` + acct + ` || '@' || i, 'seed-inst-' || ` + acct + `, 'seed-alloc-' || ` + acct + `, CAST(? AS TEXT),
'seed-acct-' || ` + acct + `, 'h100-80g-sxm', 1, ` + ts + `, ` + ts + `, 'reported', ` + ts + fmt.Sprintf(`, %d, %s FROM n WHERE i <= %d`,
			100*seedDebitsPerRun, yes, runs), []any{hostID, t, t, t}},
		{`INSERT INTO usage_events (id, host_id, kind, instance_id, allocation_id, started_at, ended_at, payload_hash, received_at)
SELECT 's-' || id, host_id, 'run_started', instance_id, allocation_id, started_at, NULL, 'seed', started_at FROM usage_runs
WHERE id LIKE 'seed-%' UNION ALL
SELECT 'e-' || id, host_id, 'run_ended', instance_id, allocation_id, started_at, ended_at, 'seed', ended_at FROM usage_runs
WHERE id LIKE 'seed-%'`, nil},
		{nums + `INSERT INTO ledger_tx (key, op, customer, at, amount_fen, charge, credit, expires_at, lot, actor, note, created_at)
SELECT 'seed-topup-' || i, 'topup', 'seed-acct-' || i, ` + ts + `, 100000000, '', '', NULL, '', 'seed', '', ` + ts +
			fmt.Sprintf(` FROM n WHERE i <= %d`, seedAccounts), []any{t, t}},
		{nums + `INSERT INTO ledger_tx (key, op, customer, at, amount_fen, charge, credit, expires_at, lot, actor, note, created_at)
SELECT 'usage:seed-' || i, 'debit', 'seed-acct-' || ` + acct + `, ` + ts + `, 100, 'compute', '', NULL, '', '', 'seed', ` + ts +
			fmt.Sprintf(` FROM n WHERE i <= %d`, runs*seedDebitsPerRun), []any{t, t}},
		// A topup: clearing → cash; a debit: cash → revenue.
		{`INSERT INTO ledger_posting (tx_seq, idx, customer, kind, lot, amount_fen)
SELECT seq, 0, '', 'clearing', '', -amount_fen FROM ledger_tx WHERE key LIKE 'seed-topup-%' UNION ALL
SELECT seq, 1, customer, 'cash', '', amount_fen FROM ledger_tx WHERE key LIKE 'seed-topup-%' UNION ALL
SELECT seq, 0, customer, 'cash', '', -amount_fen FROM ledger_tx WHERE key LIKE 'usage:seed-%' UNION ALL
SELECT seq, 1, '', 'revenue', '', amount_fen FROM ledger_tx WHERE key LIKE 'usage:seed-%'`, nil},
		{`INSERT INTO ledger_balances (customer, kind, lot, balance_fen, expires_at)
SELECT customer, kind, lot, SUM(amount_fen), NULL FROM ledger_posting WHERE customer LIKE 'seed-acct-%' GROUP BY customer, kind, lot`, nil},
	}
	if runs*seedDebitsPerRun > 100000 {
		b.Fatalf("seed history: n counts to 100,000, not %d", runs*seedDebitsPerRun)
	}
	for _, s := range stmts {
		q := s.q
		if st.pg {
			q = numbered(q)
		}
		if _, err := st.raw.ExecContext(ctx, q, s.args...); err != nil {
			b.Fatalf("seed history: %v\n%s", err, q)
		}
	}
	if st.pg {
		if _, err := st.raw.ExecContext(ctx, `ANALYZE`); err != nil {
			b.Fatalf("seed history: analyze: %v", err)
		}
	}
}

// numbered rewrites '?' placeholders as $1, $2, ... (PostgreSQL).
func numbered(q string) string {
	out := make([]byte, 0, len(q)+16)
	k := 0
	for i := 0; i < len(q); i++ {
		if q[i] != '?' {
			out = append(out, q[i])
			continue
		}
		k++
		out = fmt.Appendf(out, "$%d", k)
	}
	return string(out)
}

// benchWorld seeds one account, one host of 8 H100s and one instance with
// an allocation a day old, on top of the history of seedAccounts other
// customers (seedHistory), and returns n run events: runs of one second,
// two seconds apart, each started and ended (so n/2 runs).
func benchWorld(b *testing.B, st *benchStore, n int) (*world, []agentproto.RunEvent) {
	b.Helper()
	ctx := context.Background()
	w := &world{st: st, now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	acc := storetest.SeedAccount(b, st, "bench@example.com")
	w.host = storetest.SeedHost(b, st, "bench-host", "h100-80g-sxm", 8)
	w.in = storetest.SeedInstance(b, st, acc.ID, "bench")
	w.alloc = &gpurent.Allocation{InstanceID: w.in.ID, HostID: w.host.ID, GPUIDs: []string{w.host.GPUs[0].ID},
		StartedAt: w.now.Add(-24 * time.Hour), StartReason: "start"}
	if err := st.CreateAllocation(ctx, w.alloc); err != nil {
		b.Fatal(err)
	}
	seedHistory(b, st, w.host.ID, w.now)
	w.svc = metering.New(metering.Config{Store: st, Now: func() time.Time { return w.now }})
	evs := make([]agentproto.RunEvent, 0, n+1)
	for i := 0; len(evs) < n; i++ {
		s := w.now.Add(-23 * time.Hour).Add(time.Duration(i) * 2 * time.Second)
		e := s.Add(time.Second)
		evs = append(evs,
			agentproto.RunEvent{ID: fmt.Sprintf("s%d", i), Kind: agentproto.RunStarted, InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: s},
			agentproto.RunEvent{ID: fmt.Sprintf("e%d", i), Kind: agentproto.RunEnded, InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: s, EndedAt: &e})
	}
	return w, evs[:n]
}

// BenchmarkIngest measures run events stored per second, in reports of 50
// events (25 runs started and ended), one transaction and one
// IngestRunEvents batch per report, into a database that holds history
// already (seedHistory).
func BenchmarkIngest(b *testing.B) {
	for _, be := range benchStores {
		b.Run(be.name, func(b *testing.B) {
			ctx := context.Background()
			w, evs := benchWorld(b, be.open(b), b.N)
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < len(evs); i += 50 {
				j := min(i+50, len(evs))
				if _, err := w.svc.Ingest(ctx, w.host, evs[i:j], nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
	}
}

// BenchmarkIngestAndPost measures the goal, usage ingest with
// ledger posting: each report of 50 events (25 runs of one second, started
// and ended) is ingested (one transaction, one batch of events), then a
// billing pass (Service.Bill) rates the 25 runs and posts their debits to
// the ledger (one transaction for the account's runs: each run's debit
// under its own key with the run's debited amount). events/s counts the
// events over both; posts/s the ledger debits. The database starts with the
// history of a thousand other customers (100,000 ledger transactions,
// 50,000 runs), its statistics up to date: the realistic setting, where
// the planner picks index lookups (see seedHistory).
func BenchmarkIngestAndPost(b *testing.B) {
	for _, be := range benchStores {
		b.Run(be.name, func(b *testing.B) {
			ctx := context.Background()
			st := be.open(b)
			w, evs := benchWorld(b, st, b.N)
			book := benchBook(b)
			if _, err := st.PostLedger(ctx, &gpurent.LedgerTx{Op: "topup", Key: "bench-seed", Customer: w.in.AccountID,
				At: w.now, AmountFen: 1 << 45}); err != nil {
				b.Fatal(err)
			}
			posts := 0
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < len(evs); i += 50 {
				j := min(i+50, len(evs))
				if _, err := w.svc.Ingest(ctx, w.host, evs[i:j], nil); err != nil {
					b.Fatal(err)
				}
				d, err := w.svc.Bill(ctx, book)
				if err != nil {
					b.Fatal(err)
				}
				posts += d.Posted
			}
			elapsed := time.Since(start).Seconds()
			b.StopTimer()
			if want := b.N / 2; posts != want {
				b.Fatalf("%d debits posted for %d runs", posts, want)
			}
			b.ReportMetric(float64(b.N)/elapsed, "events/s")
			b.ReportMetric(float64(posts)/elapsed, "posts/s")
		})
	}
}

type benchPriceBook struct{ b *rating.Book }

func (p benchPriceBook) Book(context.Context) (*rating.Book, error) { return p.b, nil }

// benchBook is the default price book of the default catalog.
func benchBook(b *testing.B) benchPriceBook {
	b.Helper()
	c, err := catalog.Default()
	if err != nil {
		b.Fatal(err)
	}
	book, err := rating.DefaultBook(c.GPUTypes, time.Unix(0, 0))
	if err != nil {
		b.Fatal(err)
	}
	return benchPriceBook{book}
}
