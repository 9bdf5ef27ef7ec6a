package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/ledger"
)

// batchWorld is an account with one host and two instances, each with an
// allocation of one GPU: two independent streams of runs.
type batchWorld struct {
	acc    *gpurent.Account
	host   *gpurent.Host
	allocs [2]*gpurent.Allocation
	ins    [2]*gpurent.Instance
	run    *gpurent.UsageRun
}

func seedBatchWorld(t *testing.T, s gpurent.Store, name string) *batchWorld {
	t.Helper()
	w := &batchWorld{acc: SeedAccount(t, s, name+"@example.com"), host: SeedHost(t, s, name, "h100-80g-sxm", 2)}
	for i := range w.allocs {
		w.ins[i] = SeedInstance(t, s, w.acc.ID, fmt.Sprintf("%s-%d", name, i))
		w.allocs[i] = &gpurent.Allocation{InstanceID: w.ins[i].ID, HostID: w.host.ID, GPUIDs: []string{w.host.GPUs[i].ID},
			StartedAt: time.Now(), StartReason: "start"}
		must(t, s.CreateAllocation(t.Context(), w.allocs[i]), "create allocation")
	}
	w.run = &gpurent.UsageRun{AccountID: w.acc.ID, TypeID: "h100-80g-sxm", GPUCount: 1}
	return w
}

// ingestBatch ingests the events with IngestRunEvents in one call.
func ingestBatch(t *testing.T, q gpurent.Queries, evs []gpurent.RunEvent, hashes []string, run *gpurent.UsageRun, at time.Time) []gpurent.RunEventResult {
	t.Helper()
	runs := make([]*gpurent.UsageRun, len(evs))
	for i := range runs {
		runs[i] = run
	}
	res, err := q.IngestRunEvents(t.Context(), evs, hashes, runs, at)
	must(t, err, "ingest run events")
	if len(res) != len(evs) {
		t.Fatalf("%d results for %d events", len(res), len(evs))
	}
	return res
}

// runShapes describes the instance's runs without their ids, so that two
// streams compare equal.
func runShapes(t *testing.T, s gpurent.Store, instanceID string) []string {
	t.Helper()
	runs, err := s.ListUsageRuns(t.Context(), gpurent.UsageRunFilter{InstanceID: instanceID})
	must(t, err, "list runs")
	var out []string
	for _, r := range runs {
		end := "open"
		if r.EndedAt != nil {
			end = r.EndedAt.Format(time.RFC3339Nano)
		}
		out = append(out, fmt.Sprintf("%s..%s %s seen %s", r.StartedAt.Format(time.RFC3339Nano), end, r.EndReason,
			r.LastSeenAt.Format(time.RFC3339Nano)))
	}
	return out
}

func resultCode(r gpurent.RunEventResult) string {
	switch {
	case r.Err != nil:
		return string(gpurent.ErrorCode(r.Err))
	case r.Dup:
		return "dup"
	}
	return "new"
}

