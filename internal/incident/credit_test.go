package incident_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/clocktest"
	"github.com/gpurent/gpurent/internal/faultrules"
	"github.com/gpurent/gpurent/internal/incident"
	"github.com/gpurent/gpurent/internal/sla"
	"github.com/gpurent/gpurent/internal/store/storetest"
	"github.com/gpurent/gpurent/internal/wallet"
)

// grants posts SLA credits to the real ledger (the wallet) and counts the
// calls.
type grants struct {
	w   *wallet.Service
	st  gpurent.Store
	mu  sync.Mutex
	fen map[string]int64 // what the ledger holds, by key
}

func (g *grants) GrantSLA(ctx context.Context, accountID string, fen int64, key string, at, expires time.Time, note string) (bool, error) {
	dup, err := g.w.GrantSLA(ctx, accountID, fen, key, at, expires, note)
	if err != nil {
		return dup, err
	}
	tx, err := g.st.LedgerTxByKey(ctx, key)
	if err != nil {
		return dup, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fen[key] = tx.AmountFen
	return dup, nil
}

// world is an instance that ran two hours from t0 on one H100 and was
// charged 5000 fen for it.
type world struct {
	st    gpurent.Store
	svc   *incident.Service
	g     *grants
	clk   *clocktest.Clock
	host  *gpurent.Host
	in    *gpurent.Instance
	t0    time.Time
	alloc *gpurent.Allocation
}

const hourlyFen = 600 // the test's price of one H100 for an hour

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := t.Context()
	st := storetest.SQLite(t)
	storetest.SeedCatalog(t, st)
	acc := storetest.SeedAccount(t, st, "lab@example.com")
	host := storetest.SeedHost(t, st, "n1", "h100-80g-sxm", 2)
	in := storetest.SeedInstance(t, st, acc.ID, "train")
	// 2026-10-31 10:00 UTC is 18:00 in Shanghai: the month ends six hours later.
	t0 := time.Date(2026, 10, 31, 10, 0, 0, 0, time.UTC)
	alloc := &gpurent.Allocation{InstanceID: in.ID, HostID: host.ID, GPUIDs: []string{host.GPUs[0].ID}, StartedAt: t0, StartReason: "start"}
	if err := st.CreateAllocation(ctx, alloc); err != nil {
		t.Fatal(err)
	}
	end := t0.Add(2 * time.Hour)
	run := &gpurent.UsageRun{AccountID: acc.ID, TypeID: "h100-80g-sxm", GPUCount: 1}
	evs := []gpurent.RunEvent{
		{ID: "r-start", HostID: host.ID, Kind: gpurent.RunStarted, InstanceID: in.ID, AllocationID: alloc.ID, StartedAt: t0},
		{ID: "r-end", HostID: host.ID, Kind: gpurent.RunEnded, InstanceID: in.ID, AllocationID: alloc.ID, StartedAt: t0, EndedAt: &end},
	}
	if _, err := st.IngestRunEvents(ctx, evs, []string{"h1", "h2"}, []*gpurent.UsageRun{run, run}, end); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PostLedger(ctx, &gpurent.LedgerTx{Op: "topup", Key: "seed", Customer: acc.ID, At: t0, AmountFen: 100_000}); err != nil {
		t.Fatal(err)
	}
	runs, err := st.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: in.ID})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %+v, %v", runs, err)
	}
	res, err := st.PostRunDebits(ctx, []gpurent.RunDebit{{RunID: runs[0].ID, Settle: true, Tx: &gpurent.LedgerTx{Op: "debit",
		Key: "usage:test", Customer: acc.ID, At: end, AmountFen: 5000, Charge: "compute"}}})
	if err != nil || res[0] != nil {
		t.Fatalf("debit: %v %v", res, err)
	}
	rules, err := faultrules.DefaultRules()
	if err != nil {
		t.Fatal(err)
	}
	loc, err := sla.LoadZone()
	if err != nil {
		t.Fatal(err)
	}
	g := &grants{st: st, fen: map[string]int64{}}
	w := &world{st: st, g: g, clk: clocktest.New(t0.Add(3 * time.Hour)), host: host, in: in, t0: t0, alloc: alloc}
	g.w = wallet.New(wallet.Config{Store: st, Now: w.clk.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	w.svc = incident.New(incident.Config{Store: st, Rules: rules, Terms: sla.DefaultTerms(), Credits: w.g, Location: loc,
		Prices: flatPrice(hourlyFen),
		Now:    w.clk.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return w
}

// incidentAt records a resolved host fault of the instance's GPU.
func (w *world) incidentAt(t *testing.T, from, to time.Time) *gpurent.Incident {
	t.Helper()
	inc := &gpurent.Incident{HostID: w.host.ID, GPUID: w.host.GPUs[0].ID, InstanceID: w.in.ID, AccountID: w.in.AccountID,
		Class: gpurent.FaultReset, Attribution: gpurent.AttrHost, Cause: "Xid 62", State: gpurent.IncidentResolved,
		StartedAt: from, EndedAt: &to}
	if err := w.st.CreateIncident(t.Context(), inc); err != nil {
		t.Fatal(err)
	}
	return inc
}

// TestCreditOnceAndCapped: an incident's credit is the incident credit
// (time since the power-on × the hourly price) plus the hour rule (the
// charged time of an hour down more than 6 minutes), posted once however
// many ticks run, and capped by the month's charges.
func TestCreditOnceAndCapped(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	// Down 11:00–11:10 UTC, one hour after the power-on at 10:00.
	first := w.incidentAt(t, w.t0.Add(time.Hour), w.t0.Add(70*time.Minute))
	for range 3 {
		if err := w.svc.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Incident credit: 1 h × 600 = 600; hour rule: 50 min of 600/h = 500.
	if got := w.g.fen["sla:incident:"+first.ID]; got != 1100 || len(w.g.fen) != 1 {
		t.Fatalf("grants %v, want 1100 fen for the incident once", w.g.fen)
	}
	got, err := w.st.IncidentByID(ctx, first.ID)
	if err != nil || got.CreditFen != 1100 || got.CreditKey != "sla:incident:"+first.ID {
		t.Fatalf("incident after the credit: %+v, %v", got, err)
	}
	// A second incident whose credit would pass the month's charges of
	// 5000: capped at what is left (3900).
	second := w.incidentAt(t, w.t0.Add(100*time.Minute), w.t0.Add(115*time.Minute))
	w.clk.Set(w.t0.Add(4 * time.Hour))
	if err := w.svc.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	// 1 h 40 min since the power-on = 1000; hour rule on 11:00–12:00 (down
	// 10 + 15 min of its 60... counted per incident: 15 min > 6 → 45 min
	// charged = 450): 1450, within the 3900 left.
	if got := w.g.fen["sla:incident:"+second.ID]; got != 1450 {
		t.Fatalf("second incident credited %d, want 1450", got)
	}
	third := w.incidentAt(t, w.t0.Add(116*time.Minute), w.t0.Add(119*time.Minute))
	w.clk.Set(w.t0.Add(5 * time.Hour))
	if err := w.svc.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	// 1 h 56 min = 1160 wanted; 5000 − 1100 − 1450 = 2450 left: not capped.
	if got := w.g.fen["sla:incident:"+third.ID]; got != 1160 {
		t.Fatalf("third incident credited %d, want 1160", got)
	}
	// The month is over (it ended at 16:00 UTC on the 31st): the
	// availability credit. In service 2 h, down 10+15+3 = 28 min: 76.7% →
	// the 100% tier, 5000, of which 5000 − 3710 = 1290 may still be paid.
	w.clk.Set(w.t0.Add(48 * time.Hour))
	for range 2 {
		if err := w.svc.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.g.fen["sla:month:"+w.in.ID+":2026-10"]; got != 1290 {
		t.Fatalf("month credit %d, want 1290 (grants %v)", got, w.g.fen)
	}
	var total int64
	for _, f := range w.g.fen {
		total += f
	}
	if total != 5000 {
		t.Fatalf("credits total %d fen, want the month's charges, 5000, exactly (the cap)", total)
	}
	// An October incident learnt of after the month's credit: nothing is
	// left under the cap.
	late := w.incidentAt(t, w.t0.Add(30*time.Minute), w.t0.Add(40*time.Minute))
	if err := w.svc.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := w.st.IncidentByID(ctx, late.ID); err != nil || got.CreditKey == "" || got.CreditFen != 0 {
		t.Fatalf("late incident %+v, %v: want decided at 0 fen (capped)", got, err)
	}
	if _, paid := w.g.fen["sla:incident:"+late.ID]; paid {
		t.Fatal("a credit past the cap was posted")
	}
}

// TestBurstAcrossReports: Xid 48 in one report and Xid 63 in the next are
// one burst: the second makes it drain+reset, and the incident the first
// opened is the same fault, escalated in place (one fault, one incident,
// one credit), not an earlier one to escalate to RMA.
func TestBurstAcrossReports(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	w.clk.Set(w.t0.Add(time.Hour))
	gpuID := w.host.GPUs[0].ID
	report := func(id string, xid int) {
		t.Helper()
		rep := agentproto.Report{Health: []agentproto.HealthEvent{{ID: id, UUID: gpuID, At: w.clk.Now(), Kind: "xid", Xid: xid}}}
		if acked, err := w.svc.Ingest(ctx, w.host, rep); err != nil || len(acked) != 1 {
			t.Fatalf("ingest %s: %v, %v", id, acked, err)
		}
	}
	report("e1", 48)
	w.clk.Advance(10 * time.Second)
	report("e2", 63)
	incs, err := w.st.ListIncidents(ctx, gpurent.IncidentFilter{GPUID: gpuID})
	if err != nil {
		t.Fatal(err)
	}
	var classes []gpurent.FaultClass
	for _, in := range incs {
		classes = append(classes, in.Class)
	}
	if len(incs) != 1 || incs[0].Class != gpurent.FaultDrainReset {
		t.Fatalf("incidents %v, want one, escalated to drain_reset (no second incident, no RMA)", classes)
	}
	entries, err := w.st.ListIncidentEntries(ctx, incs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	escalated := false
	for _, e := range entries {
		escalated = escalated || strings.HasPrefix(e.Message, "escalated from reset")
	}
	if !escalated {
		t.Fatalf("the timeline does not say it was escalated: %+v", entries)
	}
}

// flatPrice lists every GPU at the same hourly price.
type flatPrice int64

func (f flatPrice) HourlyFen(_ context.Context, _ string, count int, _ time.Time) (int64, error) {
	return int64(f) * int64(count), nil
}
