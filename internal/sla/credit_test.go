package sla_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/sla"
)

func TestIncidentCredit(t *testing.T) {
	terms := sla.DefaultTerms()
	on := time.Date(2025, 3, 3, 1, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		after  time.Duration
		hourly int64
		want   int64
	}{
		{"the page's example: 3 h 20 min of two RTX 4090s", 3*time.Hour + 20*time.Minute, 1042, 3473}, // 3473.33
		{"half a fen rounds up", 30 * time.Minute, 1, 1},
		{"just under half a fen rounds down", 30*time.Minute - time.Nanosecond, 1, 0},
		{"exactly .5 at 90 min × 3 fen", 90 * time.Minute, 3, 5},
		{"sub-second exact: 1.8 s × 1000 fen/h = 0.5", 1800 * time.Millisecond, 1000, 1},
		{"one hour", time.Hour, 521, 521},
		{"exactly 24 h", 24 * time.Hour, 1042, 25008},
		{"24 h and a nanosecond is capped", 24*time.Hour + time.Nanosecond, 1042, 25008},
		{"30 h is capped at 24 h", 30 * time.Hour, 1042, 25008},
		{"a year is capped at 24 h", 365 * 24 * time.Hour, 1042, 25008},
		{"fault at the power-on", 0, 1042, 0},
		{"fault before the power-on", -time.Hour, 1042, 0},
		{"free GPU", time.Hour, 0, 0},
		{"negative price", time.Hour, -100, 0},
		{"1 ns at the largest price", time.Nanosecond, math.MaxInt64, 2562048}, // 2562047.79
		{"24 h at the largest price saturates", 24 * time.Hour, math.MaxInt64, math.MaxInt64},
		{"23 h 59 min at a price near the limit", 23*time.Hour + 59*time.Minute, math.MaxInt64 / 24, oracleIncident(24, 23*time.Hour+59*time.Minute, math.MaxInt64/24).Int64()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := sla.IncidentCredit(terms, on, on.Add(c.after), c.hourly)
			if got != c.want {
				t.Errorf("IncidentCredit(%v, %d fen/h) = %d, want %d", c.after, c.hourly, got, c.want)
			}
		})
	}
	shorter := terms
	shorter.IncidentCreditMaxHours = 2
	if got := sla.IncidentCredit(shorter, on, on.Add(5*time.Hour), 100); got != 200 {
		t.Errorf("with a 2 h ceiling, 5 h at 100 fen/h = %d, want 200", got)
	}
	// Zones and monotonic readings do not change an instant.
	sh := shanghai(t)
	if a, b := sla.IncidentCredit(terms, on.In(sh), on.Add(time.Hour).In(sh), 521), sla.IncidentCredit(terms, on, on.Add(time.Hour), 521); a != b {
		t.Errorf("zone changed the credit: %d vs %d", a, b)
	}
}

