package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

func testSpendLimits(t *testing.T, s gpurent.Store) {
	ctx := context.Background()
	acc := SeedAccount(t, s, "capped@example.com")
	if l, err := s.SpendLimits(ctx, acc.ID); err != nil || l != (gpurent.SpendLimits{}) {
		t.Fatalf("a new account's limits: %+v %v", l, err)
	}
	want := gpurent.SpendLimits{DailyFen: 10_000, MonthlyFen: 200_000, StopRunning: true}
	if err := s.SetSpendLimits(ctx, acc.ID, want); err != nil {
		t.Fatal(err)
	}
	if l, err := s.SpendLimits(ctx, acc.ID); err != nil || l != want {
		t.Fatalf("limits: %+v %v, want %+v", l, err, want)
	}
	if err := s.SetSpendLimits(ctx, acc.ID, gpurent.SpendLimits{DailyFen: -1}); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("negative cap: %v", err)
	}
	if err := s.SetSpendLimits(ctx, "acc-none", want); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("unknown account: %v", err)
	}
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	post := func(key, op string, at time.Time, fen int64) {
		t.Helper()
		tx := &gpurent.LedgerTx{Op: op, Key: key, Customer: acc.ID, At: at, AmountFen: fen}
		if op == "debit" {
			tx.Charge = "compute"
		}
		if _, err := s.PostLedger(ctx, tx); err != nil {
			t.Fatal(err)
		}
	}
	post("top", "topup", day, 100_000)
	post("d1", "debit", day.Add(time.Hour), 300)
	post("d2", "debit", day.Add(23*time.Hour), 200)
	post("d3", "debit", day.Add(24*time.Hour), 999) // the next day
	if got, err := s.DebitsBetween(ctx, acc.ID, day, day.Add(24*time.Hour)); err != nil || got != 500 {
		t.Errorf("debits of the day: %d %v, want 500 (top-ups and the next day left out)", got, err)
	}
	if got, err := s.DebitsBetween(ctx, "acc-none", day, day.Add(time.Hour)); err != nil || got != 0 {
		t.Errorf("no debits: %d %v", got, err)
	}
	fs := &gpurent.FinalStatement{AccountID: acc.ID, Month: "2026-11", TotalFen: 500, Lines: []byte(`[{"fen":500}]`)}
	if err := s.SaveFinalStatement(ctx, fs); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveFinalStatement(ctx, &gpurent.FinalStatement{AccountID: acc.ID, Month: "2026-11", TotalFen: 1, Lines: []byte(`[]`)}); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("a final statement changed: %v", err)
	}
	if got, err := s.FinalStatement(ctx, acc.ID, "2026-11"); err != nil || got.TotalFen != 500 || string(got.Lines) != `[{"fen":500}]` ||
		!got.FinalizedAt.Equal(fs.FinalizedAt) {
		t.Errorf("final statement: %+v %v", got, err)
	}
	if _, err := s.FinalStatement(ctx, acc.ID, "2026-10"); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("no statement: %v", err)
	}
	ds, err := s.ListDebits(ctx, day, day.Add(48*time.Hour))
	if err != nil || len(ds) != 3 || ds[0].Key != "d1" || ds[2].AmountFen != 999 || ds[0].Customer != acc.ID || !ds[1].At.Equal(day.Add(23*time.Hour)) ||
		ds[0].RevenueFen != 300 {
		t.Errorf("debits: %+v %v", ds, err)
	}
}
