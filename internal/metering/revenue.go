package metering

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
)

// RevenueDay is one calendar day's revenue (Asia/Shanghai).
type RevenueDay struct {
	Day      string // 2026-11-29
	TotalFen int64
	ByType   map[string]int64 // GPU type → fen; "other" for debits not from usage
}

// Revenue is the operator's revenue report: what reached the platform's
// revenue account from usage debits, per day and per GPU type.
type Revenue struct {
	From, To time.Time
	Days     []RevenueDay
	ByType   map[string]int64
	TotalFen int64
}

// Revenue reports revenue in [from, to), by day in loc and by GPU type.
func (s *Service) Revenue(ctx context.Context, from, to time.Time, loc *time.Location) (*Revenue, error) {
	if !to.After(from) || to.Sub(from) > 400*24*time.Hour {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "the report's range must be positive and at most 400 days")
	}
	debits, err := s.cfg.Store.ListDebits(ctx, from, to)
	if err != nil {
		return nil, err
	}
	runs, err := s.cfg.Store.ListUsageRuns(ctx, gpurent.UsageRunFilter{})
	if err != nil {
		return nil, err
	}
	typeOf := make(map[string]string, len(runs))
	for _, r := range runs {
		typeOf[r.ID] = r.TypeID
	}
	out := &Revenue{From: from, To: to, ByType: map[string]int64{}}
	days := map[string]*RevenueDay{}
	for _, d := range debits {
		typ := "other"
		if rest, ok := strings.CutPrefix(d.Key, "usage:"); ok {
			if i := strings.LastIndexByte(rest, ':'); i > 0 {
				if t, ok := typeOf[rest[:i]]; ok {
					typ = t
				}
			}
		}
		day := d.At.In(loc).Format(time.DateOnly)
		rd := days[day]
		if rd == nil {
			rd = &RevenueDay{Day: day, ByType: map[string]int64{}}
			days[day] = rd
		}
		rd.TotalFen += d.RevenueFen
		rd.ByType[typ] += d.RevenueFen
		out.ByType[typ] += d.RevenueFen
		out.TotalFen += d.RevenueFen
	}
	for _, rd := range days {
		out.Days = append(out.Days, *rd)
	}
	sort.Slice(out.Days, func(i, j int) bool { return out.Days[i].Day < out.Days[j].Day })
	return out, nil
}

// UsageRuns lists the usage runs open at or after since (operators' reports:
// utilization per GPU type), oldest first.
func (s *Service) UsageRuns(ctx context.Context, since time.Time) ([]gpurent.UsageRun, error) {
	return s.cfg.Store.ListUsageRuns(ctx, gpurent.UsageRunFilter{Since: since})
}
