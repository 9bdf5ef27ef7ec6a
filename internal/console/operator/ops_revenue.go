package operator

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/rating"
)

// This file serves /ops/revenue: a month's revenue per day and per GPU
// type (metering's revenue report, what `gpurent revenue` shows), and
// utilization per GPU type and day: the GPU-hours allocated instances ran
// over the GPU-hours the fleet has.

// opsRevenueData is the revenue page.
type opsRevenueData struct {
	Tabs              []opsTab
	Month, Prev, Next string
	From, To          string
	Types             []string
	Days              []opsRevenueDay
	ByType            []int64
	TotalFen          int64
	RevenueChart      string
	Util              []opsUtilRow
	UtilChart         string
	HasUtil           bool
}

type opsRevenueDay struct {
	Day      string
	TotalFen int64
	ByType   []int64
}

type opsUtilRow struct {
	Type           string
	GPUs           int
	UsedHours, Pct string
}

// opsChart is the data-chart attribute of an svg.chart (console.js draws
// it): values are exact decimals.
type opsChart struct {
	Labels []string         `json:"labels"`
	Series []opsChartSeries `json:"series"`
	Max    int              `json:"max,omitempty"`
	Unit   string           `json:"unit,omitempty"`
}

type opsChartSeries struct {
	Name   string        `json:"name"`
	Values []json.Number `json:"values"`
}

func (c opsChart) String() string {
	b, err := json.Marshal(c)
	if err != nil {
		return "{}"
	}
	return string(b)
}

func (s *Pages) opsRevenue(w http.ResponseWriter, r *http.Request, p *web.Page) {
	s.opsPage(p, r, "ops.revenue.title")
	loc, err := rating.LoadBillingZone()
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	now := s.opsNow()
	from := time.Date(now.In(loc).Year(), now.In(loc).Month(), 1, 0, 0, 0, 0, loc)
	if m := r.URL.Query().Get("month"); m != "" {
		t, err := time.ParseInLocation("2006-01", m, loc)
		if err != nil {
			p.Error = opsFieldError(p, opsProblemFormat, "ops.revenue.month")
		} else {
			from = t
		}
	}
	to := from.AddDate(0, 1, 0)
	rev, err := s.cfg.Metering.Revenue(p.Context(), from, to, loc)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	d := opsRevenueData{Tabs: s.opsTabs(p, "revenue"), Month: from.Format("2006-01"),
		Prev: from.AddDate(0, -1, 0).Format("2006-01"), Next: to.Format("2006-01"),
		From: from.Format(time.DateOnly), To: to.AddDate(0, 0, -1).Format(time.DateOnly), TotalFen: rev.TotalFen}
	for t := range rev.ByType {
		d.Types = append(d.Types, t)
	}
	sort.Strings(d.Types)
	byDay := map[string]int{}
	for i, day := range rev.Days {
		row := opsRevenueDay{Day: day.Day, TotalFen: day.TotalFen}
		for _, t := range d.Types {
			row.ByType = append(row.ByType, day.ByType[t])
		}
		d.Days = append(d.Days, row)
		byDay[day.Day] = i
	}
	for _, t := range d.Types {
		d.ByType = append(d.ByType, rev.ByType[t])
	}
	// The chart has every day of the month up to today, a day without
	// revenue at zero.
	days := opsDays(from, to, now, loc)
	chart := opsChart{Labels: opsDayLabels(days)}
	total := opsChartSeries{Name: p.T("ops.revenue.total")}
	series := make([]opsChartSeries, len(d.Types))
	for j, t := range d.Types {
		series[j].Name = t
	}
	for _, day := range days {
		key := day.Format(time.DateOnly)
		var rd *opsRevenueDay
		if i, ok := byDay[key]; ok {
			rd = &d.Days[i]
		}
		if rd == nil {
			total.Values = append(total.Values, opsYuanNumber(0))
			for j := range series {
				series[j].Values = append(series[j].Values, opsYuanNumber(0))
			}
			continue
		}
		total.Values = append(total.Values, opsYuanNumber(rd.TotalFen))
		for j := range series {
			series[j].Values = append(series[j].Values, opsYuanNumber(rd.ByType[j]))
		}
	}
	chart.Series = append([]opsChartSeries{total}, series...)
	d.RevenueChart = chart.String()

	if s.cfg.Fleet != nil && s.cfg.Metering != nil {
		hosts, err := s.cfg.Fleet.Hosts(p.Context(), p.Account)
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		gpus := map[string]int{}
		for _, h := range hosts {
			for _, g := range h.GPUs {
				if g.Health != gpurent.GPURetired && g.Health != gpurent.GPUMissing {
					gpus[g.TypeID]++
				}
			}
		}
		// The usage runs metering bills from, those open in the month.
		runs, err := s.cfg.Metering.UsageRuns(p.Context(), from)
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		u := opsUtilization(runs, gpus, days, now)
		d.HasUtil = true
		uchart := opsChart{Labels: opsDayLabels(days), Max: 100, Unit: "%"}
		for _, t := range u.Types {
			d.Util = append(d.Util, opsUtilRow{Type: t, GPUs: gpus[t], UsedHours: opsHours(u.Used[t]),
				Pct: opsShare(u.Used[t], u.Capacity[t])})
			sr := opsChartSeries{Name: t}
			for i := range days {
				sr.Values = append(sr.Values, json.Number(opsShareNumber(u.DayUsed[i][t], u.DayCapacity[i][t])))
			}
			uchart.Series = append(uchart.Series, sr)
		}
		d.UtilChart = uchart.String()
	}
	s.site.Render(w, r, p, "ops_revenue", d)
}

