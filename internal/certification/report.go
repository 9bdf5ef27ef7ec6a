package certification

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/benchjudge"
	"github.com/gpurent/gpurent/internal/transparency"
)

// historyWindow is how far back a card's history on the report goes, and
// historyMax how many earlier jobs it shows.
const (
	historyWindow = 84 * 24 * time.Hour
	historyMax    = 12
)

// Transparency is the public report: per GPU type, the dense spec, the
// healthy band, the fleet's statistics of each probe, and every host and
// GPU (UUID hashed) with its latest figures, its history and its
// certification. It is assembled at most every few seconds.
func (s *Service) Transparency(ctx context.Context) (*apiv1.Transparency, error) {
	now := s.now()
	s.mu.Lock()
	if s.report != nil && now.Sub(s.reportAt) < reportTTL {
		r := s.report
		s.mu.Unlock()
		return r, nil
	}
	s.mu.Unlock()
	r, err := s.assemble(ctx, now)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.report, s.reportAt = r, now
	s.mu.Unlock()
	return r, nil
}

func (s *Service) assemble(ctx context.Context, now time.Time) (*apiv1.Transparency, error) {
	hosts, err := s.store.ListHosts(ctx)
	if err != nil {
		return nil, err
	}
	types, err := s.store.GPUTypes(ctx)
	if err != nil {
		return nil, err
	}
	certs, err := s.certMap(ctx)
	if err != nil {
		return nil, err
	}
	latest, err := s.store.ListBenchSummaries(ctx, gpurent.BenchSummaryFilter{LatestOnly: true})
	if err != nil {
		return nil, err
	}
	past, err := s.store.ListBenchSummaries(ctx, gpurent.BenchSummaryFilter{Since: now.Add(-historyWindow), NoVerify: true})
	if err != nil {
		return nil, err
	}
	jobs, err := s.store.ListBenchJobs(ctx, gpurent.BenchJobFilter{Limit: 5000})
	if err != nil {
		return nil, err
	}
	reasonOf := make(map[string]string, len(jobs))
	for _, j := range jobs {
		reasonOf[j.ID] = string(j.Reason)
	}

	rep := &apiv1.Transparency{GeneratedAt: now, PassRatio: benchjudge.PassRatio, WarnRatio: benchjudge.WarnRatio,
		Types: []apiv1.TransparencyType{}, Delisted: []apiv1.TransparencyGPUBrief{}}
	latestOf := map[string][]gpurent.BenchSummary{} // by GPU key
	byType := map[string][]gpurent.BenchSummary{}
	for _, b := range latest {
		latestOf[b.GPUKey] = append(latestOf[b.GPUKey], b)
		byType[b.GPUType] = append(byType[b.GPUType], b)
		rep.Synthetic = rep.Synthetic || b.Synthetic
	}
	history := map[string][]apiv1.TransparencyHistory{} // by GPU, newest first
	{
		type key struct{ gpu, job string }
		at := map[key]int{}
		for i := len(past) - 1; i >= 0; i-- {
			b := past[i]
			if b.GPUs != 1 {
				continue
			}
			k := key{b.GPUKey, b.JobID}
			idx, ok := at[k]
			if !ok {
				idx = len(history[b.GPUKey])
				at[k] = idx
				history[b.GPUKey] = append(history[b.GPUKey], apiv1.TransparencyHistory{JobID: b.JobID, At: b.At,
					Reason: reasonOf[b.JobID], Outcome: b.Outcome, Medians: map[string]float64{}})
			}
			h := &history[b.GPUKey][idx]
			h.Medians[b.Probe] = b.Median
			if outcomeRank(b.Outcome) < outcomeRank(h.Outcome) {
				h.Outcome = b.Outcome
			}
		}
	}
	hostsOf := map[string][]gpurent.Host{}
	for _, h := range hosts {
		seen := map[string]bool{}
		for _, g := range h.GPUs {
			if g.Health == gpurent.GPUMissing || seen[g.TypeID] {
				continue
			}
			seen[g.TypeID] = true
			hostsOf[g.TypeID] = append(hostsOf[g.TypeID], h)
		}
	}
	for _, gt := range types {
		if len(hostsOf[gt.ID]) == 0 {
			continue
		}
		t := apiv1.TransparencyType{ID: gt.ID, Name: gt.Name, Probes: s.probes(gt.ID, byType[gt.ID]),
			Hosts: []apiv1.TransparencyHost{}}
		for _, h := range hostsOf[gt.ID] {
			th := apiv1.TransparencyHost{ID: h.ID, Name: h.Name, Zone: h.ZoneID, GPUs: []apiv1.TransparencyGPU{}}
			for _, g := range h.GPUs {
				if g.TypeID != gt.ID || g.Health == gpurent.GPUMissing {
					continue
				}
				c, ok := certs[g.ID]
				if !ok {
					c = gpurent.GPUCert{State: gpurent.CertNone, PricePermille: 1000}
				}
				countState(&t, c.State)
				tg := apiv1.TransparencyGPU{Hash: transparency.HashUUID(g.ID), Index: g.Index, State: string(c.State),
					Reason: c.Reason, PricePermille: c.PricePermille, LastRunAt: c.LastRunAt,
					Results: []apiv1.TransparencyResult{}}
				if tg.PricePermille == 0 && c.State != gpurent.CertDelisted {
					tg.PricePermille = 1000
				}
				lastJob := ""
				for _, b := range latestOf[g.ID] {
					tg.Results = append(tg.Results, resultView(b))
					lastJob = b.JobID
				}
				for _, h := range history[g.ID] {
					if h.JobID == lastJob || len(tg.History) >= historyMax {
						continue
					}
					tg.History = append(tg.History, h)
				}
				th.GPUs = append(th.GPUs, tg)
				if c.State == gpurent.CertDelisted || c.State == gpurent.CertDegraded {
					since := c.UpdatedAt
					rep.Delisted = append(rep.Delisted, apiv1.TransparencyGPUBrief{Hash: tg.Hash, Type: gt.ID, Host: h.Name,
						State: string(c.State), Reason: c.Reason, PricePermille: c.PricePermille, Since: since})
				}
			}
			t.Hosts = append(t.Hosts, th)
		}
		for _, p := range t.Probes {
			if p.Cards > 0 && p.Cards < 3 {
				rep.Notes = append(rep.Notes, gt.Name+": "+p.Probe+" is judged over "+strconv.Itoa(p.Cards)+
					" card(s) only; a small fleet is its own yardstick")
				break
			}
		}
		rep.Types = append(rep.Types, t)
	}
	return rep, nil
}

