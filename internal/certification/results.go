package certification

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/benchjudge"
	"github.com/gpurent/gpurent/internal/faultrules"
)

// Result is what an agent says of a job: it started running, or it ended
// (done with its records, or failed).
type Result struct {
	JobID   string
	State   gpurent.BenchJobState // running, done or failed
	Error   string
	Records [][]byte // one JSON record a line, as the suite printed them
}

// Bounds of what an agent may send for one job.
const (
	maxRecords    = 20000
	maxErrorBytes = 2000
)

// Report takes an agent's word on one of its host's jobs. A job that is not
// the host's, or no longer open, is not_found: the agent drops it.
func (s *Service) Report(ctx context.Context, hostID string, r Result) error {
	if r.JobID == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "job_id is required")
	}
	j, err := s.store.BenchJobByID(ctx, r.JobID)
	if err != nil {
		return err
	}
	if j.HostID != hostID || j.State.Finished() {
		return gpurent.Errorf(gpurent.CodeNotFound, "no open benchmark job %q on this host", r.JobID)
	}
	if len(r.Records) > maxRecords {
		return gpurent.Errorf(gpurent.CodeInvalid, "%d records, at most %d", len(r.Records), maxRecords)
	}
	switch r.State {
	case gpurent.BenchRunning:
		_, err := s.store.SetBenchJobRunning(ctx, j.ID, s.now())
		return err
	case gpurent.BenchDone, gpurent.BenchFailed:
		msg := strings.TrimSpace(r.Error)
		if len(msg) > maxErrorBytes {
			msg = msg[:maxErrorBytes]
		}
		if r.State == gpurent.BenchFailed && msg == "" {
			msg = "the agent reported a failure without a reason"
		}
		_, err := s.finish(ctx, j, r.State, msg, r.Records)
		return err
	default:
		return gpurent.Errorf(gpurent.CodeInvalid, "state must be running, done or failed, not %q", r.State)
	}
}

// Cancel ends an open job (operators, or the customer for their verify).
func (s *Service) Cancel(ctx context.Context, acc *gpurent.Account, jobID string) (*gpurent.BenchJob, error) {
	j, err := s.job(ctx, acc, jobID)
	if err != nil {
		return nil, err
	}
	if j.State.Finished() {
		return nil, gpurent.Errorf(gpurent.CodeConflict, "job %s is %s already", j.ID, j.State)
	}
	if _, err := s.finish(ctx, j, gpurent.BenchCanceled, "canceled by "+acc.Email, nil); err != nil {
		return nil, err
	}
	return s.store.BenchJobByID(ctx, j.ID)
}

// finish ends a job: a failed or canceled one with its error; a done one
// judged, with the certifications it changes, a re-run of a provisional
// FAIL, and the actions a confirmed FAIL takes. false when the job had
// ended meanwhile.
func (s *Service) finish(ctx context.Context, j *gpurent.BenchJob, state gpurent.BenchJobState, msg string, lines [][]byte) (bool, error) {
	now := s.now()
	fin := &gpurent.BenchFinish{JobID: j.ID, State: state, Error: msg, At: now, Records: lines}
	var out outcome
	if state == gpurent.BenchDone {
		var err error
		out, err = s.judge(ctx, j, lines, now)
		if err != nil {
			if !isBadInput(err) {
				return false, err
			}
			fin.State, fin.Error = gpurent.BenchFailed, err.Error()
		} else {
			fin.Summaries, fin.Certs, fin.Next = out.sums, out.certs, out.next
		}
	}
	if fin.State != gpurent.BenchDone && j.Reason != gpurent.BenchVerify {
		// A failed run certifies nothing; a card that was to be relisted
		// or re-run is run again when idle.
		certs, err := s.afterFailure(ctx, j, fin.State, fin.Error, now)
		if err != nil {
			return false, err
		}
		fin.Certs = certs
	}
	ok, err := s.store.FinishBenchJob(ctx, fin)
	if err != nil || !ok {
		return ok, err
	}
	s.log.Info("benchmark job ended", "job", j.ID, "reason", j.Reason, "state", fin.State, "error", fin.Error,
		"gpus", len(j.GPUIDs), "rerun", fin.Next != nil)
	for _, f := range out.confirmed {
		if err := s.degrade(ctx, j, f, now); err != nil {
			return true, err
		}
	}
	for _, f := range out.flagged {
		fl := &gpurent.IdleRunFlag{GPUID: f.gpuID, HostID: j.HostID, JobID: j.ID, FlaggedAt: now,
			Reason: "verify " + j.ID + ": " + f.reason}
		if err := s.store.FlagIdleRun(ctx, fl); err != nil {
			return true, err
		}
		s.log.Warn("GPU failed a verify: flagged for an idle run", "gpu", f.gpuID, "job", j.ID, "ratio", f.ratio)
	}
	if fin.State == gpurent.BenchDone && j.Reason != gpurent.BenchVerify {
		// This run, on the idle card, answers any verify's flag set before it.
		if err := s.store.ClearIdleRunFlags(ctx, j.GPUIDs, j.CreatedAt); err != nil {
			return true, err
		}
		if err := s.rejudge(ctx, j.GPUType, j.GPUIDs, now); err != nil {
			return true, err
		}
	}
	s.invalidate()
	return true, nil
}