// opsDays are the local midnights of the days of [from, to) that have
// begun by now.
func opsDays(from, to, now time.Time, loc *time.Location) []time.Time {
	var out []time.Time
	for d := from.In(loc); d.Before(to) && d.Before(now); d = d.AddDate(0, 0, 1) {
		out = append(out, d)
	}
	return out
}

func opsDayLabels(days []time.Time) []string {
	out := make([]string, len(days))
	for i, d := range days {
		out[i] = d.Format("01-02")
	}
	return out
}

// opsUtil is allocated GPU-seconds against the fleet's GPU-seconds, per
// GPU type, per day and over the days.
type opsUtil struct {
	Types                []string
	Used, Capacity       map[string]int64
	DayUsed, DayCapacity []map[string]int64
}

// opsUtilization sums, for each day (a local midnight in days) up to now,
// the GPU-seconds each run held its GPUs (count × overlap of its run
// interval, an open run running until now) and the capacity: the type's
// GPUs in the fleet × the day's elapsed seconds. Capacity is today's
// fleet, applied to past days too.
func opsUtilization(runs []gpurent.UsageRun, gpus map[string]int, days []time.Time, now time.Time) opsUtil {
	u := opsUtil{Used: map[string]int64{}, Capacity: map[string]int64{}}
	seen := map[string]bool{}
	for t := range gpus {
		seen[t] = true
	}
	ends := make([]time.Time, len(days))
	for i, d := range days {
		end := d.AddDate(0, 0, 1)
		if end.After(now) {
			end = now
		}
		ends[i] = end
		u.DayUsed = append(u.DayUsed, map[string]int64{})
		caps := map[string]int64{}
		for t, n := range gpus {
			c := int64(n) * int64(end.Sub(d)/time.Second)
			caps[t] = c
			u.Capacity[t] += c
		}
		u.DayCapacity = append(u.DayCapacity, caps)
	}
	for _, run := range runs {
		if run.GPUCount <= 0 {
			continue
		}
		start, end := run.StartedAt, now
		if run.EndedAt != nil {
			end = *run.EndedAt
		}
		if !end.After(start) {
			continue
		}
		// The days the run overlaps: a binary search for the first.
		i := sort.Search(len(days), func(i int) bool { return ends[i].After(start) })
		for ; i < len(days) && days[i].Before(end); i++ {
			lo, hi := start, end
			if days[i].After(lo) {
				lo = days[i]
			}
			if ends[i].Before(hi) {
				hi = ends[i]
			}
			if !hi.After(lo) {
				continue
			}
			secs := int64(run.GPUCount) * int64(hi.Sub(lo)/time.Second)
			u.DayUsed[i][run.TypeID] += secs
			u.Used[run.TypeID] += secs
			seen[run.TypeID] = true
		}
	}
	for t := range seen {
		u.Types = append(u.Types, t)
	}
	sort.Strings(u.Types)
	return u
}

// opsHours shows GPU-seconds as GPU-hours with one decimal.
func opsHours(secs int64) string {
	tenths := (secs + 180) / 360
	return strconv.FormatInt(tenths/10, 10) + "." + strconv.FormatInt(tenths%10, 10)
}

// opsShare is used/capacity as a percentage with one decimal ("-" without
// capacity).
func opsShare(used, capacity int64) string {
	if capacity <= 0 {
		return "-"
	}
	return opsShareNumber(used, capacity) + "%"
}

// opsShareNumber is used/capacity in percent with one decimal, as a bare
// number ("0" without capacity).
func opsShareNumber(used, capacity int64) string {
	if capacity <= 0 {
		return "0"
	}
	tenths := (used*1000 + capacity/2) / capacity
	return strconv.FormatInt(tenths/10, 10) + "." + strconv.FormatInt(tenths%10, 10)
}
