package incident

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/sla"
)

// credit posts the SLA credit of every resolved, host-attributed incident of
// an instance that has none yet: the amount is decided and recorded on the
// incident first (under its ledger key), then posted; a crash in between
// posts the recorded amount under the same key, so it is paid once.
func (s *Service) credit(ctx context.Context) error {
	now := s.now()
	list, err := s.store.ListIncidents(ctx, gpurent.IncidentFilter{Since: now.Add(-48 * time.Hour)})
	if err != nil {
		return err
	}
	// Incidents paid in an earlier tick are known without reading their
	// timelines again; the set is kept to the incidents still listed.
	s.mu.Lock()
	paid := s.paid
	s.paid = make(map[string]bool, len(paid))
	for i := range list {
		if paid[list[i].ID] {
			s.paid[list[i].ID] = true
		}
	}
	s.mu.Unlock()
	for i := range list {
		inc := &list[i]
		if inc.State != gpurent.IncidentResolved || inc.Attribution != gpurent.AttrHost || inc.InstanceID == "" || inc.EndedAt == nil ||
			paid[inc.ID] {
			continue
		}
		if inc.CreditKey == "" {
			settled, err := s.settled(ctx, inc)
			if err != nil {
				return err
			}
			if !settled {
				continue // the charges it is capped by are not final yet
			}
			if err := s.decide(ctx, inc, now); err != nil {
				return err
			}
		}
		if err := s.pay(ctx, inc); err != nil {
			return err
		}
	}
	return nil
}

// settled reports whether the runs of the instance that ended by the
// incident's end are debited in full, those whose allocation ended
// included even before their end is reported: the month's charges, which
// cap the credit, then include them.
func (s *Service) settled(ctx context.Context, inc *gpurent.Incident) (bool, error) {
	runs, err := s.store.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: inc.InstanceID, UnsettledOnly: true})
	if err != nil {
		return false, err
	}
	for _, r := range runs {
		if !r.StartedAt.Before(*inc.EndedAt) {
			continue
		}
		if r.EndedAt != nil {
			return false, nil // ended, its last debit not posted yet
		}
		// Still open, but on an allocation that ended (the GPUs a failover
		// left): its end is on its way in the agent's next report.
		a, err := s.store.AllocationByID(ctx, r.AllocationID)
		if err != nil && !gpurent.IsCode(err, gpurent.CodeNotFound) {
			return false, err
		}
		if err == nil && a.EndedAt != nil {
			return false, nil
		}
	}
	return true, nil
}

// decide computes an incident's credit and records it with its key.
func (s *Service) decide(ctx context.Context, inc *gpurent.Incident, now time.Time) error {
	fen, how, err := s.amount(ctx, inc)
	if err != nil {
		return err
	}
	inc.CreditFen, inc.CreditKey, inc.UpdatedAt = fen, "sla:incident:"+inc.ID, now
	if err := s.store.UpdateIncident(ctx, inc); err != nil {
		return err
	}
	return s.entry(ctx, inc.ID, "credit_due", how)
}

// pay posts a decided credit unless its entry says it was posted.
func (s *Service) pay(ctx context.Context, inc *gpurent.Incident) error {
	entries, err := s.store.ListIncidentEntries(ctx, inc.ID)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Kind == "credit" {
			s.markPaid(inc.ID)
			return nil
		}
	}
	msg := "no credit due"
	if inc.CreditFen > 0 {
		if s.cfg.Credits == nil {
			return nil
		}
		at := *inc.EndedAt
		expires := at.AddDate(0, 0, s.cfg.Terms.ExpiryDays)
		note := fmt.Sprintf("SLA credit for incident %s on instance %s: %s", inc.ID, inc.InstanceID, inc.Cause)
		if _, err := s.cfg.Credits.GrantSLA(ctx, inc.AccountID, inc.CreditFen, inc.CreditKey, at, expires, note); err != nil {
			return err
		}
		msg = fmt.Sprintf("credited %s as SLA credit, expiring %s", money.Ungrouped(inc.CreditFen), expires.In(s.cfg.Location).Format(time.DateOnly))
		s.metrics.credits.Inc()
		s.metrics.creditFen.Add(float64(inc.CreditFen))
	}
	if err := s.entry(ctx, inc.ID, "credit", msg); err != nil {
		return err
	}
	s.markPaid(inc.ID)
	in, err := s.store.InstanceByID(ctx, inc.InstanceID)
	if err != nil {
		return err
	}
	if inc.CreditFen > 0 {
		return s.tell(ctx, in, "sla_credit", fmt.Sprintf("incident %s (%s, %s down): %s",
			inc.ID, inc.Cause, inc.EndedAt.Sub(inc.StartedAt).Round(time.Second), msg))
	}
	return nil
}