func TestHourRuleHours(t *testing.T) {
	sh := shanghai(t)
	terms := sla.DefaultTerms()
	cases := []struct {
		name string
		down []sla.Interval
		want []string // local hour starts
	}{
		{"nothing down", nil, nil},
		{"exactly 6 min in one hour is charged", []sla.Interval{iv(t, sh, "2025-03-03 14:20:00", "2025-03-03 14:26:00")}, nil},
		{"6 min and 1 s voids the hour", []sla.Interval{iv(t, sh, "2025-03-03 14:20:00", "2025-03-03 14:26:01")}, []string{"2025-03-03 14:00:00"}},
		{"the page's example 14:00–14:07", []sla.Interval{iv(t, sh, "2025-03-03 14:00:00", "2025-03-03 14:07:00")}, []string{"2025-03-03 14:00:00"}},
		{"two outages of 3 and 4 min add up", []sla.Interval{
			iv(t, sh, "2025-03-03 14:01:00", "2025-03-03 14:04:00"),
			iv(t, sh, "2025-03-03 14:50:00", "2025-03-03 14:54:00"),
		}, []string{"2025-03-03 14:00:00"}},
		{"overlapping outages count once (6 min)", []sla.Interval{
			iv(t, sh, "2025-03-03 14:00:00", "2025-03-03 14:05:00"),
			iv(t, sh, "2025-03-03 14:02:00", "2025-03-03 14:06:00"),
		}, nil},
		{"7 min split 3 + 4 across an hour boundary voids neither", []sla.Interval{iv(t, sh, "2025-03-03 13:57:00", "2025-03-03 14:04:00")}, nil},
		{"14 min split 7 + 7 voids both", []sla.Interval{iv(t, sh, "2025-03-03 13:53:00", "2025-03-03 14:07:00")}, []string{"2025-03-03 13:00:00", "2025-03-03 14:00:00"}},
		{"spanning hours", []sla.Interval{iv(t, sh, "2025-03-03 10:30:00", "2025-03-03 13:30:00")},
			[]string{"2025-03-03 10:00:00", "2025-03-03 11:00:00", "2025-03-03 12:00:00", "2025-03-03 13:00:00"}},
		{"spanning hours, 6 min at each end", []sla.Interval{iv(t, sh, "2025-03-03 10:54:00", "2025-03-03 13:06:00")},
			[]string{"2025-03-03 11:00:00", "2025-03-03 12:00:00"}},
		{"spanning local midnight", []sla.Interval{iv(t, sh, "2025-03-03 23:50:00", "2025-03-04 00:10:00")},
			[]string{"2025-03-03 23:00:00", "2025-03-04 00:00:00"}},
		{"spanning a month end, 5 + 7 min", []sla.Interval{iv(t, sh, "2025-01-31 23:55:00", "2025-02-01 00:07:00")},
			[]string{"2025-02-01 00:00:00"}},
		{"spanning a leap day and a year end", []sla.Interval{
			iv(t, sh, "2024-02-29 23:50:00", "2024-03-01 00:07:00"),
			iv(t, sh, "2024-12-31 23:53:00", "2025-01-01 00:06:00"),
		}, []string{"2024-02-29 23:00:00", "2024-03-01 00:00:00", "2024-12-31 23:00:00"}},
		{"empty and reversed intervals are ignored", []sla.Interval{
			iv(t, sh, "2025-03-03 14:00:00", "2025-03-03 14:00:00"),
			iv(t, sh, "2025-03-03 15:30:00", "2025-03-03 15:00:00"),
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := sla.HourRuleHours(terms, c.down, sh)
			var want []time.Time
			for _, s := range c.want {
				want = append(want, at(t, sh, s).UTC())
			}
			if !slices.Equal(got, want) {
				t.Errorf("HourRuleHours = %v, want %v", got, want)
			}
			for _, h := range got {
				if h.Location() != time.UTC {
					t.Errorf("hour %v is not in UTC", h)
				}
			}
		})
	}
}

func TestHourRuleHoursZones(t *testing.T) {
	terms := sla.DefaultTerms()
	u := func(s string) time.Time { return at(t, time.UTC, s) }
	// Shanghai hours start on whole UTC hours (UTC+8, no daylight saving).
	down := []sla.Interval{{From: u("2025-03-03 06:55:00"), To: u("2025-03-03 07:02:00")}}
	if got := sla.HourRuleHours(terms, down, shanghai(t)); len(got) != 0 {
		t.Errorf("5 + 2 min across an hour: %v, want none", got)
	}
	// In India (UTC+5:30) clock hours start at half past the UTC hour: 8
	// minutes from 10:25 UTC are 15:55–16:03 local, 5 + 3, voiding nothing,
	// while in UTC they are one hour's 8 minutes.
	down = []sla.Interval{{From: u("2025-03-03 10:25:00"), To: u("2025-03-03 10:33:00")}}
	if got := sla.HourRuleHours(terms, down, zone(t, "Asia/Kolkata")); len(got) != 0 {
		t.Errorf("Kolkata: %v, want none", got)
	}
	if got := sla.HourRuleHours(terms, down, time.UTC); !slices.Equal(got, []time.Time{u("2025-03-03 10:00:00")}) {
		t.Errorf("UTC: %v, want 10:00", got)
	}
	down = []sla.Interval{{From: u("2025-03-03 10:20:00"), To: u("2025-03-03 10:40:00")}}
	if got := sla.HourRuleHours(terms, down, zone(t, "Asia/Kolkata")); !slices.Equal(got, []time.Time{u("2025-03-03 09:30:00"), u("2025-03-03 10:30:00")}) {
		t.Errorf("Kolkata 10 + 10 min: %v, want 09:30 and 10:30 UTC", got)
	}
	// New York falls back on 2025-11-02: 01:00–02:00 happens twice (05:00
	// and 06:00 UTC), and each is its own clock hour.
	ny := zone(t, "America/New_York")
	down = []sla.Interval{{From: u("2025-11-02 05:55:00"), To: u("2025-11-02 06:05:00")}}
	if got := sla.HourRuleHours(terms, down, ny); len(got) != 0 {
		t.Errorf("New York repeated hour, 5 + 5 min: %v, want none", got)
	}
	down = []sla.Interval{{From: u("2025-11-02 05:50:00"), To: u("2025-11-02 06:10:00")}}
	if got := sla.HourRuleHours(terms, down, ny); !slices.Equal(got, []time.Time{u("2025-11-02 05:00:00"), u("2025-11-02 06:00:00")}) {
		t.Errorf("New York repeated hour, 10 + 10 min: %v, want 05:00 and 06:00 UTC", got)
	}
	// Lord Howe Island moves its clocks by 30 minutes at 02:00 local.
	lh := zone(t, "Australia/Lord_Howe")
	for _, day := range []string{"2025-04-05 14:00:00", "2025-10-04 15:00:00"} {
		from := u(day).Add(-3 * time.Hour)
		down = []sla.Interval{{From: from, To: from.Add(6 * time.Hour)}}
		got := sla.HourRuleHours(terms, down, lh)
		if len(got) < 5 || !slices.IsSortedFunc(got, time.Time.Compare) {
			t.Errorf("Lord Howe %s: %v, want at least 5 sorted hours", day, got)
		}
	}
}

