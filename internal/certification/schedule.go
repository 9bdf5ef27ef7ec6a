package certification

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
)

// Tick fails jobs open too long and schedules runs on idle GPUs: never
// benchmarked (onboarding), flagged by a verify or held for a re-run (a
// re-run), or last run longer ago than
// the schedule (weekly). One job per host at a time, at most MaxOpenJobs
// scheduled jobs open at once.
func (s *Service) Tick(ctx context.Context) error {
	open, err := s.store.ListBenchJobs(ctx, gpurent.BenchJobFilter{OpenOnly: true, Limit: 10000})
	if err != nil {
		return err
	}
	now := s.now()
	busyHost := map[string]bool{}
	scheduled := 0
	for i := range open {
		j := &open[i]
		since := j.CreatedAt
		if j.StartedAt != nil {
			since = *j.StartedAt
		}
		if now.Sub(since) > s.timeout(j.Tier) {
			msg := fmt.Sprintf("no result within %s", s.timeout(j.Tier))
			if _, err := s.finish(ctx, j, gpurent.BenchFailed, msg, nil); err != nil {
				return err
			}
			continue
		}
		busyHost[j.HostID] = true
		if j.RequestedBy == "" {
			scheduled++
		}
	}
	if scheduled >= s.cfg.MaxOpenJobs {
		return nil
	}
	settings, err := s.store.CertSettings(ctx)
	if err != nil {
		return err
	}
	hosts, err := s.store.ListHosts(ctx)
	if err != nil {
		return err
	}
	certs, err := s.certMap(ctx)
	if err != nil {
		return err
	}
	flags, err := s.store.ListIdleRunFlags(ctx, "")
	if err != nil {
		return err
	}
	flagged := make(map[string]bool, len(flags))
	for _, f := range flags {
		flagged[f.GPUID] = true
	}
	for _, h := range hosts {
		if scheduled >= s.cfg.MaxOpenJobs {
			break
		}
		if busyHost[h.ID] || !s.fresh(&h, now) || h.State != gpurent.HostReady {
			continue
		}
		due := map[gpurent.BenchReason][]gpurent.GPU{}
		for _, g := range h.GPUs {
			if !idle(g) {
				continue
			}
			c, ok := certs[g.ID]
			waited := !ok || c.LastRunAt == nil || now.Sub(*c.LastRunAt) >= s.cfg.RetryAfter
			switch {
			case !ok || c.State == gpurent.CertNone:
				if waited {
					due[gpurent.BenchOnboarding] = append(due[gpurent.BenchOnboarding], g)
				}
			case flagged[g.ID]:
				// A verify found it failing under its renter: run it
				// idle at once; this run alone decides.
				due[gpurent.BenchRerun] = append(due[gpurent.BenchRerun], g)
			case c.State == gpurent.CertPending:
				if waited {
					due[gpurent.BenchRerun] = append(due[gpurent.BenchRerun], g)
				}
			case settings.Every > 0 && (c.LastRunAt == nil || now.Sub(*c.LastRunAt) >= settings.Every):
				due[gpurent.BenchWeekly] = append(due[gpurent.BenchWeekly], g)
			}
		}
		// One job per host: re-runs first, then new cards, then the schedule.
		for _, reason := range []gpurent.BenchReason{gpurent.BenchRerun, gpurent.BenchOnboarding, gpurent.BenchWeekly} {
			gpus := due[reason]
			if len(gpus) == 0 {
				continue
			}
			for _, group := range byType(gpus) {
				j := &gpurent.BenchJob{CreatedAt: s.now(), HostID: h.ID, GPUIDs: ids(group), GPUType: group[0].TypeID, Reason: reason, Tier: settings.Tier}
				if err := s.store.CreateBenchJob(ctx, j); err != nil {
					if gpurent.IsCode(err, gpurent.CodeConflict) {
						continue // rented meanwhile: the next tick looks again
					}
					return err
				}
				s.log.Info("benchmark scheduled", "job", j.ID, "host", h.Name, "reason", reason, "gpus", len(group))
				s.invalidate()
				scheduled++
				break
			}
			break
		}
	}
	return nil
}

// idle reports whether a GPU may be benchmarked by the schedule: healthy,
// not rented and not under another job.
func idle(g gpurent.GPU) bool {
	return g.Health == gpurent.GPUHealthy && g.AllocationID == "" && g.BenchJobID == ""
}

