package metering_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/rating"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// TestStatement: a run across midnight at the month's end is split between
// the two months' statements; lines group seconds by rate and round once.
func TestStatement(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, storetest.SQLite(t))
	book := defaultBook(t)
	loc, err := rating.LoadBillingZone()
	if err != nil {
		t.Fatal(err)
	}
	// Monday 2026-11-30 23:30 to Tuesday 00:30 in Chengdu: off-peak, 30
	// minutes in each month; then Tuesday 10:00–11:00, peak.
	s1, e1 := time.Date(2026, 11, 30, 23, 30, 0, 0, loc), time.Date(2026, 12, 1, 0, 30, 0, 0, loc)
	s2, e2 := time.Date(2026, 12, 1, 10, 0, 0, 0, loc), time.Date(2026, 12, 1, 11, 0, 0, 0, loc)
	w.now = time.Date(2026, 12, 2, 0, 0, 0, 0, loc)
	ev := func(id string, s, e time.Time) agentproto.RunEvent {
		return agentproto.RunEvent{ID: id, Kind: agentproto.RunEnded, InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: s, EndedAt: &e}
	}
	if _, err := w.svc.Ingest(ctx, w.host, []agentproto.RunEvent{ev("a", s1, e1), ev("b", s2, e2)}, nil); err != nil {
		t.Fatal(err)
	}
	acc, err := w.st.AccountByID(ctx, w.in.AccountID)
	if err != nil {
		t.Fatal(err)
	}
	nov, err := w.svc.Statement(ctx, book, acc, time.Date(2026, 11, 15, 0, 0, 0, 0, loc))
	if err != nil {
		t.Fatal(err)
	}
	// 2 GPUs x 0.5 h x 2,432 fen (off-peak H100) = 2,432.
	if len(nov.Lines) != 1 || nov.Lines[0].Window != "off-peak" || nov.Lines[0].Seconds != 1800 || nov.TotalFen != 2432 || nov.Open {
		t.Fatalf("November: %+v", nov)
	}
	dec, err := w.svc.Statement(ctx, book, acc, s2)
	if err != nil {
		t.Fatal(err)
	}
	// Peak hour 2 x 3,473 = 6,946, plus the other 30 off-peak minutes.
	if len(dec.Lines) != 2 || dec.Lines[0].Window != "peak" || dec.Lines[0].Fen != 6946 || dec.Lines[1].Fen != 2432 ||
		dec.TotalFen != 9378 || !dec.Open || !dec.Month.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, loc)) {
		t.Fatalf("December: %+v", dec)
	}
	jan, err := w.svc.Statement(ctx, book, acc, time.Date(2027, 1, 5, 0, 0, 0, 0, loc))
	if err != nil || len(jan.Lines) != 0 || jan.TotalFen != 0 {
		t.Fatalf("January: %+v %v", jan, err)
	}

	// November is not final half a day into December; it is two days in.
	w.now = time.Date(2026, 12, 1, 12, 0, 0, 0, loc)
	if ok, err := w.svc.Finalize(ctx, book, acc, nov.Month); err != nil || ok {
		t.Fatalf("finalized too early: %v %v", ok, err)
	}
	w.now = time.Date(2026, 12, 3, 0, 0, 0, 0, loc)
	if ok, err := w.svc.Finalize(ctx, book, acc, nov.Month); err != nil || !ok {
		t.Fatalf("finalize: %v %v", ok, err)
	}
	if ok, err := w.svc.Finalize(ctx, book, acc, nov.Month); err != nil || ok {
		t.Fatalf("finalized twice: %v %v", ok, err)
	}
	// A late report of a November run (Monday 20:00–21:00, peak: 6,946):
	// November stays as it was; December carries the correction.
	late := agentproto.RunEvent{ID: "late", Kind: agentproto.RunEnded, InstanceID: w.in.ID, AllocationID: w.alloc.ID,
		StartedAt: time.Date(2026, 11, 30, 20, 0, 0, 0, loc)}
	lateEnd := time.Date(2026, 11, 30, 21, 0, 0, 0, loc)
	late.EndedAt = &lateEnd
	if _, err := w.svc.Ingest(ctx, w.host, []agentproto.RunEvent{late}, nil); err != nil {
		t.Fatal(err)
	}
	nov2, err := w.svc.Statement(ctx, book, acc, nov.Month)
	if err != nil || !nov2.Final || nov2.TotalFen != 2432 || len(nov2.Lines) != 1 {
		t.Fatalf("final November after a late run: %+v %v", nov2, err)
	}
	dec2, err := w.svc.Statement(ctx, book, acc, s2)
	if err != nil || dec2.TotalFen != 9378+6946 || dec2.Lines[len(dec2.Lines)-1].Window != "correction" ||
		dec2.Lines[len(dec2.Lines)-1].Fen != 6946 {
		t.Fatalf("December with the correction: %+v %v", dec2, err)
	}
}
