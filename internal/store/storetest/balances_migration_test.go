package storetest

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/ledger"
	"github.com/gpurent/gpurent/internal/store/postgres"
	"github.com/gpurent/gpurent/internal/store/sqlite"
)

// dropKeptBalances puts a database back where migration 11 found it: the
// ledger's log, without the kept balances.
const dropKeptBalances = `DROP TABLE ledger_balances; DELETE FROM schema_migrations WHERE version = 11`

// TestBalancesBackfillSQLite: migration 11 rebuilds the kept balances from
// the postings of a ledger written before it.
func TestBalancesBackfillSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gpurent.db")
	s, err := sqlite.Open(ctx, path)
	must(t, err, "open")
	customers, want := writeLedgerHistory(t, s)
	must(t, s.Close(), "close")
	db, err := sql.Open("sqlite", path)
	must(t, err, "open raw")
	_, err = db.ExecContext(ctx, dropKeptBalances)
	must(t, err, "drop kept balances")
	must(t, db.Close(), "close raw")
	checkBackfill(t, SQLiteAt(t, path), customers, want)
}

// TestBalancesBackfillPostgres is TestBalancesBackfillSQLite on PostgreSQL.
func TestBalancesBackfillPostgres(t *testing.T) {
	ctx := context.Background()
	dsn := PostgresDSN(t)
	s, err := postgres.Open(ctx, dsn)
	must(t, err, "open")
	customers, want := writeLedgerHistory(t, s)
	must(t, s.Close(), "close")
	conn, err := pgx.Connect(ctx, dsn)
	must(t, err, "connect raw")
	_, err = conn.Exec(ctx, dropKeptBalances)
	must(t, err, "drop kept balances")
	must(t, conn.Close(ctx), "close raw")
	s2, err := postgres.Open(ctx, dsn)
	must(t, err, "reopen")
	t.Cleanup(func() { s2.Close() })
	checkBackfill(t, s2, customers, want)
}

// writeLedgerHistory posts every kind of operation for two customers and
// answers their balances.
func writeLedgerHistory(t *testing.T, s gpurent.Store) ([]string, map[string]*gpurent.LedgerBalances) {
	t.Helper()
	ctx := t.Context()
	a := SeedAccount(t, s, "backfill-a@example.com").ID
	b := SeedAccount(t, s, "backfill-b@example.com").ID
	grant := func(c, key string, credit ledger.Kind, fen int64, hours int) *gpurent.LedgerTx {
		return &gpurent.LedgerTx{Op: string(ledger.OpGrant), Key: key, Customer: c, At: ledgerAt(1), AmountFen: fen,
			Credit: string(credit), ExpiresAt: ledgerAt(1 + hours)}
	}
	storage := &gpurent.LedgerTx{Op: string(ledger.OpDebit), Key: "b-storage", Customer: b, At: ledgerAt(2), AmountFen: 700,
		Charge: string(ledger.ChargeStorage)}
	for _, tx := range []*gpurent.LedgerTx{
		topUp(a, "a-top", 10_000),
		grant(a, "a-promo", ledger.KindPromo, 500, 5),
		grant(a, "a-sla", ledger.KindSLA, 300, 48),
		grant(a, "a-promo-2", ledger.KindPromo, 200, 30),
		debit(a, "a-debit", 650, ledgerAt(3)),
		{Op: string(ledger.OpExpire), Key: ledger.ExpireKey("a-promo-2"), Customer: a, At: ledgerAt(40), Lot: "a-promo-2"},
		topUp(b, "b-top", 400),
		storage,
		topUp(b, "b-top-2", 100),
	} {
		_, err := s.PostLedger(ctx, tx)
		must(t, err, "post "+tx.Key)
	}
	want := map[string]*gpurent.LedgerBalances{}
	for _, c := range []string{a, b} {
		bal, err := s.LedgerBalances(ctx, c)
		must(t, err, "balances")
		want[c] = bal
	}
	if want[b].ReceivableFen != -200 || want[a].CashFen != 10_000 || len(want[a].Lots) != 1 || want[a].Lots[0].BalanceFen != 150 {
		t.Fatalf("history did not reach arrears, spent and expired lots and a partly spent one: %+v %+v", want[a], want[b])
	}
	return []string{a, b}, want
}

// checkBackfill holds the rebuilt balances to those kept before.
func checkBackfill(t *testing.T, s gpurent.Store, customers []string, want map[string]*gpurent.LedgerBalances) {
	t.Helper()
	for _, c := range customers {
		got, err := s.LedgerBalances(t.Context(), c)
		must(t, err, "balances after the backfill")
		same(t, c+" balances rebuilt by migration 11", got, want[c])
	}
	checkBalancesAreSums(t, s, customers...)
	replayStore(t, s, customers...)
}

// TestLedgerAppendOnly: the database itself refuses to change or remove a
// ledger transaction, on both backends.
func TestLedgerAppendOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gpurent.db")
	s, err := sqlite.Open(ctx, path)
	must(t, err, "open")
	writeLedgerHistory(t, s)
	must(t, s.Close(), "close")
	db, err := sql.Open("sqlite", path)
	must(t, err, "open raw")
	defer db.Close()
	for _, q := range []string{`UPDATE ledger_tx SET note = 'x'`, `DELETE FROM ledger_tx`} {
		if _, err := db.ExecContext(ctx, q); err == nil {
			t.Errorf("SQLite let %q through", q)
		}
	}

	dsn := PostgresDSN(t)
	ps, err := postgres.Open(ctx, dsn)
	must(t, err, "open postgres")
	writeLedgerHistory(t, ps)
	must(t, ps.Close(), "close postgres")
	conn, err := pgx.Connect(ctx, dsn)
	must(t, err, "connect raw")
	defer conn.Close(ctx)
	for _, q := range []string{`UPDATE ledger_tx SET note = 'x'`, `DELETE FROM ledger_tx`, `TRUNCATE ledger_tx CASCADE`} {
		if _, err := conn.Exec(ctx, q); err == nil {
			t.Errorf("PostgreSQL let %q through", q)
		}
	}
}