// badInput marks errors in what the agent sent: the job fails with them.
type badInput struct{ err error }

func (b badInput) Error() string { return b.err.Error() }

func isBadInput(err error) bool {
	_, ok := err.(badInput)
	return ok
}

// afterFailure is the certifications a failed or canceled job leaves:
// its cards are to be run again, by the schedule, once RetryAfter has
// passed (a card never benchmarked stays uncertified).
func (s *Service) afterFailure(ctx context.Context, j *gpurent.BenchJob, state gpurent.BenchJobState, why string, now time.Time) ([]gpurent.GPUCert, error) {
	certs, err := s.certMap(ctx)
	if err != nil {
		return nil, err
	}
	var out []gpurent.GPUCert
	for _, id := range j.GPUIDs {
		c, ok := certs[id]
		if !ok {
			c = gpurent.GPUCert{GPUID: id, HostID: j.HostID, TypeID: j.GPUType, PricePermille: 1000}
		}
		// Never benchmarked stays so; any other card is to be run again.
		if ok && c.State != gpurent.CertNone {
			c.State = gpurent.CertPending
		} else {
			c.State = gpurent.CertNone
		}
		c.Reason = fmt.Sprintf("the %s run %s (%s): to be run again", j.Reason, failedWord(state), why)
		c.UpdatedAt, c.LastRunAt, c.LastJobID = now, &now, j.ID
		out = append(out, c)
	}
	return out, nil
}

func failedWord(state gpurent.BenchJobState) string {
	if state == gpurent.BenchCanceled {
		return "was canceled"
	}
	return "failed"
}

// outcome is what judging a done job decided.
type outcome struct {
	sums      []gpurent.BenchSummary
	certs     []gpurent.GPUCert
	next      *gpurent.BenchJob
	confirmed []failure // confirmed FAILs to act on
	// flagged are the FAILs a verify confirmed: a verify never delists,
	// degrades or opens an incident by itself (the customer controls the
	// load); the cards are run again once idle, and that run decides.
	flagged []failure
}

// failure is one card's confirmed FAIL.
type failure struct {
	gpuID  string
	ratio  float64
	reason string
}