func countState(t *apiv1.TransparencyType, st gpurent.CertState) {
	t.GPUs++
	switch st {
	case gpurent.CertPassed:
		t.Certified++
	case gpurent.CertWarn:
		t.Warn++
	case gpurent.CertDegraded:
		t.Degraded++
	case gpurent.CertDelisted:
		t.Delisted++
	case gpurent.CertPending:
		t.Pending++
	default:
		t.Uncertified++
	}
}

func outcomeRank(o string) int {
	switch benchjudge.Outcome(o) {
	case benchjudge.Fail:
		return 0
	case benchjudge.Warn:
		return 1
	case benchjudge.Pass:
		return 2
	}
	return 3
}

// probes is the fleet's statistics of each probe and setup on a type.
func (s *Service) probes(typeID string, latest []gpurent.BenchSummary) []apiv1.TransparencyProbe {
	type key struct {
		probe, setup string
		gpus         int
	}
	groups := map[key][]gpurent.BenchSummary{}
	var order []key
	for _, b := range latest {
		k := key{b.Probe, b.Setup, b.GPUs}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], b)
	}
	rank := map[string]int{}
	for i, p := range benchjudge.Probes() {
		rank[p] = i
	}
	slices.SortFunc(order, func(a, b key) int {
		if rank[a.probe] != rank[b.probe] {
			return rank[a.probe] - rank[b.probe]
		}
		if a.gpus != b.gpus {
			return a.gpus - b.gpus
		}
		return strings.Compare(a.setup, b.setup)
	})
	spec, hasSpec := s.ref.Type(typeID)
	out := []apiv1.TransparencyProbe{}
	for _, k := range order {
		list := groups[k]
		sums := make([]benchjudge.Summary, len(list))
		for i, b := range list {
			sums[i] = fromStored(b)
		}
		tp := benchjudge.TypeProbe{Type: typeID, Probe: k.probe, GPUs: k.gpus, Setup: k.setup}
		med := benchjudge.FleetMedians(sums)[tp]
		p := apiv1.TransparencyProbe{Probe: k.probe, Setup: k.setup, Unit: list[0].Unit, GPUs: k.gpus, FleetMedian: med,
			BandPass: med * benchjudge.PassRatio, BandWarn: med * benchjudge.WarnRatio}
		for _, b := range list {
			if !(b.Median > 0) || b.Runs < benchjudge.MinRuns {
				continue
			}
			if p.Cards == 0 || b.Median < p.FleetMin {
				p.FleetMin = b.Median
			}
			if b.Median > p.FleetMax {
				p.FleetMax = b.Median
			}
			p.Cards++
		}
		if hasSpec {
			if f := spec.SpecFor(k.probe); f.Has() && f.Value > 0 && k.gpus == 1 {
				p.Spec = figure(f)
				if med > 0 {
					p.SpecRatio = med / f.Value
				}
			}
			if h, ok := spec.HealthyFor(k.probe, k.gpus, benchjudge.ParseSetup(k.setup)); ok {
				p.Healthy = figure(h.Figure)
			}
		}
		out = append(out, p)
	}
	return out
}

func figure(f benchjudge.Figure) *apiv1.TransparencyFigure {
	return &apiv1.TransparencyFigure{Value: f.Value, High: f.High, Unit: f.Unit, Source: f.Source}
}