// amount is an incident's credit: the incident credit (time since the last
// power-on, at most 24 h, at the hourly price of the affected GPUs) plus the
// hour rule (each clock hour down more than 6 minutes is not charged: its
// charged time is given back), capped so that the instance's credits this
// month stay within its charges this month.
func (s *Service) amount(ctx context.Context, inc *gpurent.Incident) (int64, string, error) {
	in, err := s.store.InstanceByID(ctx, inc.InstanceID)
	if err != nil {
		return 0, "", err
	}
	runs, err := s.store.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: in.ID})
	if err != nil {
		return 0, "", err
	}
	// The power-on the fault interrupted, and its GPUs.
	var cur *gpurent.UsageRun
	for i := range runs {
		r := &runs[i]
		if !r.StartedAt.After(inc.StartedAt) && (cur == nil || r.StartedAt.After(cur.StartedAt)) {
			cur = r
		}
	}
	if cur == nil || cur.GPUCount == 0 || s.cfg.Prices == nil {
		return 0, "no power-on with GPUs was interrupted", nil
	}
	affected := cur.GPUCount
	if inc.GPUID != "" && inc.Class != gpurent.FaultNode && inc.Class != gpurent.FaultHost && inc.Class != gpurent.FaultHostDown {
		affected = 1
	}
	affectedHour, err := s.cfg.Prices.HourlyFen(ctx, cur.TypeID, affected, inc.StartedAt)
	if err != nil {
		return 0, "", err
	}
	allHour, err := s.cfg.Prices.HourlyFen(ctx, cur.TypeID, cur.GPUCount, inc.StartedAt)
	if err != nil {
		return 0, "", err
	}
	t := s.cfg.Terms
	var incident int64
	if t.EarnsIncidentCredit(inc.Class, inc.Attribution) {
		incident = sla.IncidentCredit(t, cur.StartedAt, inc.StartedAt, affectedHour)
	}
	down := []sla.Interval{{From: inc.StartedAt, To: *inc.EndedAt}}
	hours := sla.HourRuleHours(t, down, s.cfg.Location)
	var hourRule int64
	for _, h := range hours {
		// The time of the hour the instance ran and was charged for.
		up := time.Hour - overlap(h, h.Add(time.Hour), inc.StartedAt, *inc.EndedAt)
		if st := cur.StartedAt; st.After(h) {
			up -= min(st.Sub(h), up)
		}
		hourRule += (allHour*int64(up/time.Second) + 1800) / 3600
	}
	from, to := sla.Month(inc.StartedAt, s.cfg.Location)
	var charged int64
	for _, r := range runs {
		if !r.StartedAt.Before(from) && r.StartedAt.Before(to) {
			charged += r.DebitedFen
		}
	}
	prior, err := s.store.ListIncidents(ctx, gpurent.IncidentFilter{InstanceID: in.ID, Since: from})
	if err != nil {
		return 0, "", err
	}
	var already int64
	for _, p := range prior {
		if p.ID != inc.ID && p.CreditKey != "" && !p.StartedAt.Before(from) {
			already += p.CreditFen
		}
	}
	// The month's availability credit, once posted, counts too.
	if tx, err := s.store.LedgerTxByKey(ctx, monthKey(in.ID, from, s.cfg.Location)); err == nil {
		already += tx.AmountFen
	} else if !gpurent.IsCode(err, gpurent.CodeNotFound) {
		return 0, "", err
	}
	want := incident + hourRule
	got := sla.CapCredit(t, want, already, charged)
	how := fmt.Sprintf("incident credit %s (%s since the power-on at %s × %s/h for %d GPU(s)); hour rule %s (%d hour(s) down more than %d min); %s due",
		money.Ungrouped(incident), inc.StartedAt.Sub(cur.StartedAt).Round(time.Second), cur.StartedAt.In(s.cfg.Location).Format("15:04:05 MST"),
		money.Ungrouped(affectedHour), affected, money.Ungrouped(hourRule), len(hours), t.HourRuleMinutes, money.Ungrouped(got))
	if got < want {
		how += fmt.Sprintf(" (capped: this month's credits may not pass its charges of %s)", money.Ungrouped(charged))
	}
	return got, how, nil
}

// overlap is how long [a, b) and [c, d) share.
func overlap(a, b, c, d time.Time) time.Duration {
	from, to := a, b
	if c.After(from) {
		from = c
	}
	if d.Before(to) {
		to = d
	}
	if to.After(from) {
		return to.Sub(from)
	}
	return 0
}

