package sla_test

import (
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/sla"
)

// monthOfOutages is a 31-day month with an outage of 7 minutes every 5 hours.
func monthOfOutages(b *testing.B) (svc, down []sla.Interval) {
	sh := shanghai(b)
	from, to := sla.Month(time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC), sh)
	svc = []sla.Interval{{From: from, To: to}}
	for x := from; x.Before(to); x = x.Add(5 * time.Hour) {
		down = append(down, sla.Interval{From: x.Add(55 * time.Minute), To: x.Add(62 * time.Minute)})
	}
	return svc, down
}

func BenchmarkIncidentCredit(b *testing.B) {
	terms := sla.DefaultTerms()
	on := time.Date(2025, 3, 3, 1, 0, 0, 0, time.UTC)
	var sink int64
	for i := 0; b.Loop(); i++ {
		sink += sla.IncidentCredit(terms, on, on.Add(time.Duration(i%100000)*time.Second), 1042)
	}
	_ = sink
}

func BenchmarkHourRuleHoursMonth(b *testing.B) {
	sh := shanghai(b)
	terms := sla.DefaultTerms()
	_, down := monthOfOutages(b)
	for b.Loop() {
		sla.HourRuleHours(terms, down, sh)
	}
}

func BenchmarkAvailabilityBPMonth(b *testing.B) {
	svc, down := monthOfOutages(b)
	for b.Loop() {
		sla.AvailabilityBP(svc, down)
	}
}