// judge parses and checks a done job's records, summarises them, judges
// each summary against the fleet median and decides the certifications.
func (s *Service) judge(ctx context.Context, j *gpurent.BenchJob, lines [][]byte, now time.Time) (outcome, error) {
	var out outcome
	recs, err := benchjudge.ParseRecords(bytes.NewReader(bytes.Join(lines, []byte("\n"))))
	if err != nil {
		return out, badInput{fmt.Errorf("records: %w", err)}
	}
	if len(recs) == 0 {
		return out, badInput{fmt.Errorf("the run produced no measurement")}
	}
	inJob := map[string]bool{}
	for _, g := range j.GPUIDs {
		inJob[g] = true
	}
	for i, r := range recs {
		for _, u := range r.GPUUUIDs {
			if !inJob[u] {
				return out, badInput{fmt.Errorf("record %d measured GPU %s, which is not in the job", i+1, u)}
			}
		}
		if r.GPUType != j.GPUType {
			return out, badInput{fmt.Errorf("record %d is of type %q, the job's GPUs are %q", i+1, r.GPUType, j.GPUType)}
		}
		if r.Software.Synthetic && !s.cfg.AcceptSynthetic {
			return out, badInput{fmt.Errorf("record %d is synthetic: this control plane certifies measurements only", i+1)}
		}
	}
	spec, _ := s.ref.Type(j.GPUType)
	fresh := benchjudge.Summarize(recs)

	// The peers: the latest certification summaries of the type, this
	// job's cards replaced by what they measured now (a verify run does
	// not move the fleet median).
	stored, err := s.store.ListBenchSummaries(ctx, gpurent.BenchSummaryFilter{GPUType: j.GPUType, LatestOnly: true})
	if err != nil {
		return out, err
	}
	var peers []benchjudge.Summary
	for _, b := range stored {
		if j.Reason != gpurent.BenchVerify && touches(b.GPUKey, inJob) {
			continue
		}
		peers = append(peers, fromStored(b))
	}
	if j.Reason != gpurent.BenchVerify {
		peers = append(peers, fresh...)
	}
	medians := benchjudge.FleetMedians(peers)

	worst := map[string]benchjudge.Verdict{} // per GPU: its worst single-GPU verdict
	for _, sum := range fresh {
		v := benchjudge.Judge(sum, medians[sum.TypeProbe], spec)
		if v.Outcome == benchjudge.Fail && (j.Reason == gpurent.BenchRerun || isVerifyRerun(j)) {
			v = benchjudge.Confirm(v, v)
		}
		out.sums = append(out.sums, toStored(j, sum, v, now))
		if sum.GPUs != 1 {
			continue // multi-GPU probes are reported, not used to delist a card
		}
		if w, ok := worst[sum.GPUKey]; !ok || worse(v, w) {
			worst[sum.GPUKey] = v
		}
	}
	if j.Reason == gpurent.BenchVerify {
		var failing []string
		for _, g := range j.GPUIDs {
			v, ok := worst[g]
			if !ok || v.Outcome != benchjudge.Fail {
				continue
			}
			if v.Provisional {
				failing = append(failing, g)
			} else {
				// Only a flag: the customer controls the load of a verify.
				out.flagged = append(out.flagged, failure{gpuID: g, ratio: v.FleetRatio, reason: why(v)})
			}
		}
		if len(failing) > 0 && !isVerifyRerun(j) {
			// The same suite again at once, on the same instance.
			out.next = &gpurent.BenchJob{CreatedAt: s.now(), HostID: j.HostID, GPUIDs: slices.Clone(j.GPUIDs), GPUType: j.GPUType,
				Reason: gpurent.BenchVerify, Tier: j.Tier, InstanceID: j.InstanceID, AccountID: j.AccountID,
				RequestedBy: verifyRerunBy}
		}
		return out, nil
	}

	settings, err := s.store.CertSettings(ctx)
	if err != nil {
		return out, err
	}
	var rerun []string
	for _, g := range j.GPUIDs {
		c := gpurent.GPUCert{GPUID: g, HostID: j.HostID, TypeID: j.GPUType, LastJobID: j.ID, LastRunAt: &now,
			UpdatedAt: now, PricePermille: 1000}
		v, ok := worst[g]
		switch {
		case !ok || v.Outcome == benchjudge.Insufficient:
			c.State = gpurent.CertNone
			c.Reason = "no probe could be judged: " + insufficientWhy(fresh, g)
		case v.Outcome == benchjudge.Pass:
			c.State, c.RatioPermille = gpurent.CertPassed, permille(v.FleetRatio)
			c.Reason = fmt.Sprintf("every probe at 0.95 or more of the fleet median (lowest %s)", ratioText(v))
		case v.Outcome == benchjudge.Warn:
			c.State, c.RatioPermille = gpurent.CertWarn, permille(v.FleetRatio)
			c.Reason = why(v)
		case v.Provisional:
			c.State, c.RatioPermille = gpurent.CertPending, permille(v.FleetRatio)
			c.Reason = why(v) + "; held for a re-run"
			rerun = append(rerun, g)
		default: // confirmed
			c.RatioPermille = permille(v.FleetRatio)
			if settings.Policy == gpurent.PolicyDegrade {
				c.State = gpurent.CertDegraded
				c.PricePermille = min(max(c.RatioPermille, 1), 999)
				c.Reason = why(v) + fmt.Sprintf("; listed as degraded at %d%% of the price", (c.PricePermille+5)/10)
			} else {
				c.State, c.PricePermille = gpurent.CertDelisted, 0
				c.Reason = why(v) + "; delisted"
				out.confirmed = append(out.confirmed, failure{gpuID: g, ratio: v.FleetRatio, reason: why(v)})
			}
		}
		out.certs = append(out.certs, c)
	}
	if len(rerun) > 0 {
		out.next = &gpurent.BenchJob{CreatedAt: s.now(), HostID: j.HostID, GPUIDs: rerun, GPUType: j.GPUType, Reason: gpurent.BenchRerun, Tier: j.Tier}
	}
	return out, nil
}

