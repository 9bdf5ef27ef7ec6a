package metering

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rating"
)

// StatementLine is one instance's usage at one rate in a month.
type StatementLine struct {
	InstanceID   string
	InstanceName string
	TypeID       string
	GPUCount     int
	Window       string // peak, off-peak, no-gpu
	// RateFen is the rate per unit-hour the line is billed at: on GPUs
	// listed as degraded, the list rate scaled by PricePermille, rounded
	// half-up to the fen for display (Exact is exact). ListRateFen is the
	// rate before the share; PricePermille is 0 at the full price.
	RateFen       int64
	ListRateFen   int64 `json:",omitempty"`
	PricePermille int   `json:",omitempty"`
	Units         int64
	Seconds       int64
	Exact         rating.Amount `json:"-"`
	ExactText     string        // Exact as a fraction of fen
	Fen           int64         // Exact rounded half-up, once per line
}

// Statement is an account's usage in one calendar month (Asia/Shanghai),
// rated line by line from its metered runs.
type Statement struct {
	AccountID string
	Month     time.Time // the month's first instant, in Asia/Shanghai
	Lines     []StatementLine
	TotalFen  int64 // sum of the rounded lines
	// Open is set while the month has not ended or a run in it is still
	// open: the statement can still grow.
	Open bool
	// Final is set once the month's statement is stored: it never changes
	// again; usage reported later becomes a correction line on the next
	// month's statement.
	Final       bool
	FinalizedAt time.Time
}

// FinalizeAfter is how long after a month's end its statement is made
// final, so that late reports of its last runs still count in it.
const FinalizeAfter = 24 * time.Hour

// Statement rates the account's runs in the month that holds month. Lines
// group an instance's seconds at one rate; each is rounded once; the
// total is the sum of the rounded lines. Package-plan runs are prepaid
// and left out.
func (s *Service) Statement(ctx context.Context, book PriceBook, acc *gpurent.Account, month time.Time) (*Statement, error) {
	b, err := book.Book(ctx)
	if err != nil {
		return nil, err
	}
	m := month.In(b.Location())
	key := m.Format("2006-01")
	if fs, err := s.cfg.Store.FinalStatement(ctx, acc.ID, key); err == nil {
		st := &Statement{AccountID: acc.ID, Month: time.Date(m.Year(), m.Month(), 1, 0, 0, 0, 0, b.Location()),
			TotalFen: fs.TotalFen, Final: true, FinalizedAt: fs.FinalizedAt}
		if err := json.Unmarshal(fs.Lines, &st.Lines); err != nil {
			return nil, gpurent.WrapError(gpurent.CodeInternal, err, "stored statement %s is unreadable", key)
		}
		return st, nil
	} else if !gpurent.IsCode(err, gpurent.CodeNotFound) {
		return nil, err
	}
	st, err := s.compute(ctx, b, acc, month)
	if err != nil {
		return nil, err
	}
	// Usage of the month before, reported after its statement was final,
	// is corrected here.
	prev := st.Month.AddDate(0, -1, 0)
	if fs, err := s.cfg.Store.FinalStatement(ctx, acc.ID, prev.Format("2006-01")); err == nil {
		now, err := s.compute(ctx, b, acc, prev)
		if err != nil {
			return nil, err
		}
		if diff := now.TotalFen - fs.TotalFen; diff != 0 {
			st.Lines = append(st.Lines, StatementLine{Window: "correction", InstanceName: "usage of " + prev.Format("2006-01") +
				" reported after its statement was final", Fen: diff, ExactText: fmt.Sprint(diff)})
			st.TotalFen += diff
		}
	} else if !gpurent.IsCode(err, gpurent.CodeNotFound) {
		return nil, err
	}
	return st, nil
}

// Finalize stores the month's statement as final, if the month ended at
// least FinalizeAfter ago and has no open run; it reports whether it did.
func (s *Service) Finalize(ctx context.Context, book PriceBook, acc *gpurent.Account, month time.Time) (bool, error) {
	b, err := book.Book(ctx)
	if err != nil {
		return false, err
	}
	st, err := s.Statement(ctx, book, acc, month)
	if err != nil || st.Final {
		return false, err
	}
	end := st.Month.AddDate(0, 1, 0)
	if s.cfg.Now().Before(end.Add(FinalizeAfter)) || st.Open {
		return false, nil
	}
	// A correction line belongs to the statement being finalized: keep it.
	lines, err := json.Marshal(st.Lines)
	if err != nil {
		return false, err
	}
	err = s.cfg.Store.SaveFinalStatement(ctx, &gpurent.FinalStatement{AccountID: acc.ID, Month: st.Month.In(b.Location()).Format("2006-01"),
		TotalFen: st.TotalFen, Lines: lines, FinalizedAt: s.cfg.Now()})
	if gpurent.IsCode(err, gpurent.CodeConflict) {
		return false, nil // another pass finalized it
	}
	return err == nil, err
}