func (s *Service) fresh(h *gpurent.Host, now time.Time) bool {
	return h.LastSeenAt != nil && now.Sub(*h.LastSeenAt) <= s.cfg.HostFresh
}

// byType groups GPUs by type, in the order of their first appearance.
func byType(gpus []gpurent.GPU) [][]gpurent.GPU {
	var out [][]gpurent.GPU
	at := map[string]int{}
	for _, g := range gpus {
		i, ok := at[g.TypeID]
		if !ok {
			i = len(out)
			at[g.TypeID] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], g)
	}
	return out
}

func ids(gpus []gpurent.GPU) []string {
	out := make([]string, len(gpus))
	for i, g := range gpus {
		out[i] = g.ID
	}
	slices.Sort(out)
	return out
}

func (s *Service) certMap(ctx context.Context) (map[string]gpurent.GPUCert, error) {
	list, err := s.store.ListGPUCerts(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make(map[string]gpurent.GPUCert, len(list))
	for _, c := range list {
		out[c.GPUID] = c
	}
	return out, nil
}

// RunRequest is an operator's request for runs now.
type RunRequest struct {
	GPUs  []string // GPU UUIDs
	Hosts []string // host ids or names: every idle GPU on them
	Tier  string   // "" for the settings' tier
}

// RunNow starts benchmark jobs now (operators): on the listed GPUs and on
// every idle GPU of the listed hosts, one job per host and type. A GPU that
// is rented, unhealthy or under another job is skipped and named.
func (s *Service) RunNow(ctx context.Context, acc *gpurent.Account, req RunRequest) ([]gpurent.BenchJob, []string, error) {
	if err := requireOperator(acc); err != nil {
		return nil, nil, err
	}
	if len(req.GPUs) == 0 && len(req.Hosts) == 0 {
		return nil, nil, gpurent.Errorf(gpurent.CodeInvalid, "name GPUs or hosts to benchmark")
	}
	if len(req.GPUs)+len(req.Hosts) > 1000 {
		return nil, nil, gpurent.Errorf(gpurent.CodeInvalid, "at most 1000 GPUs and hosts in one request")
	}
	tier := req.Tier
	if tier == "" {
		st, err := s.store.CertSettings(ctx)
		if err != nil {
			return nil, nil, err
		}
		tier = st.Tier
	}
	if err := checkTier(tier); err != nil {
		return nil, nil, err
	}
	hosts, err := s.store.ListHosts(ctx)
	if err != nil {
		return nil, nil, err
	}
	wantGPU := map[string]bool{}
	for _, g := range req.GPUs {
		wantGPU[strings.TrimSpace(g)] = true
	}
	wantHost := map[string]bool{}
	for _, h := range req.Hosts {
		wantHost[strings.TrimSpace(h)] = true
	}
	var jobs []gpurent.BenchJob
	var skipped []string
	found := map[string]bool{}
	for _, h := range hosts {
		whole := wantHost[h.ID] || wantHost[h.Name]
		if whole {
			found[h.ID], found[h.Name] = true, true
		}
		var pick []gpurent.GPU
		for _, g := range h.GPUs {
			if !whole && !wantGPU[g.ID] {
				continue
			}
			found[g.ID] = true
			if !idle(g) {
				skipped = append(skipped, fmt.Sprintf("%s: %s", g.ID, busyWhy(g)))
				continue
			}
			pick = append(pick, g)
		}
		for _, group := range byType(pick) {
			j := &gpurent.BenchJob{CreatedAt: s.now(), HostID: h.ID, GPUIDs: ids(group), GPUType: group[0].TypeID, Reason: gpurent.BenchManual,
				Tier: tier, RequestedBy: acc.ID}
			if err := s.store.CreateBenchJob(ctx, j); err != nil {
				if gpurent.IsCode(err, gpurent.CodeConflict) {
					skipped = append(skipped, fmt.Sprintf("%s: %v", strings.Join(j.GPUIDs, ","), err))
					continue
				}
				return nil, nil, err
			}
			jobs = append(jobs, *j)
		}
	}
	for name := range wantGPU {
		if !found[name] {
			return nil, nil, gpurent.Errorf(gpurent.CodeNotFound, "no GPU %q", name)
		}
	}
	for name := range wantHost {
		if !found[name] {
			return nil, nil, gpurent.Errorf(gpurent.CodeNotFound, "no host %q", name)
		}
	}
	slices.Sort(skipped)
	if len(jobs) > 0 {
		s.invalidate()
		s.log.Info("benchmarks started by an operator", "by", acc.ID, "jobs", len(jobs), "skipped", len(skipped))
	}
	return jobs, skipped, nil
}

func busyWhy(g gpurent.GPU) string {
	switch {
	case g.AllocationID != "":
		return "rented (instance " + g.InstanceID + ")"
	case g.BenchJobID != "":
		return "under benchmark job " + g.BenchJobID
	default:
		return "not healthy (" + string(g.Health) + ")"
	}
}

// Verify starts the suite on the caller's own running instance, with its
// GPUs, while it runs: the customer's "verify my GPUs". One verify at a
// time per instance; tier t1 by default.
func (s *Service) Verify(ctx context.Context, acc *gpurent.Account, instanceID, tier string) (*gpurent.BenchJob, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "log in first")
	}
	if tier == "" {
		tier = "t1"
	}
	if err := checkTier(tier); err != nil {
		return nil, err
	}
	in, err := s.store.InstanceByID(ctx, instanceID)
	if err != nil {
		return nil, err
	}
	if in.AccountID != acc.ID && acc.Role != gpurent.RoleOperator {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "no instance %q", instanceID)
	}
	if in.State != gpurent.StateRunning {
		return nil, gpurent.Errorf(gpurent.CodeConflict, "instance %s is %s: verify runs on a running instance", in.ID, in.State)
	}
	if len(in.GPUIDs) == 0 {
		return nil, gpurent.Errorf(gpurent.CodeConflict, "instance %s has no GPUs (no-GPU mode)", in.ID)
	}
	open, err := s.store.ListBenchJobs(ctx, gpurent.BenchJobFilter{InstanceID: in.ID, OpenOnly: true})
	if err != nil {
		return nil, err
	}
	if len(open) > 0 {
		return nil, gpurent.Errorf(gpurent.CodeConflict, "a verify run (%s) is already %s on this instance", open[0].ID, open[0].State)
	}
	j := &gpurent.BenchJob{CreatedAt: s.now(), HostID: in.HostID, GPUIDs: slices.Clone(in.GPUIDs), GPUType: in.TypeID, Reason: gpurent.BenchVerify,
		Tier: tier, InstanceID: in.ID, AccountID: in.AccountID, RequestedBy: acc.ID}
	if err := s.store.CreateBenchJob(ctx, j); err != nil {
		return nil, err
	}
	s.log.Info("verify started", "job", j.ID, "instance", in.ID, "by", acc.ID)
	return j, nil
}

