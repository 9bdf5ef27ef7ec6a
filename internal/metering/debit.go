package metering

import (
	"context"
	"fmt"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rating"
)

// PriceBook gives the price book in force (billing.Service does).
type PriceBook interface {
	Book(ctx context.Context) (*rating.Book, error)
}

// Debits is what one billing pass did.
type Debits struct {
	Posted    int   // ledger debits posted
	Fen       int64 // their sum
	Settled   int   // runs ended and fully debited
	Shortfall []string
}

// debitsPerBatch bounds the runs one store call (one database
// transaction) debits, so a backlog does not hold a customer's lock long.
const debitsPerBatch = 200

// Bill rates every run not yet settled and posts what it owes to the
// ledger: while a run is open, floor(exact so far) − debited (so the
// customer never owes more than a fen between passes); once it ended, the
// rest up to its amount rounded half-up once. Each run's debit and its new
// debited amount are written together under the key
// usage:<run>:<debited after>, so a pass repeated after a crash posts the
// same transaction or nothing; the debits of one account's runs go in one
// database transaction (up to debitsPerBatch). Time under a package plan
// is prepaid: a run wholly under one is settled without a debit. Instances
// whose wallet could not cover a debit are listed in Shortfall (the caller
// stops them).
func (s *Service) Bill(ctx context.Context, book PriceBook) (Debits, error) {
	b, err := book.Book(ctx)
	if err != nil {
		return Debits{}, err
	}
	runs, err := s.cfg.Store.ListUsageRuns(ctx, gpurent.UsageRunFilter{UnsettledOnly: true})
	if err != nil {
		return Debits{}, err
	}
	return s.billRuns(ctx, b, runs, s.cfg.Now().UTC())
}

// runDebit is what one run owes now.
type runDebit struct {
	run   gpurent.UsageRun
	delta int64
	final bool
}

// billRuns rates the runs and posts their debits, in order per account.
// The instances, their plan histories and the accounts are read once per
// call. A lookup or rating failure stops the rating there: the runs rated
// before it are still posted, and the error is answered.
func (s *Service) billRuns(ctx context.Context, b *rating.Book, runs []gpurent.UsageRun, now time.Time) (Debits, error) {
	var out Debits
	look := lookups{instances: map[string]*gpurent.Instance{}, spans: map[string][]planSpan{}, accounts: map[string]*gpurent.Account{},
		void: map[string]bool{}, failed: map[string]*time.Time{}}
	if len(runs) > 0 {
		// Every incident that can touch these runs, in one read.
		since := runs[0].StartedAt
		for _, r := range runs {
			if r.StartedAt.Before(since) {
				since = r.StartedAt
			}
		}
		var err error
		if look.down, err = s.hostDowntime(ctx, gpurent.IncidentFilter{Since: since}); err != nil {
			return out, err
		}
	}
	byAccount := map[string][]runDebit{}
	var order []string // accounts in the order their first run came
	var stop error
	for _, run := range runs {
		d, ok, err := s.owed(ctx, b, &look, run)
		if err != nil {
			stop = err
			break
		}
		if !ok {
			continue
		}
		if _, seen := byAccount[run.AccountID]; !seen {
			order = append(order, run.AccountID)
		}
		byAccount[run.AccountID] = append(byAccount[run.AccountID], d)
	}
	for _, acc := range order {
		list := byAccount[acc]
		for len(list) > 0 {
			n := min(len(list), debitsPerBatch)
			if err := s.postDebits(ctx, list[:n], now, &out); err != nil {
				return out, err
			}
			list = list[n:]
		}
	}
	return out, stop
}

// lookups are the records a billing pass reads once.
type lookups struct {
	instances map[string]*gpurent.Instance
	spans     map[string][]planSpan
	accounts  map[string]*gpurent.Account
	void      map[string]bool // by allocation: a failed move's target
	down      map[string][][2]time.Time
	// failed is, by allocation, from when a failure of the platform's
	// owes nothing (nil: the allocation did not fail).
	failed map[string]*time.Time
}