// compute rates the month from the runs.
func (s *Service) compute(ctx context.Context, b *rating.Book, acc *gpurent.Account, month time.Time) (*Statement, error) {
	var err error
	loc := b.Location()
	m := month.In(loc)
	from := time.Date(m.Year(), m.Month(), 1, 0, 0, 0, 0, loc)
	to := from.AddDate(0, 1, 0)
	st := &Statement{AccountID: acc.ID, Month: from, Open: !s.cfg.Now().Before(from) && s.cfg.Now().Before(to)}
	runs, err := s.cfg.Store.ListUsageRuns(ctx, gpurent.UsageRunFilter{AccountID: acc.ID})
	if err != nil {
		return nil, err
	}
	type key struct {
		instance, window string
		rate, units      int64
		permille         int
	}
	lines := map[key]*StatementLine{}
	names := map[string]*gpurent.Instance{}
	plans := map[string][]planSpan{}
	void := map[string]bool{}
	failed := map[string]*time.Time{}
	down, err := s.hostDowntime(ctx, gpurent.IncidentFilter{AccountID: acc.ID, Since: from})
	if err != nil {
		return nil, err
	}
	for _, run := range runs {
		end := run.LastSeenAt
		if run.EndedAt != nil {
			end = *run.EndedAt
		}
		if !run.StartedAt.Before(to) || end.Before(from) {
			continue
		}
		in, ok := names[run.InstanceID]
		if !ok {
			if in, err = s.cfg.Store.InstanceByID(ctx, run.InstanceID); err != nil {
				return nil, err
			}
			names[run.InstanceID] = in
			if plans[in.ID], err = s.spansOf(ctx, in); err != nil {
				return nil, err
			}
		}
		if run.EndedAt == nil && end.After(from) {
			st.Open = true
		}
		if void, err := s.voided(ctx, void, run.AllocationID); err != nil {
			return nil, err
		} else if void {
			continue
		}
		runDown, err := s.downOf(ctx, failed, run, down[in.ID], end)
		if err != nil {
			return nil, err
		}
		rated, err := rateRun(b, run, acc, end, plans[in.ID], runDown)
		if err != nil {
			return nil, err
		}
		for _, l := range rated {
			if !l.Segment.Period.Equal(from.UTC()) {
				continue
			}
			window := "peak"
			switch {
			case l.NoGPU:
				window = "no-gpu"
			case l.Segment.OffPeak:
				window = "off-peak"
			}
			permille := run.PricePermille
			if l.NoGPU || rating.DegradedBpsOf(permille) == 0 {
				permille = 0
			}
			k := key{run.InstanceID, window, l.RateFen, l.Units, permille}
			sl := lines[k]
			if sl == nil {
				sl = &StatementLine{InstanceID: run.InstanceID, InstanceName: in.Name, TypeID: run.TypeID, GPUCount: run.GPUCount,
					Window: window, RateFen: rating.ScaledRateFen(l.RateFen, rating.DegradedBpsOf(permille)), ListRateFen: l.RateFen,
					PricePermille: permille, Units: l.Units}
				lines[k] = sl
			}
			sl.Seconds += l.Seconds
			if sl.Exact, err = sl.Exact.Add(l.Exact); err != nil {
				return nil, err
			}
		}
	}
	for _, l := range lines {
		l.Fen = l.Exact.RoundHalfUp()
		l.ExactText = l.Exact.String()
		st.TotalFen += l.Fen
		st.Lines = append(st.Lines, *l)
	}
	pkgs, err := s.packageLines(ctx, b, acc, from, to)
	if err != nil {
		return nil, err
	}
	for _, l := range pkgs {
		st.TotalFen += l.Fen
		st.Lines = append(st.Lines, l)
	}
	sort.Slice(st.Lines, func(i, j int) bool {
		a, b := st.Lines[i], st.Lines[j]
		if a.InstanceID != b.InstanceID {
			return a.InstanceID < b.InstanceID
		}
		if a.Window != b.Window {
			return a.Window > b.Window // peak before off-peak
		}
		if a.RateFen != b.RateFen {
			return a.RateFen > b.RateFen
		}
		if a.Units != b.Units {
			return a.Units > b.Units
		}
		return a.PricePermille < b.PricePermille
	})
	return st, nil
}

// packageLines are the package periods of the account's instances that
// began in [from, to): one line each, at the price charged up front.
func (s *Service) packageLines(ctx context.Context, b *rating.Book, acc *gpurent.Account, from, to time.Time) ([]StatementLine, error) {
	list, err := s.cfg.Store.ListInstances(ctx, gpurent.InstanceFilter{AccountID: acc.ID})
	if err != nil {
		return nil, err
	}
	upto := s.cfg.Now().UTC()
	if to.Before(upto) {
		upto = to.Add(-time.Second)
	}
	var out []StatementLine
	for i := range list {
		in := &list[i]
		spans, err := s.spansOf(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, p := range packagePeriods(in, spans, upto) {
			if p.at.Before(from) || !p.at.Before(to) {
				continue
			}
			line, err := rating.RatePackage(b, in.TypeID, p.at, 1, rating.Terms{Plan: p.plan, GPUCount: in.GPUCount, Academic: acc.Academic(p.at)})
			if err != nil {
				return nil, err
			}
			secs, _ := rating.PackageSeconds(p.plan)
			out = append(out, StatementLine{InstanceID: in.ID, InstanceName: in.Name, TypeID: in.TypeID, GPUCount: in.GPUCount,
				Window: string(p.plan) + " package", RateFen: line.UnitFen, ListRateFen: line.UnitFen, Units: line.Units, Seconds: secs,
				Exact: line.Exact, ExactText: line.Exact.String(), Fen: line.Fen()})
		}
	}
	return out, nil
}
