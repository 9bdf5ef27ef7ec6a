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

// Bill rates every run not yet settled and posts what it owes to the
// ledger: while a run is open, floor(exact so far) − debited (so the
// customer never owes more than a fen between passes); once it ended, the
// rest up to its amount rounded half-up once. The debit and the run's new
// debited amount are written in one transaction under the key
// usage:<run>:<debited after>, so a pass repeated after a crash posts the
// same transaction or nothing. Time under a package plan is prepaid: a run
// wholly under one is settled without a debit. Instances whose wallet could not cover a debit
// are listed in Shortfall (the caller stops them).
func (s *Service) Bill(ctx context.Context, book PriceBook) (Debits, error) {
	var out Debits
	b, err := book.Book(ctx)
	if err != nil {
		return out, err
	}
	runs, err := s.cfg.Store.ListUsageRuns(ctx, gpurent.UsageRunFilter{UnsettledOnly: true})
	if err != nil {
		return out, err
	}
	now := s.cfg.Now().UTC()
	for _, run := range runs {
		fen, short, settled, err := s.bill(ctx, b, run, now)
		if err != nil {
			if gpurent.IsCode(err, gpurent.CodeConflict) {
				continue // another pass got there first; the next one sees it
			}
			return out, err
		}
		if fen > 0 {
			out.Posted++
			out.Fen += fen
		}
		if settled {
			out.Settled++
		}
		if short && run.EndedAt == nil {
			out.Shortfall = append(out.Shortfall, run.InstanceID)
		}
	}
	return out, nil
}

// bill rates and debits one run.
func (s *Service) bill(ctx context.Context, b *rating.Book, run gpurent.UsageRun, now time.Time) (fen int64, short, settled bool, err error) {
	in, err := s.cfg.Store.InstanceByID(ctx, run.InstanceID)
	if err != nil {
		return 0, false, false, err
	}
	final := run.EndedAt != nil
	spans, err := s.spansOf(ctx, in)
	if err != nil {
		return 0, false, false, err
	}
	acc, err := s.cfg.Store.AccountByID(ctx, run.AccountID)
	if err != nil {
		return 0, false, false, err
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
		return 0, false, false, nil
	}
	lines, err := rateRun(b, run, acc, end, spans)
	if err != nil {
		return 0, false, false, err
	}
	exact, err := rating.Total(lines)
	if err != nil {
		return 0, false, false, err
	}
	delta := rating.DebitSoFar(exact, run.DebitedFen)
	if final {
		delta = rating.FinalDebit(exact, run.DebitedFen)
	}
	if delta <= 0 && !final {
		return 0, false, false, nil
	}
	if delta < 0 { // cannot happen: floor ≤ round half-up
		delta = 0
	}
	err = s.cfg.Store.InTx(ctx, func(q gpurent.Queries) error {
		if delta > 0 {
			tx := &gpurent.LedgerTx{Op: "debit", Key: fmt.Sprintf("usage:%s:%d", run.ID, run.DebitedFen+delta),
				Customer: run.AccountID, At: now, AmountFen: delta, Charge: "compute",
				Note: fmt.Sprintf("%s: %d x %s, run from %s", run.InstanceID, run.GPUCount, run.TypeID, start.Format(time.RFC3339))}
			if _, err := q.PostLedger(ctx, tx); err != nil {
				return err
			}
			short = collected(tx, run.AccountID) < delta
		}
		return q.RecordRunDebit(ctx, run.ID, run.DebitedFen, run.DebitedFen+delta, final)
	})
	if err != nil {
		return 0, false, false, err
	}
	return delta, short, final, nil
}

// rateRun rates the parts of a run from its start to end, in whole
// seconds, that fall under the hourly plan (spans: the instance's plan
// history; package time is prepaid), at academic prices when the account
// was verified at its start. The 60-second minimum applies to a power-on
// wholly under the hourly plan.
func rateRun(b *rating.Book, run gpurent.UsageRun, acc *gpurent.Account, end time.Time, spans []planSpan) ([]rating.Line, error) {
	start := run.StartedAt.Truncate(time.Second)
	end = end.Truncate(time.Second)
	if end.Before(start) {
		end = start
	}
	pieces, whole := hourlyPieces(spans, start, end)
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
	return rating.Rate(segs, rating.Terms{Plan: gpurent.PlanHourly, GPUCount: run.GPUCount, Academic: acc.Academic(start)})
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