// verifyRerunBy marks the re-run a verify's provisional FAIL starts.
const verifyRerunBy = "verify-rerun"

func isVerifyRerun(j *gpurent.BenchJob) bool {
	return j.Reason == gpurent.BenchVerify && j.RequestedBy == verifyRerunBy
}

func touches(key string, gpus map[string]bool) bool {
	for _, u := range strings.Split(key, ",") {
		if gpus[u] {
			return true
		}
	}
	return false
}

// worse orders verdicts: FAIL, then WARN, then PASS, then not judged; among
// equals the lower ratio.
func worse(a, b benchjudge.Verdict) bool {
	rank := func(o benchjudge.Outcome) int {
		switch o {
		case benchjudge.Fail:
			return 0
		case benchjudge.Warn:
			return 1
		case benchjudge.Pass:
			return 2
		}
		return 3
	}
	if rank(a.Outcome) != rank(b.Outcome) {
		return rank(a.Outcome) < rank(b.Outcome)
	}
	return a.FleetRatio < b.FleetRatio
}

func permille(r float64) int {
	if !(r > 0) || math.IsInf(r, 0) {
		return 0
	}
	return int(math.Floor(r*1000 + 1e-9))
}

func ratioText(v benchjudge.Verdict) string {
	return fmt.Sprintf("%s at %.3f", v.Probe, v.FleetRatio)
}

// why says in a sentence what a verdict found.
func why(v benchjudge.Verdict) string {
	// Never the UUID: reasons are published on the report.
	s := fmt.Sprintf("%s %s at %.3f of the fleet median (%.1f of %.1f %s)", v.Probe, v.Outcome,
		v.FleetRatio, v.Median, v.FleetMedian, v.Unit)
	if v.Provisional {
		s += ", provisional"
	}
	return s
}

func insufficientWhy(sums []benchjudge.Summary, gpu string) string {
	for _, s := range sums {
		if s.GPUKey == gpu && s.Note != "" {
			return s.Note
		}
	}
	return "no records for this GPU"
}

// toStored turns a summary and its verdict into what the store keeps.
func toStored(j *gpurent.BenchJob, s benchjudge.Summary, v benchjudge.Verdict, at time.Time) gpurent.BenchSummary {
	b := gpurent.BenchSummary{JobID: j.ID, GPUKey: s.GPUKey, HostID: j.HostID, GPUType: s.Type, Probe: s.Probe, GPUs: s.GPUs,
		Setup: s.Setup, Unit: s.Unit, Runs: s.Runs, Failed: s.Failed, Median: s.Median, Min: s.Min, Max: s.Max,
		Spread: s.Spread, MAD: s.MAD, MaxTempC: s.MaxTempC, MinSMClockMHz: s.MinSMClockMHz,
		ThrottleReasons: strings.Join(s.ThrottleReasons, ","), Outcome: string(v.Outcome), Provisional: v.Provisional,
		FleetMedian: v.FleetMedian, FleetRatio: v.FleetRatio, SpecRatio: v.SpecRatio,
		Note: strings.Join(v.Notes, "; "), Synthetic: s.Synthetic, At: at}
	if len(b.Note) > 1000 {
		b.Note = b.Note[:1000]
	}
	return b
}