// Relist is called before a repaired GPU is marked healthy: it starts a
// benchmark job that holds the GPU, so that the GPU is listed again only
// once the run has passed (reason after_fault when its last incident was a
// reset-class fault). A GPU under a rental or another job is left as it is
// (false); the schedule benchmarks it when it is idle.
func (s *Service) Relist(ctx context.Context, hostID, gpuID, by string) (bool, error) {
	h, err := s.store.HostByID(ctx, hostID)
	if err != nil {
		return false, err
	}
	var g *gpurent.GPU
	for i := range h.GPUs {
		if h.GPUs[i].ID == gpuID {
			g = &h.GPUs[i]
		}
	}
	if g == nil {
		return false, gpurent.Errorf(gpurent.CodeNotFound, "no GPU %q on host %s", gpuID, hostID)
	}
	if g.AllocationID != "" || g.BenchJobID != "" {
		return false, nil
	}
	reason := gpurent.BenchRelist
	incs, err := s.store.ListIncidents(ctx, gpurent.IncidentFilter{GPUID: gpuID})
	if err != nil {
		return false, err
	}
	if len(incs) > 0 && (incs[0].Class == gpurent.FaultReset || incs[0].Class == gpurent.FaultDrainReset) {
		reason = gpurent.BenchAfterFault
	}
	st, err := s.store.CertSettings(ctx)
	if err != nil {
		return false, err
	}
	j := &gpurent.BenchJob{CreatedAt: s.now(), HostID: hostID, GPUIDs: []string{gpuID}, GPUType: g.TypeID, Reason: reason, Tier: st.Tier, RequestedBy: by}
	if err := s.store.CreateBenchJob(ctx, j); err != nil {
		if gpurent.IsCode(err, gpurent.CodeConflict) {
			return false, nil
		}
		return false, err
	}
	s.log.Info("benchmark before relisting", "job", j.ID, "gpu", gpuID, "reason", reason)
	s.invalidate()
	return true, nil
}