// monthly posts, once a month is over, the availability credit of each
// instance that had incidents in it: the tier its availability falls in,
// on its charges that month, on top of what its incidents got, all of it
// capped at the month's charges.
func (s *Service) monthly(ctx context.Context) error {
	now := s.now()
	thisMonth, _ := sla.Month(now, s.cfg.Location)
	from, to := sla.Month(thisMonth.Add(-time.Hour), s.cfg.Location)
	list, err := s.store.ListIncidents(ctx, gpurent.IncidentFilter{Since: from})
	if err != nil {
		return err
	}
	byInstance := map[string][]gpurent.Incident{}
	pending := map[string]bool{} // an incident of the month still open: not yet
	for _, inc := range list {
		if inc.Attribution != gpurent.AttrHost || inc.InstanceID == "" || !inc.StartedAt.Before(to) {
			continue
		}
		if inc.EndedAt == nil {
			pending[inc.InstanceID] = true
			continue
		}
		byInstance[inc.InstanceID] = append(byInstance[inc.InstanceID], inc)
	}
	ids := make([]string, 0, len(byInstance))
	for id := range byInstance {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	s.mu.Lock()
	done := s.monthsDone
	if s.monthOf != from {
		done, s.monthOf = map[string]bool{}, from // a new month to settle
		s.monthsDone = done
	}
	s.mu.Unlock()
	for _, id := range ids {
		if pending[id] || done[id] {
			continue
		}
		if err := s.monthCredit(ctx, id, byInstance[id], from, to); err != nil {
			return err
		}
		s.mu.Lock()
		done[id] = true // settled: later ticks of this process skip it
		s.mu.Unlock()
	}
	return nil
}

func (s *Service) markPaid(incidentID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paid[incidentID] = true
}

func (s *Service) monthCredit(ctx context.Context, instanceID string, incs []gpurent.Incident, from, to time.Time) error {
	in, err := s.store.InstanceByID(ctx, instanceID)
	if err != nil {
		return err
	}
	key := monthKey(instanceID, from, s.cfg.Location)
	report, err := s.availability(ctx, in, incs, from, to)
	if err != nil {
		return err
	}
	var already int64
	for _, inc := range incs {
		already += inc.CreditFen
	}
	t := s.cfg.Terms
	tier := sla.TierCredit(t, report.bp, report.charged)
	got := sla.CapCredit(t, tier, already, report.charged)
	if got <= 0 || s.cfg.Credits == nil {
		return nil
	}
	expires := to.AddDate(0, 0, t.ExpiryDays)
	note := fmt.Sprintf("SLA availability credit for %s, instance %s: %d.%02d%% available", from.In(s.cfg.Location).Format("2006-01"),
		instanceID, report.bp/100, report.bp%100)
	dup, err := s.cfg.Credits.GrantSLA(ctx, in.AccountID, got, key, to, expires, note)
	if err != nil || dup {
		return err
	}
	return s.tell(ctx, in, "sla_credit", fmt.Sprintf("%s: credited %s", note, money.Ungrouped(got)))
}

type monthAvailability struct {
	bp      int
	charged int64
}

// availability is an instance's availability over [from, to): the time it
// was meant to run (its runs, plus the down time of its incidents) against
// the time platform faults took.
func (s *Service) availability(ctx context.Context, in *gpurent.Instance, incs []gpurent.Incident, from, to time.Time) (monthAvailability, error) {
	runs, err := s.store.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: in.ID})
	if err != nil {
		return monthAvailability{}, err
	}
	now := s.now()
	var service, down []sla.Interval
	var charged int64
	clip := func(a, b time.Time) (sla.Interval, bool) {
		if a.Before(from) {
			a = from
		}
		if b.After(to) {
			b = to
		}
		return sla.Interval{From: a, To: b}, b.After(a)
	}
	for _, r := range runs {
		end := now
		if r.EndedAt != nil {
			end = *r.EndedAt
		}
		if iv, ok := clip(r.StartedAt, end); ok {
			service = append(service, iv)
		}
		if !r.StartedAt.Before(from) && r.StartedAt.Before(to) {
			charged += r.DebitedFen
		}
	}
	for _, inc := range incs {
		end := now
		if inc.EndedAt != nil {
			end = *inc.EndedAt
		}
		if iv, ok := clip(inc.StartedAt, end); ok {
			down = append(down, iv)
			service = append(service, iv)
		}
	}
	return monthAvailability{bp: sla.AvailabilityBP(service, down), charged: charged}, nil
}

// monthKey is the ledger key of an instance's availability credit for the
// month starting at from.
func monthKey(instanceID string, from time.Time, loc *time.Location) string {
	return "sla:month:" + instanceID + ":" + from.In(loc).Format("2006-01")
}