// fromStored is the summary a stored one stands for, enough to compute
// fleet medians and to judge again.
func fromStored(b gpurent.BenchSummary) benchjudge.Summary {
	s := benchjudge.Summary{TypeProbe: benchjudge.TypeProbe{Type: b.GPUType, Probe: b.Probe, GPUs: b.GPUs, Setup: b.Setup},
		GPUKey: b.GPUKey, Unit: b.Unit, Runs: b.Runs, Failed: b.Failed, Median: b.Median, Min: b.Min, Max: b.Max,
		Spread: b.Spread, MAD: b.MAD, MaxTempC: b.MaxTempC, MinSMClockMHz: b.MinSMClockMHz, Synthetic: b.Synthetic}
	if b.Outcome == string(benchjudge.Insufficient) && b.Runs < benchjudge.MinRuns {
		s.Insufficient = true
	}
	return s
}

// degrade acts on a confirmed FAIL of a run on idle cards (never a
// verify's): the GPU goes through the incident service as a degradation
// (the health rules take it out of placement).
func (s *Service) degrade(ctx context.Context, j *gpurent.BenchJob, f failure, now time.Time) error {
	detail := "benchmark " + f.reason
	h, err := s.store.HostByID(ctx, j.HostID)
	if err != nil {
		return err
	}
	if s.cfg.Incidents == nil {
		return s.store.SetGPUHealth(ctx, f.gpuID, gpurent.GPUDegraded, detail)
	}
	ev := agentproto.HealthEvent{ID: "bench-" + j.ID + "-" + f.gpuID, UUID: f.gpuID, At: now,
		Kind: faultrules.KindBenchmark, Detail: detail}
	if _, err := s.cfg.Incidents.Ingest(ctx, h, agentproto.Report{Health: []agentproto.HealthEvent{ev}}); err != nil {
		return err
	}
	s.log.Warn("GPU failed its benchmark", "gpu", f.gpuID, "host", h.Name, "job", j.ID, "ratio", f.ratio)
	return nil
}

// rejudge looks at the other certified cards of a type once the fleet
// median moved: a card whose latest figures fall below the WARN band of the
// new median is held for a re-run (the schedule runs it when it is idle).
func (s *Service) rejudge(ctx context.Context, typeID string, skip []string, now time.Time) error {
	stored, err := s.store.ListBenchSummaries(ctx, gpurent.BenchSummaryFilter{GPUType: typeID, LatestOnly: true})
	if err != nil {
		return err
	}
	sums := make([]benchjudge.Summary, len(stored))
	for i, b := range stored {
		sums[i] = fromStored(b)
	}
	medians := benchjudge.FleetMedians(sums)
	certs, err := s.certMap(ctx)
	if err != nil {
		return err
	}
	spec, _ := s.ref.Type(typeID)
	low := map[string]benchjudge.Verdict{}
	for _, sum := range sums {
		if sum.GPUs != 1 || slices.Contains(skip, sum.GPUKey) {
			continue
		}
		v := benchjudge.Judge(sum, medians[sum.TypeProbe], spec)
		if v.Outcome != benchjudge.Fail {
			continue
		}
		if w, ok := low[sum.GPUKey]; !ok || worse(v, w) {
			low[sum.GPUKey] = v
		}
	}
	for g, v := range low {
		c, ok := certs[g]
		if !ok || (c.State != gpurent.CertPassed && c.State != gpurent.CertWarn) {
			continue
		}
		c.State, c.RatioPermille, c.UpdatedAt = gpurent.CertPending, permille(v.FleetRatio), now
		c.Reason = why(v) + " once its peers were measured; held for a re-run"
		if err := s.store.SetGPUCert(ctx, &c); err != nil {
			return err
		}
		s.log.Info("GPU below the new fleet median", "gpu", g, "ratio", v.FleetRatio)
	}
	return nil
}