// owed rates one run: ok false when it owes nothing now.
func (s *Service) owed(ctx context.Context, b *rating.Book, look *lookups, run gpurent.UsageRun) (runDebit, bool, error) {
	in := look.instances[run.InstanceID]
	if in == nil {
		var err error
		if in, err = s.cfg.Store.InstanceByID(ctx, run.InstanceID); err != nil {
			return runDebit{}, false, err
		}
		spans, err := s.spansOf(ctx, in)
		if err != nil {
			return runDebit{}, false, err
		}
		look.instances[in.ID], look.spans[in.ID] = in, spans
	}
	acc := look.accounts[run.AccountID]
	if acc == nil {
		var err error
		if acc, err = s.cfg.Store.AccountByID(ctx, run.AccountID); err != nil {
			return runDebit{}, false, err
		}
		look.accounts[acc.ID] = acc
	}
	final := run.EndedAt != nil
	if final { // checked once per run, when it settles
		if void, err := s.voided(ctx, look.void, run.AllocationID); err != nil {
			return runDebit{}, false, err
		} else if void {
			// A failed move's target: the attempt costs nothing. It is
			// settled at what was posted: nothing, as a target is rolled
			// back within seconds of failing, before any live debit.
			return runDebit{run: run, final: true}, true, nil
		}
	}
	end := run.LastSeenAt
	if final {
		end = *run.EndedAt
	}
	start := run.StartedAt.Truncate(time.Second)
	if !final && end.Sub(start) < rating.MinimumRunSeconds*time.Second {
		// A run younger than the minimum owes the minute at its start's
		// rate only if it ends so; if it runs on, its first minute is
		// priced second by second. Wait until that is known.
		return runDebit{}, false, nil
	}
	down, err := s.downOf(ctx, look.failed, run, look.down[in.ID], end)
	if err != nil {
		return runDebit{}, false, err
	}
	lines, err := rateRun(b, run, acc, end, look.spans[in.ID], down)
	if err != nil {
		return runDebit{}, false, err
	}
	exact, err := rating.Total(lines)
	if err != nil {
		return runDebit{}, false, err
	}
	delta := rating.DebitSoFar(exact, run.DebitedFen)
	if final {
		delta = rating.FinalDebit(exact, run.DebitedFen)
	}
	if delta <= 0 && !final {
		return runDebit{}, false, nil
	}
	if delta < 0 { // cannot happen: floor ≤ round half-up
		delta = 0
	}
	return runDebit{run: run, delta: delta, final: final}, true, nil
}

// postDebits posts one account's run debits in one store call and adds
// what it did to out. A run another pass debited meanwhile is skipped (the
// next pass sees it), as is the whole batch when the database answers a
// conflict (a serialisation failure or deadlock: nothing was written).
func (s *Service) postDebits(ctx context.Context, list []runDebit, now time.Time, out *Debits) error {
	debits := make([]gpurent.RunDebit, len(list))
	for i, d := range list {
		run := d.run
		debits[i] = gpurent.RunDebit{RunID: run.ID, PrevFen: run.DebitedFen, Settle: d.final}
		if d.delta > 0 {
			debits[i].Tx = &gpurent.LedgerTx{Op: "debit", Key: fmt.Sprintf("usage:%s:%d", run.ID, run.DebitedFen+d.delta),
				Customer: run.AccountID, At: now, AmountFen: d.delta, Charge: "compute",
				Note: fmt.Sprintf("%s: %d x %s%s, run from %s", run.InstanceID, run.GPUCount, run.TypeID, shareNote(run.PricePermille),
					run.StartedAt.Truncate(time.Second).Format(time.RFC3339))}
		}
	}
	res, err := s.cfg.Store.PostRunDebits(ctx, debits)
	if gpurent.IsCode(err, gpurent.CodeConflict) {
		return nil
	}
	if err != nil {
		return err
	}
	var refused error
	for i, d := range list {
		if res[i] != nil {
			if !gpurent.IsCode(res[i], gpurent.CodeConflict) && refused == nil {
				refused = res[i]
			}
			continue
		}
		if d.delta > 0 {
			out.Posted++
			out.Fen += d.delta
			if collected(debits[i].Tx, d.run.AccountID) < d.delta && d.run.EndedAt == nil {
				out.Shortfall = append(out.Shortfall, d.run.InstanceID)
			}
		}
		if d.final {
			out.Settled++
		}
	}
	return refused
}