func TestHourRuleMinutesZero(t *testing.T) {
	sh := shanghai(t)
	terms := sla.DefaultTerms()
	terms.HourRuleMinutes = 0
	down := []sla.Interval{{From: at(t, sh, "2025-03-03 14:10:00"), To: at(t, sh, "2025-03-03 14:10:00").Add(time.Nanosecond)}}
	if got := sla.HourRuleHours(terms, down, sh); !slices.Equal(got, []time.Time{at(t, sh, "2025-03-03 14:00:00").UTC()}) {
		t.Errorf("with 0 minutes any down time voids the hour: %v", got)
	}
}

func TestNilZonePanics(t *testing.T) {
	for name, f := range map[string]func(){
		"HourRuleHours": func() { sla.HourRuleHours(sla.DefaultTerms(), nil, nil) },
		"Month":         func() { sla.Month(time.Now(), nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with a nil zone did not panic", name)
				}
			}()
			f()
		}()
	}
}

func TestAvailabilityBP(t *testing.T) {
	sh := shanghai(t)
	apr := iv(t, sh, "2025-04-01 00:00:00", "2025-05-01 00:00:00") // 720 h
	t0 := apr.From
	span := func(from, d time.Duration) sla.Interval {
		return sla.Interval{From: t0.Add(from), To: t0.Add(from + d)}
	}
	cases := []struct {
		name      string
		inService []sla.Interval
		down      []sla.Interval
		want      int
	}{
		{"nothing in service", nil, []sla.Interval{apr}, 10000},
		{"empty in-service interval", []sla.Interval{span(time.Hour, 0)}, nil, 10000},
		{"never down", []sla.Interval{apr}, nil, 10000},
		{"all down", []sla.Interval{apr}, []sla.Interval{apr}, 0},
		{"exactly 99.5%: 3.6 h of 720 h", []sla.Interval{apr}, []sla.Interval{span(10*time.Hour, 216*time.Minute)}, 9950},
		{"a nanosecond more is below 99.5%", []sla.Interval{apr}, []sla.Interval{span(10*time.Hour, 216*time.Minute+time.Nanosecond)}, 9949},
		{"exactly 99.0%", []sla.Interval{apr}, []sla.Interval{span(0, 432*time.Minute)}, 9900},
		{"exactly 95.0%", []sla.Interval{apr}, []sla.Interval{span(0, 36*time.Hour)}, 9500},
		{"down outside service is ignored", []sla.Interval{span(0, 100*time.Hour)},
			[]sla.Interval{span(100*time.Hour, 50*time.Hour), span(-time.Hour, time.Hour)}, 10000},
		{"down straddling the service start is clipped", []sla.Interval{span(time.Hour, 100*time.Hour)},
			[]sla.Interval{span(0, 2*time.Hour)}, 9900},
		{"overlapping down counts once", []sla.Interval{span(0, 100*time.Hour)},
			[]sla.Interval{span(0, time.Hour), span(30*time.Minute, time.Hour)}, 9850},
		{"service in pieces, down in a gap ignored", []sla.Interval{span(0, 50*time.Hour), span(60*time.Hour, 50*time.Hour)},
			[]sla.Interval{span(49*time.Hour, 12*time.Hour)}, 9800},
		{"tiny service, tiny down: floored", []sla.Interval{span(0, 3*time.Nanosecond)}, []sla.Interval{span(0, time.Nanosecond)}, 6666},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := sla.AvailabilityBP(c.inService, c.down); got != c.want {
				t.Errorf("AvailabilityBP = %d, want %d", got, c.want)
			}
		})
	}
}