// testIngestRunEvents: a batch does what ingesting its events one by one
// does — the same answers, the same runs — on random streams with
// duplicates, replays with other content, reordering and malformed events.
func testIngestRunEvents(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	w := seedBatchWorld(t, s, "batch")
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 123456000, time.UTC) // stored at microseconds

	// A hand-made report first: every answer it can give.
	end := t0.Add(time.Minute)
	endB := t0.Add(3 * time.Minute)
	endB2 := endB.Add(time.Minute)
	ev := func(id, kind string, start time.Time, end *time.Time) gpurent.RunEvent {
		return gpurent.RunEvent{ID: id, HostID: w.host.ID, Kind: kind, InstanceID: w.ins[0].ID, AllocationID: w.allocs[0].ID,
			StartedAt: start, EndedAt: end}
	}
	unknown := ev("h-unknown", gpurent.RunStarted, t0, nil)
	unknown.AllocationID = "alloc-nope"
	report := []gpurent.RunEvent{
		ev("h-a-start", gpurent.RunStarted, t0, nil),
		ev("h-b-end", gpurent.RunEnded, t0.Add(2*time.Minute), &endB), // its start comes later
		ev("h-a-end", gpurent.RunEnded, t0, &end),
		ev("h-a-start", gpurent.RunStarted, t0, nil), // again, same content
		ev("h-a-start", gpurent.RunStarted, t0, nil), // again, other content
		ev("h-bad", "paused", t0, nil),
		unknown,
		ev("h-b-start", gpurent.RunStarted, t0.Add(2*time.Minute), nil),
		ev("h-b-end-2", gpurent.RunEnded, t0.Add(2*time.Minute), &endB2), // a second end: the first stands
		ev("h-c-start", gpurent.RunStarted, t0.Add(4*time.Minute), nil),
	}
	hashes := []string{"1", "2", "3", "1", "other", "4", "5", "6", "8", "7"}
	got := ingestBatch(t, s, report, hashes, w.run, t0.Add(5*time.Minute))
	var codes []string
	for _, r := range got {
		codes = append(codes, resultCode(r))
	}
	same(t, "answers", codes, []string{"new", "new", "new", "dup", "conflict", "invalid", "invalid", "new", "new", "new"})
	c := t0.Add(4 * time.Minute).UTC().Format(time.RFC3339Nano)
	same(t, "runs", runShapes(t, s, w.ins[0].ID), []string{
		fmt.Sprintf("%s..%s reported seen %s", t0.UTC().Format(time.RFC3339Nano), end.UTC().Format(time.RFC3339Nano), end.UTC().Format(time.RFC3339Nano)),
		fmt.Sprintf("%s..%s reported seen %s", t0.Add(2*time.Minute).UTC().Format(time.RFC3339Nano), endB.UTC().Format(time.RFC3339Nano),
			endB.UTC().Format(time.RFC3339Nano)),
		fmt.Sprintf("%s..open  seen %s", c, c),
	})
	// The whole report again: duplicates and the same refusals, nothing moves.
	before := runShapes(t, s, w.ins[0].ID)
	got = ingestBatch(t, s, report, hashes, w.run, t0.Add(6*time.Minute))
	codes = codes[:0]
	for _, r := range got {
		codes = append(codes, resultCode(r))
	}
	same(t, "answers to the replay", codes, []string{"dup", "dup", "dup", "dup", "conflict", "invalid", "invalid", "dup", "dup", "dup"})
	same(t, "runs after the replay", runShapes(t, s, w.ins[0].ID), before)
	if _, err := s.IngestRunEvents(ctx, report, hashes[:2], nil, t0); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("mismatched slices: %v, want invalid", err)
	}

	// Random streams: batches on allocation 1, one by one on allocation 0's
	// twin (a fresh world), the same answers and runs.
	w2 := seedBatchWorld(t, s, "single")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	type gen struct {
		id, kind, hash string
		start          time.Time
		end            *time.Time
	}
	var stream []gen
	base := t0.Add(time.Hour)
	for r := range 12 {
		st := base.Add(time.Duration(r) * 10 * time.Minute)
		e := st.Add(time.Duration(1+rng.IntN(500)) * time.Second)
		stream = append(stream, gen{id: fmt.Sprintf("s%d", r), kind: gpurent.RunStarted, hash: "hs", start: st})
		if rng.IntN(4) > 0 {
			stream = append(stream, gen{id: fmt.Sprintf("e%d", r), kind: gpurent.RunEnded, hash: "he", start: st, end: &e})
		}
		if rng.IntN(5) == 0 { // a second, later end under another id
			e2 := e.Add(time.Minute)
			stream = append(stream, gen{id: fmt.Sprintf("x%d", r), kind: gpurent.RunEnded, hash: "hx", start: st, end: &e2})
		}
	}
	var deliveries []gen
	for range 3 {
		deliveries = append(deliveries, stream...)
	}
	for range 4 { // forged replays
		g := stream[rng.IntN(len(stream))]
		g.hash = "forged"
		deliveries = append(deliveries, g)
	}
	rng.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
	at := base.Add(10 * time.Hour)
	for len(deliveries) > 0 {
		n := min(len(deliveries), 1+rng.IntN(12))
		part := deliveries[:n]
		deliveries = deliveries[n:]
		var batch []gpurent.RunEvent
		var hs []string
		for _, g := range part {
			batch = append(batch, gpurent.RunEvent{ID: "b-" + g.id, HostID: w.host.ID, Kind: g.kind, InstanceID: w.ins[1].ID,
				AllocationID: w.allocs[1].ID, StartedAt: g.start, EndedAt: g.end})
			hs = append(hs, g.hash)
		}
		res := ingestBatch(t, s, batch, hs, w.run, at)
		for k, g := range part {
			e := gpurent.RunEvent{ID: "s-" + g.id, HostID: w2.host.ID, Kind: g.kind, InstanceID: w2.ins[1].ID,
				AllocationID: w2.allocs[1].ID, StartedAt: g.start, EndedAt: g.end}
			dup, err := s.IngestRunEvent(ctx, &e, g.hash, w2.run, at)
			want := resultCode(gpurent.RunEventResult{Dup: dup, Err: err})
			if got := resultCode(res[k]); got != want {
				t.Errorf("event %s (%s, hash %s): batch %s, one by one %s", g.id, g.kind, g.hash, got, want)
			}
		}
	}
	same(t, "runs of a batched stream against one by one", runShapes(t, s, w.ins[1].ID), runShapes(t, s, w2.ins[1].ID))

	// A batch inside a transaction that fails leaves nothing.
	failed := errors.New("rolled back on purpose")
	err := s.InTx(ctx, func(q gpurent.Queries) error {
		ingestBatch(t, q, []gpurent.RunEvent{ev("h-rolled", gpurent.RunStarted, t0.Add(9*time.Hour), nil)}, []string{"r"}, w.run, t0)
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatalf("rolled back batch: %v", err)
	}
	if got := ingestBatch(t, s, []gpurent.RunEvent{ev("h-rolled", gpurent.RunStarted, t0.Add(9*time.Hour), nil)}, []string{"r"}, w.run, t0); resultCode(got[0]) != "new" {
		t.Errorf("an event rolled back was kept: %s", resultCode(got[0]))
	}

	// Racing replays of one report: each event is taken as new once.
	var race []gpurent.RunEvent
	var raceHashes []string
	for r := range 10 {
		st := t0.Add(20*time.Hour + time.Duration(r)*time.Minute)
		e := st.Add(30 * time.Second)
		race = append(race, ev(fmt.Sprintf("race-s%d", r), gpurent.RunStarted, st, nil), ev(fmt.Sprintf("race-e%d", r), gpurent.RunEnded, st, &e))
		raceHashes = append(raceHashes, "s", "e")
	}
	var wg sync.WaitGroup
	firsts := make([]int, len(race))
	var mu sync.Mutex
	for range 8 {
		wg.Go(func() {
			runs := make([]*gpurent.UsageRun, len(race))
			for i := range runs {
				runs[i] = w.run
			}
			res, err := s.IngestRunEvents(ctx, race, raceHashes, runs, t0)
			if err != nil {
				if !gpurent.IsCode(err, gpurent.CodeConflict) { // a deadlock the database broke: the agent resends
					t.Error(err)
				}
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for i, r := range res {
				if r.Err != nil {
					t.Errorf("racing replay of %s: %v", race[i].ID, r.Err)
				} else if !r.Dup {
					firsts[i]++
				}
			}
		})
	}
	wg.Wait()
	for i, n := range firsts {
		if n != 1 {
			t.Errorf("event %s was taken as new %d times by racing replays", race[i].ID, n)
		}
	}
}

// testPostRunDebits: many runs' debits in one call, each as RecordRunDebit
// plus PostLedger in one transaction; a stale one is skipped alone; racing
// calls debit each run once; the kept balances stay the sums of postings.
func testPostRunDebits(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	w := seedBatchWorld(t, s, "debits")
	other := SeedAccount(t, s, "debits-other@example.com")
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	// Six ended runs of instance 0.
	var evs []gpurent.RunEvent
	var hs []string
	for r := range 6 {
		st := t0.Add(time.Duration(r) * time.Minute)
		e := st.Add(30 * time.Second)
		evs = append(evs, gpurent.RunEvent{ID: fmt.Sprintf("d-%d", r), HostID: w.host.ID, Kind: gpurent.RunEnded,
			InstanceID: w.ins[0].ID, AllocationID: w.allocs[0].ID, StartedAt: st, EndedAt: &e})
		hs = append(hs, "h")
	}
	ingestBatch(t, s, evs, hs, w.run, t0.Add(time.Hour))
	runs, err := s.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: w.ins[0].ID})
	must(t, err, "list runs")
	if len(runs) != 6 {
		t.Fatalf("%d runs", len(runs))
	}
	_, err = s.PostLedger(ctx, topUp(w.acc.ID, "debits-seed", 10_000))
	must(t, err, "top up")
	_, err = s.PostLedger(ctx, &gpurent.LedgerTx{Op: string(ledger.OpGrant), Key: "debits-promo", Customer: w.acc.ID,
		At: t0, AmountFen: 1_000, Credit: string(ledger.KindPromo), ExpiresAt: t0.Add(24 * time.Hour)})
	must(t, err, "grant")
	at := t0.Add(2 * time.Hour)
	deb := func(run gpurent.UsageRun, prev, fen int64, settle bool) gpurent.RunDebit {
		d := gpurent.RunDebit{RunID: run.ID, PrevFen: prev, Settle: settle}
		if fen > 0 {
			d.Tx = &gpurent.LedgerTx{Op: string(ledger.OpDebit), Key: fmt.Sprintf("usage:%s:%d", run.ID, prev+fen), Customer: run.AccountID,
				At: at, AmountFen: fen, Charge: string(ledger.ChargeCompute), Note: "run " + run.ID}
		}
		return d
	}
	batch := []gpurent.RunDebit{
		deb(runs[0], 0, 1_500, false), // the promo lot, then cash
		deb(runs[1], 0, 2_000, true),
		deb(runs[2], 0, 0, true),    // settled without a debit
		deb(runs[3], 50, 700, true), // stale: the run is at 0
		deb(runs[0], 1_500, 1, true),
		{RunID: runs[4].ID, Tx: &gpurent.LedgerTx{Op: string(ledger.OpTopUp), Key: "not-a-debit", Customer: w.acc.ID, At: at, AmountFen: 5}},
		deb(gpurent.UsageRun{ID: runs[5].ID, AccountID: "acc-nobody"}, 0, 10, true),
	}
	res, err := s.PostRunDebits(ctx, batch)
	must(t, err, "post run debits")
	var codes []string
	for _, e := range res {
		codes = append(codes, string(gpurent.ErrorCode(e)))
	}
	same(t, "answers", codes, []string{"", "", "", "conflict", "invalid", "invalid", "not_found"})
	if tx := batch[0].Tx; tx.Seq == 0 || len(tx.Postings) == 0 || tx.Postings[0].Kind != string(ledger.KindPromo) {
		t.Errorf("the first debit as stored: %+v", tx)
	}
	bal, err := s.LedgerBalances(ctx, w.acc.ID)
	must(t, err, "balances")
	if bal.CashFen != 10_000+1_000-1_500-2_000 || len(bal.Lots) != 0 {
		t.Errorf("balances after the batch: %+v", bal)
	}
	runs, _ = s.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: w.ins[0].ID})
	var states []string
	for _, r := range runs {
		states = append(states, fmt.Sprintf("%d/%v", r.DebitedFen, r.Settled))
	}
	same(t, "runs after the batch", states, []string{"1500/false", "2000/true", "0/true", "0/false", "0/false", "0/false"})

	// A shortfall: the wallet gives what it has, never below zero.
	res, err = s.PostRunDebits(ctx, []gpurent.RunDebit{deb(runs[3], 0, 9_000, true)})
	must(t, err, "shortfall")
	if res[0] != nil {
		t.Fatal(res[0])
	}
	if bal, _ := s.LedgerBalances(ctx, w.acc.ID); bal.CashFen != 0 {
		t.Errorf("cash after a shortfall: %d", bal.CashFen)
	}

	// Inside a transaction that fails, nothing stays.
	failed := errors.New("rolled back on purpose")
	err = s.InTx(ctx, func(q gpurent.Queries) error {
		if _, err := q.PostRunDebits(ctx, []gpurent.RunDebit{deb(runs[4], 0, 10, true)}); err != nil {
			return err
		}
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatalf("rolled back: %v", err)
	}
	if _, err := s.LedgerTxByKey(ctx, fmt.Sprintf("usage:%s:10", runs[4].ID)); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("a rolled-back debit was kept: %v", err)
	}

	// Racing calls with the same debits, for two customers at once: each
	// run is debited once, and no call deadlocks another.
	_, err = s.PostLedger(ctx, topUp(w.acc.ID, "debits-seed-2", 100_000))
	must(t, err, "top up")
	_, err = s.PostLedger(ctx, topUp(other.ID, "debits-seed-3", 100_000))
	must(t, err, "top up")
	var race []gpurent.RunDebit
	for r := range 6 {
		evs := []gpurent.RunEvent{{ID: fmt.Sprintf("race-ev-%d", r), HostID: w.host.ID, Kind: gpurent.RunStarted, InstanceID: w.ins[1].ID,
			AllocationID: w.allocs[1].ID, StartedAt: t0.Add(time.Duration(r+10) * time.Minute)}}
		acct := w.acc.ID
		if r%2 == 1 {
			acct = other.ID
		}
		ingestBatch(t, s, evs, []string{"h"}, &gpurent.UsageRun{AccountID: acct, TypeID: "h100-80g-sxm", GPUCount: 1}, t0.Add(time.Hour))
		var run gpurent.UsageRun
		list, err := s.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: w.ins[1].ID})
		must(t, err, "list runs")
		for _, l := range list {
			if l.StartedAt.Equal(evs[0].StartedAt) {
				run = l
			}
		}
		race = append(race, deb(run, 0, int64(100+r), false))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	posted := make([]int, len(race))
	for g := range 8 {
		wg.Go(func() {
			mine := make([]gpurent.RunDebit, len(race))
			for i, d := range race {
				tx := *d.Tx
				mine[i] = gpurent.RunDebit{RunID: d.RunID, PrevFen: d.PrevFen, Tx: &tx}
			}
			if g%2 == 1 { // another order: the store must still not deadlock
				for i, j := 0, len(mine)-1; i < j; i, j = i+1, j-1 {
					mine[i], mine[j] = mine[j], mine[i]
				}
			}
			res, err := s.PostRunDebits(ctx, mine)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for i, e := range res {
				k := i
				if g%2 == 1 {
					k = len(mine) - 1 - i
				}
				switch {
				case e == nil:
					posted[k]++
				case !gpurent.IsCode(e, gpurent.CodeConflict):
					t.Error(e)
				}
			}
		})
	}
	wg.Wait()
	for i, n := range posted {
		if n != 1 {
			t.Errorf("run debit %d was posted %d times by racing calls", i, n)
		}
	}
	for _, d := range race {
		if _, err := s.LedgerTxByKey(ctx, d.Tx.Key); err != nil {
			t.Errorf("debit %s: %v", d.Tx.Key, err)
		}
	}
	checkBalancesAreSums(t, s, w.acc.ID, other.ID)
	replayStore(t, s, w.acc.ID, other.ID)
}