// rateRun rates the parts of a run from its start to end, in whole
// seconds, that fall under the hourly plan (spans: the instance's plan
// history; package time is prepaid), at academic prices when the account
// was verified at its start, scaled by the run's price share when its GPUs
// are listed as degraded. Time a fault of the platform's took (down:
// host-attributed incidents of the instance) is left out. The 60-second
// minimum applies to a power-on wholly under the hourly plan and untouched
// by an incident.
func rateRun(b *rating.Book, run gpurent.UsageRun, acc *gpurent.Account, end time.Time, spans []planSpan, down [][2]time.Time) ([]rating.Line, error) {
	start := run.StartedAt.Truncate(time.Second)
	ran := end.After(run.StartedAt)
	end = end.Truncate(time.Second)
	if end.Before(start) {
		end = start
	}
	if ran && end.Equal(start) {
		// A power-on shorter than a second that did not cross a second
		// boundary is a power-on all the same: it owes the minimum as
		// one of the same length across a boundary does. Only a run that
		// ended at the instant it began costs nothing.
		end = start.Add(time.Second)
	}
	pieces, whole := hourlyPieces(spans, start, end)
	if cut := subtract(pieces, down); len(cut) != len(pieces) || !samePieces(cut, pieces) {
		pieces, whole = cut, false
	}
	var segs []rating.Segment
	var err error
	if whole {
		segs, err = rating.SplitRun(b, run.TypeID, start, end)
	} else {
		for _, p := range pieces {
			if segs, err = rating.AppendSplit(segs, b, run.TypeID, p[0], p[1]); err != nil {
				break
			}
		}
	}
	if err != nil || len(segs) == 0 {
		return nil, err
	}
	return rating.Rate(segs, runTerms(run, acc.Academic(start)))
}

// runTerms are the hourly-plan terms a run is rated under.
func runTerms(run gpurent.UsageRun, academic bool) rating.Terms {
	return rating.Terms{Plan: gpurent.PlanHourly, GPUCount: run.GPUCount, Academic: academic,
		DegradedBps: rating.DegradedBpsOf(run.PricePermille)}
}

// shareNote says, for a ledger note, that a run is on GPUs listed as
// degraded and at which share of the list price; "" at the full price.
func shareNote(permille int) string {
	if rating.DegradedBpsOf(permille) == 0 {
		return ""
	}
	return fmt.Sprintf(" (degraded, %s of the list price)", sharePercent(permille))
}

// sharePercent writes a price share in permille as a percentage: 850 →
// "85%", 862 → "86.2%".
func sharePercent(permille int) string {
	if permille%10 == 0 {
		return fmt.Sprintf("%d%%", permille/10)
	}
	return fmt.Sprintf("%d.%d%%", permille/10, permille%10)
}

// collected is what a posted debit took from the customer's accounts; less
// than its amount means the wallet could not cover it.
func collected(tx *gpurent.LedgerTx, customer string) int64 {
	var fen int64
	for _, p := range tx.Postings {
		if p.Customer == customer && p.AmountFen < 0 {
			fen -= p.AmountFen
		}
	}
	return fen
}

// voided reports whether runs of the allocation are not billed: the
// target of a move that was rolled back. cache keeps answers for a pass.
func (s *Service) voided(ctx context.Context, cache map[string]bool, allocationID string) (bool, error) {
	if v, ok := cache[allocationID]; ok {
		return v, nil
	}
	a, err := s.cfg.Store.AllocationByID(ctx, allocationID)
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		cache[allocationID] = false
		return false, nil
	} else if err != nil {
		return false, err
	}
	v := a.EndedAt != nil && a.EndReason == gpurent.AllocEndRolledBack
	cache[allocationID] = v
	return v, nil
}

