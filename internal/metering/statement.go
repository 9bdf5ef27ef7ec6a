package metering

import (
	"context"
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
	RateFen      int64  // per unit-hour
	Units        int64
	Seconds      int64
	Exact        rating.Amount
	Fen          int64 // Exact rounded half-up, once per line
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
}

// Statement rates the account's runs in the month that holds month. Lines
// group an instance's seconds at one rate; each is rounded once; the
// total is the sum of the rounded lines. Package-plan runs are prepaid
// and left out.
func (s *Service) Statement(ctx context.Context, book PriceBook, acc *gpurent.Account, month time.Time) (*Statement, error) {
	b, err := book.Book(ctx)
	if err != nil {
		return nil, err
	}
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
	}
	lines := map[key]*StatementLine{}
	names := map[string]*gpurent.Instance{}
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
		}
		if in.Plan != gpurent.PlanHourly {
			continue
		}
		if run.EndedAt == nil && end.After(from) {
			st.Open = true
		}
		rated, err := rateRun(b, run, acc, end)
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
			k := key{run.InstanceID, window, l.RateFen, l.Units}
			sl := lines[k]
			if sl == nil {
				sl = &StatementLine{InstanceID: run.InstanceID, InstanceName: in.Name, TypeID: run.TypeID, GPUCount: run.GPUCount,
					Window: window, RateFen: l.RateFen, Units: l.Units}
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
		st.TotalFen += l.Fen
		st.Lines = append(st.Lines, *l)
	}
	sort.Slice(st.Lines, func(i, j int) bool {
		a, b := st.Lines[i], st.Lines[j]
		if a.InstanceID != b.InstanceID {
			return a.InstanceID < b.InstanceID
		}
		if a.Window != b.Window {
			return a.Window > b.Window // peak before off-peak
		}
		return a.RateFen > b.RateFen
	})
	return st, nil
}
