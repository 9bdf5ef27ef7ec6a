package certification

import (
	"context"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// job reads a job the account may see: operators any, customers their own
// verify runs.
func (s *Service) job(ctx context.Context, acc *gpurent.Account, id string) (*gpurent.BenchJob, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "log in first")
	}
	j, err := s.store.BenchJobByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if acc.Role != gpurent.RoleOperator && (j.AccountID != acc.ID || j.Reason != gpurent.BenchVerify) {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "no benchmark job %q", id)
	}
	return j, nil
}

// Job is one job with its results, as the account may see it.
func (s *Service) Job(ctx context.Context, acc *gpurent.Account, id string) (*apiv1.BenchJob, error) {
	j, err := s.job(ctx, acc, id)
	if err != nil {
		return nil, err
	}
	return s.jobView(ctx, acc, j)
}

// Jobs lists jobs: an operator's filter, or a customer's verify runs of
// one instance (instanceID required for customers).
func (s *Service) Jobs(ctx context.Context, acc *gpurent.Account, f gpurent.BenchJobFilter) ([]apiv1.BenchJob, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "log in first")
	}
	if acc.Role != gpurent.RoleOperator {
		if f.InstanceID == "" {
			return nil, gpurent.Errorf(gpurent.CodeForbidden, "customers list the verify runs of one of their instances")
		}
		// Another account's instance, or none, is not found: the answer
		// is the owner's alone (an empty list would say nothing either
		// way, but the route is the owner's like every instance route).
		in, err := s.store.InstanceByID(ctx, f.InstanceID)
		if err != nil && !gpurent.IsCode(err, gpurent.CodeNotFound) {
			return nil, err
		}
		if err != nil || in.AccountID != acc.ID {
			return nil, gpurent.Errorf(gpurent.CodeNotFound, "instance %q not found", f.InstanceID)
		}
		f = gpurent.BenchJobFilter{InstanceID: f.InstanceID, AccountID: acc.ID, Limit: f.Limit}
	}
	if f.Limit <= 0 || f.Limit > 500 {
		f.Limit = 100
	}
	list, err := s.store.ListBenchJobs(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]apiv1.BenchJob, 0, len(list))
	for i := range list {
		v, err := s.jobView(ctx, acc, &list[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *v)
	}
	return out, nil
}

func (s *Service) jobView(ctx context.Context, acc *gpurent.Account, j *gpurent.BenchJob) (*apiv1.BenchJob, error) {
	v := &apiv1.BenchJob{ID: j.ID, GPUType: j.GPUType, Reason: string(j.Reason), Tier: j.Tier, InstanceID: j.InstanceID,
		State: string(j.State), Error: j.Error, CreatedAt: j.CreatedAt, StartedAt: j.StartedAt, EndedAt: j.EndedAt,
		GPUs: j.GPUIDs}
	if acc.Role == gpurent.RoleOperator {
		v.HostID, v.RequestedBy = j.HostID, j.RequestedBy
	}
	if j.State != gpurent.BenchDone {
		return v, nil
	}
	sums, err := s.store.ListBenchSummaries(ctx, gpurent.BenchSummaryFilter{JobID: j.ID})
	if err != nil {
		return nil, err
	}
	for _, b := range sums {
		v.Results = append(v.Results, apiv1.BenchJobResult{GPU: b.GPUKey, TransparencyResult: resultView(b),
			FleetMedian: b.FleetMedian, Note: b.Note})
	}
	return v, nil
}

func resultView(b gpurent.BenchSummary) apiv1.TransparencyResult {
	r := apiv1.TransparencyResult{Probe: b.Probe, Setup: b.Setup, Unit: b.Unit, Median: b.Median, Min: b.Min, Max: b.Max,
		Spread: b.Spread, Runs: b.Runs, FleetRatio: b.FleetRatio, SpecRatio: b.SpecRatio, Outcome: b.Outcome,
		Provisional: b.Provisional, MaxTempC: b.MaxTempC, MinSMClock: b.MinSMClockMHz, MeanPowerW: b.MeanPowerW,
		Synthetic: b.Synthetic}
	if b.ThrottleReasons != "" {
		r.Throttle = strings.Split(b.ThrottleReasons, ",")
	}
	return r
}

// Certs lists every GPU's certification (operators), uncertified GPUs
// included, with when the schedule runs each again.
func (s *Service) Certs(ctx context.Context, acc *gpurent.Account) ([]apiv1.GPUCert, error) {
	if err := requireOperator(acc); err != nil {
		return nil, err
	}
	hosts, err := s.store.ListHosts(ctx)
	if err != nil {
		return nil, err
	}
	certs, err := s.certMap(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.store.CertSettings(ctx)
	if err != nil {
		return nil, err
	}
	now := s.now()
	var out []apiv1.GPUCert
	for _, h := range hosts {
		for _, g := range h.GPUs {
			c, ok := certs[g.ID]
			if !ok {
				c = gpurent.GPUCert{State: gpurent.CertNone, PricePermille: 1000}
			}
			out = append(out, apiv1.GPUCert{GPU: g.ID, Host: h.Name, Type: g.TypeID, Index: g.Index, State: string(c.State),
				RatioPermille: c.RatioPermille, PricePermille: c.PricePermille, Reason: c.Reason, LastJobID: c.LastJobID,
				LastRunAt: c.LastRunAt, Next: s.next(g, c, ok, st, now)})
		}
	}
	return out, nil
}

// next says when the schedule runs a GPU again.
func (s *Service) next(g gpurent.GPU, c gpurent.GPUCert, stored bool, st *gpurent.CertSettings, now time.Time) string {
	switch {
	case g.BenchJobID != "":
		return "running now (" + g.BenchJobID + ")"
	case g.Health != gpurent.GPUHealthy:
		return "after repair (" + string(g.Health) + ")"
	case !stored || c.State == gpurent.CertNone || c.State == gpurent.CertPending:
		if g.AllocationID != "" {
			return "when idle"
		}
		return "next tick"
	case c.State == gpurent.CertDelisted:
		return "after repair"
	case st.Every == 0 || c.LastRunAt == nil:
		return ""
	}
	at := c.LastRunAt.Add(st.Every)
	if at.Before(now) {
		return "when idle"
	}
	return at.Format(time.RFC3339)
}