// downOf is the time of the run up to end that is the platform's and not
// billed: the instance's host-attributed downtime (base), and what a
// failure of its allocation took. What the platform failed at is left out
// as its downtime is: the power-on the failure cut owes no minimum, and
// nothing after the failure (the container's restarts until the agent
// stops it) is billed.
func (s *Service) downOf(ctx context.Context, cache map[string]*time.Time, run gpurent.UsageRun, base [][2]time.Time, end time.Time) ([][2]time.Time, error) {
	from, err := s.failedFrom(ctx, cache, run)
	if err != nil || from == nil {
		return base, err
	}
	to := end
	if !to.After(*from) {
		to = *from
	}
	return append(append([][2]time.Time(nil), base...), [2]time.Time{*from, to.Add(time.Second)}), nil
}

// failedFrom answers, for a run of an allocation that ended failed (the
// platform could not keep the instance running), the time from which the
// run owes nothing: the failure, or the allocation's start when the
// instance never reached running on it (a first start that never ran; an
// allocation begun by an upgrade, a migration or a failover took over an
// instance that ran). nil when the allocation did not fail.
func (s *Service) failedFrom(ctx context.Context, cache map[string]*time.Time, run gpurent.UsageRun) (*time.Time, error) {
	if v, ok := cache[run.AllocationID]; ok {
		return v, nil
	}
	a, err := s.cfg.Store.AllocationByID(ctx, run.AllocationID)
	if gpurent.IsCode(err, gpurent.CodeNotFound) {
		cache[run.AllocationID] = nil
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if a.EndedAt == nil || a.EndReason != "failed" {
		cache[run.AllocationID] = nil
		return nil, nil
	}
	from := a.EndedAt.UTC()
	if a.StartReason == "" || a.StartReason == "start" {
		evs, err := s.cfg.Store.ListEvents(ctx, a.InstanceID)
		if err != nil {
			return nil, err
		}
		ran := false
		for _, e := range evs {
			if e.Kind == "running" && !e.At.Before(a.StartedAt) && !e.At.After(*a.EndedAt) {
				ran = true
				break
			}
		}
		if !ran {
			from = a.StartedAt.UTC()
		}
	}
	cache[run.AllocationID] = &from
	return &from, nil
}

// hostDowntime is when faults of the platform's took each instance: the
// host-attributed incidents f selects, by instance, to the second (an open
// one up to now).
func (s *Service) hostDowntime(ctx context.Context, f gpurent.IncidentFilter) (map[string][][2]time.Time, error) {
	incs, err := s.cfg.Store.ListIncidents(ctx, f)
	if err != nil {
		return nil, err
	}
	out := map[string][][2]time.Time{}
	for _, in := range incs {
		if in.Attribution != gpurent.AttrHost || in.InstanceID == "" {
			continue
		}
		to := s.cfg.Now().UTC()
		if in.EndedAt != nil {
			to = *in.EndedAt
		}
		from := in.StartedAt.Truncate(time.Second)
		if to = to.Truncate(time.Second).Add(time.Second); to.After(from) {
			out[in.InstanceID] = append(out[in.InstanceID], [2]time.Time{from, to})
		}
	}
	return out, nil
}

// subtract cuts the down intervals out of pieces (both half-open).
func subtract(pieces, down [][2]time.Time) [][2]time.Time {
	out := pieces
	for _, d := range down {
		var next [][2]time.Time
		for _, p := range out {
			if !d[0].Before(p[1]) || !d[1].After(p[0]) {
				next = append(next, p)
				continue
			}
			if p[0].Before(d[0]) {
				next = append(next, [2]time.Time{p[0], d[0]})
			}
			if d[1].Before(p[1]) {
				next = append(next, [2]time.Time{d[1], p[1]})
			}
		}
		out = next
	}
	return out
}

func samePieces(a, b [][2]time.Time) bool {
	for i := range a {
		if !a[i][0].Equal(b[i][0]) || !a[i][1].Equal(b[i][1]) {
			return false
		}
	}
	return true
}