func TestTierCredit(t *testing.T) {
	terms := sla.DefaultTerms()
	const month = 300000
	cases := []struct {
		bp   int
		fen  int64
		want int64
	}{
		{10000, month, 0},
		{9950, month, 0}, // 99.5% exactly is not below 99.5%
		{9949, month, 30000},
		{9900, month, 30000},
		{9899, month, 90000},
		{9500, month, 90000},
		{9499, month, 300000},
		{0, month, 300000},
		{-5, month, 300000},
		{9949, 5, 1},    // 0.5 rounds up
		{9949, 4, 0},    // 0.4 rounds down
		{9899, 5, 2},    // 1.5 rounds up
		{9899, 1, 0},    // 0.3
		{9949, 0, 0},    // no charge
		{9949, -100, 0}, // a negative charge credits nothing
		{9499, math.MaxInt64, math.MaxInt64},
		{9949, math.MaxInt64, 922337203685477581}, // 10% of MaxInt64 = ...580.7
	}
	for _, c := range cases {
		if got := sla.TierCredit(terms, c.bp, c.fen); got != c.want {
			t.Errorf("TierCredit(%d bp, %d fen) = %d, want %d", c.bp, c.fen, got, c.want)
		}
	}
	// The best tier applies even when the tiers are listed out of order.
	shuffled := terms
	shuffled.Tiers = []sla.Tier{terms.Tiers[2], terms.Tiers[0], terms.Tiers[1]}
	if got := sla.TierCredit(shuffled, 9000, month); got != month {
		t.Errorf("out-of-order tiers: %d, want %d", got, month)
	}
	none := terms
	none.Tiers = nil
	if got := sla.TierCredit(none, 0, month); got != 0 {
		t.Errorf("no tiers: %d, want 0", got)
	}
}

func TestCapCredit(t *testing.T) {
	terms := sla.DefaultTerms()
	cases := []struct {
		name                  string
		want, already, charge int64
		out                   int64
	}{
		{"well under the cap", 100, 0, 1000, 100},
		{"reaches the cap exactly", 1000, 0, 1000, 1000},
		{"cut to what is left", 100, 950, 1000, 50},
		{"cap reached", 100, 1000, 1000, 0},
		{"cap already exceeded is never negative", 100, 1200, 1000, 0},
		{"nothing charged", 100, 0, 0, 0},
		{"negative want", -5, 0, 1000, 0},
		{"negative already counts as zero", 100, -500, 1000, 100},
		{"negative charge", 100, 0, -1000, 0},
		{"largest values", math.MaxInt64, 0, math.MaxInt64, math.MaxInt64},
	}
	for _, c := range cases {
		if got := sla.CapCredit(terms, c.want, c.already, c.charge); got != c.out {
			t.Errorf("%s: CapCredit(%d, %d, %d) = %d, want %d", c.name, c.want, c.already, c.charge, got, c.out)
		}
	}
	half := terms
	half.CapPercent = 50
	if got := sla.CapCredit(half, 100, 0, 3); got != 2 { // 1.5 rounds up
		t.Errorf("50%% of 3 fen: %d, want 2", got)
	}
	if got := sla.CapCredit(half, 100, 400, 1000); got != 100 {
		t.Errorf("50%% cap with 400 of 500 used: %d, want 100", got)
	}
}

func TestMonth(t *testing.T) {
	sh := shanghai(t)
	u := func(s string) time.Time { return at(t, time.UTC, s) }
	cases := []struct {
		at       time.Time
		from, to time.Time
	}{
		{u("2025-01-31 15:59:59"), u("2024-12-31 16:00:00"), u("2025-01-31 16:00:00")},
		{u("2025-01-31 16:00:00"), u("2025-01-31 16:00:00"), u("2025-02-28 16:00:00")}, // Shanghai midnight of 1 Feb
		{u("2024-02-15 00:00:00"), u("2024-01-31 16:00:00"), u("2024-02-29 16:00:00")}, // leap February
		{u("2025-12-31 16:00:00"), u("2025-12-31 16:00:00"), u("2026-01-31 16:00:00")}, // a new year
		{u("2025-12-31 15:59:59"), u("2025-11-30 16:00:00"), u("2025-12-31 16:00:00")},
	}
	for _, c := range cases {
		from, to := sla.Month(c.at, sh)
		if !from.Equal(c.from) || !to.Equal(c.to) || from.Location() != time.UTC || to.Location() != time.UTC {
			t.Errorf("Month(%v) = [%v, %v), want [%v, %v) in UTC", c.at, from, to, c.from, c.to)
		}
	}
	from, to := sla.Month(u("2025-04-10 00:00:00"), sh)
	if to.Sub(from) != 720*time.Hour {
		t.Errorf("April is %v long, want 720 h", to.Sub(from))
	}
}
