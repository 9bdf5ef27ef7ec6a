package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
)

// Compute transparency (issue #7): benchmark jobs and the GPU holds they
// take, their raw records and summaries, GPU certifications and the
// certification settings.
//
// A GPU is held by at most one open job (a partial unique index on
// bench_holds), and never by an open job and an open allocation at once:
// CreateBenchJob and CreateAllocation both lock the GPU rows first (in id
// order, so they wait for each other rather than deadlock) and only then
// read the other's table. On SQLite the one writer connection serialises
// them anyway.

// Defaults of the certification settings, until the operator saves others.
const (
	defaultCertPolicy = gpurent.PolicyDelist
	defaultCertEvery  = 7 * 24 * time.Hour
	defaultCertTier   = "t2"
)

// benchDefaultLimit is how many jobs ListBenchJobs answers without a Limit.
const benchDefaultLimit = 100

// benchRecordBatch and benchSummaryBatch bound the rows one INSERT carries
// (3 and 27 values a row: far below both backends' limits).
const (
	benchRecordBatch  = 500
	benchSummaryBatch = 100
)

const benchJobCols = `id, host_id, gpu_type, reason, tier, instance_id, account_id, requested_by, state, error,
created_at, started_at, ended_at`

func scanBenchJob(r rowScanner) (gpurent.BenchJob, error) {
	var j gpurent.BenchJob
	var reason, state string
	err := r.Scan(&j.ID, &j.HostID, &j.GPUType, &reason, &j.Tier, &j.InstanceID, &j.AccountID, &j.RequestedBy,
		&state, &j.Error, timeCol{&j.CreatedAt}, nullTimeCol{&j.StartedAt}, nullTimeCol{&j.EndedAt})
	j.Reason = gpurent.BenchReason(reason)
	j.State = gpurent.BenchJobState(state)
	return j, err
}

const benchSummaryCols = `job_id, gpu_key, host_id, gpu_type, probe, gpus, setup, unit, runs, failed, median,
min_value, max_value, spread, mad, max_temp_c, min_sm_clock_mhz, mean_power_w, throttle_reasons, outcome, provisional,
fleet_median, fleet_ratio, spec_ratio, note, synthetic, at`

func scanBenchSummary(r rowScanner) (gpurent.BenchSummary, error) {
	var b gpurent.BenchSummary
	err := r.Scan(&b.JobID, &b.GPUKey, &b.HostID, &b.GPUType, &b.Probe, &b.GPUs, &b.Setup, &b.Unit, &b.Runs,
		&b.Failed, &b.Median, &b.Min, &b.Max, &b.Spread, &b.MAD, &b.MaxTempC, &b.MinSMClockMHz, &b.MeanPowerW,
		&b.ThrottleReasons, &b.Outcome, &b.Provisional, &b.FleetMedian, &b.FleetRatio, &b.SpecRatio, &b.Note,
		&b.Synthetic, timeCol{&b.At})
	return b, err
}

func (s *Store) summaryArgs(b *gpurent.BenchSummary) []any {
	return []any{b.JobID, b.GPUKey, b.HostID, b.GPUType, b.Probe, b.GPUs, b.Setup, b.Unit, b.Runs, b.Failed,
		b.Median, b.Min, b.Max, b.Spread, b.MAD, b.MaxTempC, b.MinSMClockMHz, b.MeanPowerW, b.ThrottleReasons,
		b.Outcome, b.Provisional, b.FleetMedian, b.FleetRatio, b.SpecRatio, b.Note, b.Synthetic, s.ts(b.At)}
}

const gpuCertCols = `c.gpu_id, c.host_id, c.type_id, c.state, c.ratio_permille, c.price_permille, c.reason,
c.last_job_id, c.last_run_at, c.updated_at`

func scanGPUCert(r rowScanner) (gpurent.GPUCert, error) {
	var c gpurent.GPUCert
	var state string
	err := r.Scan(&c.GPUID, &c.HostID, &c.TypeID, &state, &c.RatioPermille, &c.PricePermille, &c.Reason,
		&c.LastJobID, nullTimeCol{&c.LastRunAt}, timeCol{&c.UpdatedAt})
	c.State = gpurent.CertState(state)
	return c, err
}

// checkPermille refuses a share of the list price outside 0..1000.
func checkPermille(p int) error {
	if p < 0 || p > 1000 {
		return gpurent.Errorf(gpurent.CodeInvalid, "price share %d‰ is outside 0..1000", p)
	}
	return nil
}

func checkBenchReason(r gpurent.BenchReason) error {
	switch r {
	case gpurent.BenchOnboarding, gpurent.BenchWeekly, gpurent.BenchAfterFault, gpurent.BenchRelist,
		gpurent.BenchRerun, gpurent.BenchManual, gpurent.BenchVerify:
		return nil
	}
	return gpurent.Errorf(gpurent.CodeInvalid, "unknown benchmark reason %q", r)
}

func checkCertState(c gpurent.CertState) error {
	switch c {
	case gpurent.CertNone, gpurent.CertPassed, gpurent.CertWarn, gpurent.CertPending, gpurent.CertDelisted,
		gpurent.CertDegraded:
		return nil
	}
	return gpurent.Errorf(gpurent.CodeInvalid, "unknown certification state %q", c)
}

func checkTier(t string) error {
	if t != "t1" && t != "t2" {
		return gpurent.Errorf(gpurent.CodeInvalid, "benchmark tier %q is not t1 or t2", t)
	}
	return nil
}

// lockedGPU is a GPU row read under lock.
type lockedGPU struct {
	id     string
	typeID string
	index  int
}

// lockGPUs locks the rows of the GPUs ids (sorted, distinct, not empty)
// until the transaction ends, in id order, and checks each exists on
// hostID (CodeInvalid otherwise). It answers them by index. It must run
// inside a transaction.
func (s *Store) lockGPUs(ctx context.Context, hostID string, ids []string, op string) ([]lockedGPU, error) {
	args := make([]any, len(ids))
	for i, g := range ids {
		args[i] = g
	}
	rows, err := s.query(ctx, `SELECT id, host_id, type_id, gpu_index FROM gpus WHERE id IN (`+placeholders(len(ids))+`)
ORDER BY id`+s.rowLock(), args...)
	if err != nil {
		return nil, s.dbErr(err, op)
	}
	onHost := make(map[string]string, len(ids))
	out := make([]lockedGPU, 0, len(ids))
	for rows.Next() {
		var g lockedGPU
		var hid string
		if err := rows.Scan(&g.id, &hid, &g.typeID, &g.index); err != nil {
			rows.Close()
			return nil, s.dbErr(err, op)
		}
		onHost[g.id] = hid
		out = append(out, g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, op)
	}
	for _, g := range ids {
		hid, ok := onHost[g]
		if !ok {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "GPU %s does not exist", g)
		}
		if hid != hostID {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "GPU %s is not on host %s", g, hostID)
		}
	}
	slices.SortFunc(out, func(a, b lockedGPU) int {
		if a.index != b.index {
			return a.index - b.index
		}
		return strings.Compare(a.id, b.id)
	})
	return out, nil
}

// gpuHolders answers, of the GPUs ids, those query (selecting GPU id and
// holder, with an IN list of len(ids) placeholders where it says %s)
// finds held, with their holder.
func (s *Store) gpuHolders(ctx context.Context, query string, ids []string) (map[string]string, error) {
	args := make([]any, len(ids))
	for i, g := range ids {
		args[i] = g
	}
	rows, err := s.query(ctx, strings.Replace(query, "%s", placeholders(len(ids)), 1), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var g, holder string
		if err := rows.Scan(&g, &holder); err != nil {
			return nil, err
		}
		out[g] = holder
	}
	return out, rows.Err()
}

// openBenchHolds answers which of the GPUs ids an open benchmark job
// holds, with the job.
func (s *Store) openBenchHolds(ctx context.Context, ids []string) (map[string]string, error) {
	return s.gpuHolders(ctx, `SELECT gpu_id, job_id FROM bench_holds WHERE gpu_id IN (%s) AND released_at IS NULL`, ids)
}

// openAllocationHolds answers which of the GPUs ids an open allocation
// holds, with the allocation.
func (s *Store) openAllocationHolds(ctx context.Context, ids []string) (map[string]string, error) {
	return s.gpuHolders(ctx, `SELECT gpu_id, allocation_id FROM allocation_gpus WHERE gpu_id IN (%s) AND released_at IS NULL`, ids)
}

// sortedGPUIDs answers ids sorted, refusing an empty list, an empty id or
// one listed twice.
func sortedGPUIDs(ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "a benchmark job needs at least one GPU")
	}
	out := slices.Clone(ids)
	slices.Sort(out)
	for i, id := range out {
		if id == "" {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "GPU id is required")
		}
		if i > 0 && out[i-1] == id {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "GPU %s is listed twice", id)
		}
	}
	return out, nil
}

// checkNewBenchJob refuses a job CreateBenchJob cannot write, and answers
// its GPUs sorted.
func checkNewBenchJob(j *gpurent.BenchJob) ([]string, error) {
	if j.HostID == "" {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "benchmark job host is required")
	}
	if err := checkBenchReason(j.Reason); err != nil {
		return nil, err
	}
	if err := checkTier(j.Tier); err != nil {
		return nil, err
	}
	if j.State != "" && j.State != gpurent.BenchQueued {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "a new benchmark job is queued, not %s", j.State)
	}
	if j.StartedAt != nil || j.EndedAt != nil {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "a new benchmark job has not started")
	}
	if j.Reason == gpurent.BenchVerify && (j.InstanceID == "" || j.AccountID == "") {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "a verify job needs its instance and account")
	}
	return sortedGPUIDs(j.GPUIDs)
}

// CreateBenchJob writes the queued job j and bumps its host's generation;
// see gpurent.Queries. The GPUs must exist on j.HostID (CodeInvalid). A
// job whose reason holds takes its GPUs out of placement: CodeConflict,
// writing nothing, when an open allocation or another open job holds any.
// An empty ID gets a new one, a zero CreatedAt now, an empty GPUType the
// GPUs' type; j.GPUIDs is sorted and j.State set to queued.
func (s *Store) CreateBenchJob(ctx context.Context, j *gpurent.BenchJob) error {
	nj := *j
	if err := s.atomic(ctx, func(st *Store) error { return st.createBenchJob(ctx, &nj, true) }); err != nil {
		return err
	}
	*j = nj
	return nil
}

// createBenchJob writes j inside a transaction (filling j as
// CreateBenchJob does), bumping the host's generation when bump is set.
func (s *Store) createBenchJob(ctx context.Context, j *gpurent.BenchJob, bump bool) error {
	ids, err := checkNewBenchJob(j)
	if err != nil {
		return err
	}
	if j.ID == "" {
		j.ID = gpurent.NewID(gpurent.PrefixBenchJob)
	}
	j.CreatedAt = nowOr(j.CreatedAt)
	j.State = gpurent.BenchQueued
	j.GPUIDs = ids
	const op = "create benchmark job"
	gpus, err := s.lockGPUs(ctx, j.HostID, ids, op)
	if err != nil {
		return err
	}
	if j.GPUType == "" {
		j.GPUType = gpus[0].typeID
	}
	holds := j.Reason.Holds()
	if holds {
		allocated, err := s.openAllocationHolds(ctx, ids)
		if err != nil {
			return s.dbErr(err, op)
		}
		for _, g := range ids {
			if _, ok := allocated[g]; ok {
				return gpurent.Errorf(gpurent.CodeConflict, "GPU %s is allocated to an instance", g)
			}
		}
	}
	n, err := s.execN(ctx, `INSERT INTO bench_jobs (`+benchJobCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)
ON CONFLICT DO NOTHING`, j.ID, j.HostID, j.GPUType, string(j.Reason), j.Tier, j.InstanceID, j.AccountID, j.RequestedBy,
		string(j.State), j.Error, s.ts(j.CreatedAt))
	if err != nil {
		return s.dbErr(err, op)
	}
	if n == 0 {
		return gpurent.Errorf(gpurent.CodeConflict, "benchmark job %q already exists", j.ID)
	}
	args := make([]any, 0, 2*len(ids))
	for _, g := range ids {
		args = append(args, j.ID, g)
	}
	pairs := strings.Repeat("(?, ?), ", len(ids)-1) + "(?, ?)"
	if _, err := s.exec(ctx, `INSERT INTO bench_job_gpus (job_id, gpu_id) VALUES `+pairs, args...); err != nil {
		return s.dbErr(err, op)
	}
	if holds {
		// One GPU at a time, so that a refusal names its GPU; the
		// partial unique index decides.
		for _, g := range ids {
			n, err := s.execN(ctx, `INSERT INTO bench_holds (job_id, gpu_id, released_at) VALUES (?, ?, NULL)
ON CONFLICT DO NOTHING`, j.ID, g)
			if err != nil {
				return s.dbErr(err, op)
			}
			if n == 0 {
				return gpurent.Errorf(gpurent.CodeConflict, "GPU %s is held by another benchmark job", g)
			}
		}
	}
	if bump {
		if _, err := s.BumpHostGeneration(ctx, j.HostID); err != nil {
			return err
		}
	}
	return nil
}

// BenchJobByID returns the job with id.
func (s *Store) BenchJobByID(ctx context.Context, id string) (*gpurent.BenchJob, error) {
	list, err := s.benchJobs(ctx, `j.id = ?`, []any{id}, 1)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, notFound("benchmark job", id)
	}
	return &list[0], nil
}

// ListBenchJobs returns the jobs f selects, newest first, at most f.Limit
// (100 when 0).
func (s *Store) ListBenchJobs(ctx context.Context, f gpurent.BenchJobFilter) ([]gpurent.BenchJob, error) {
	if f.Limit < 0 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "benchmark job limit cannot be negative")
	}
	limit := f.Limit
	if limit == 0 {
		limit = benchDefaultLimit
	}
	conds := []string{"1 = 1"}
	var args []any
	if f.HostID != "" {
		conds = append(conds, "j.host_id = ?")
		args = append(args, f.HostID)
	}
	if f.GPUID != "" {
		conds = append(conds, "EXISTS (SELECT 1 FROM bench_job_gpus jg WHERE jg.job_id = j.id AND jg.gpu_id = ?)")
		args = append(args, f.GPUID)
	}
	if f.InstanceID != "" {
		conds = append(conds, "j.instance_id = ?")
		args = append(args, f.InstanceID)
	}
	if f.AccountID != "" {
		conds = append(conds, "j.account_id = ?")
		args = append(args, f.AccountID)
	}
	if f.OpenOnly {
		conds = append(conds, "j.ended_at IS NULL")
	}
	return s.benchJobs(ctx, strings.Join(conds, " AND "), args, limit)
}

// benchJobs reads the newest limit jobs cond (on bench_jobs j) selects,
// newest first, each with its GPUs.
func (s *Store) benchJobs(ctx context.Context, cond string, args []any, limit int) ([]gpurent.BenchJob, error) {
	const what = "read benchmark jobs"
	jargs := append(slices.Clone(args), limit)
	list, err := queryAll(ctx, s, what, `SELECT `+benchJobCols+` FROM bench_jobs j WHERE `+cond+`
ORDER BY j.created_at DESC, j.seq DESC LIMIT ?`, scanBenchJob, jargs...)
	if err != nil || len(list) == 0 {
		return list, err
	}
	byID := make(map[string]int, len(list))
	gargs := make([]any, len(list))
	for i := range list {
		byID[list[i].ID] = i
		gargs[i] = list[i].ID
		list[i].GPUIDs = []string{}
	}
	rows, err := s.query(ctx, `SELECT job_id, gpu_id FROM bench_job_gpus WHERE job_id IN (`+placeholders(len(gargs))+`)
ORDER BY job_id, gpu_id`, gargs...)
	if err != nil {
		return nil, s.dbErr(err, what)
	}
	defer rows.Close()
	for rows.Next() {
		var jid, gid string
		if err := rows.Scan(&jid, &gid); err != nil {
			return nil, s.dbErr(err, what)
		}
		if i, ok := byID[jid]; ok {
			list[i].GPUIDs = append(list[i].GPUIDs, gid)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, what)
	}
	return list, nil
}

// SetBenchJobRunning moves the queued job id to running, started at at (now
// when zero); false when it was not queued, not_found for an unknown job.
func (s *Store) SetBenchJobRunning(ctx context.Context, id string, at time.Time) (bool, error) {
	n, err := s.execN(ctx, `UPDATE bench_jobs SET state = ?, started_at = ? WHERE id = ? AND state = ?`,
		string(gpurent.BenchRunning), s.ts(nowOr(at)), id, string(gpurent.BenchQueued))
	if err != nil {
		return false, s.dbErr(err, "start benchmark job")
	}
	if n > 0 {
		return true, nil
	}
	ok, err := s.exists(ctx, `SELECT 1 FROM bench_jobs WHERE id = ?`, id)
	if err != nil {
		return false, s.dbErr(err, "start benchmark job")
	}
	if !ok {
		return false, notFound("benchmark job", id)
	}
	return false, nil
}

// finite refuses a figure SQL cannot keep the same on both backends (NaN
// and the infinities).
func finite(what string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return gpurent.Errorf(gpurent.CodeInvalid, "benchmark summary %s is %v", what, v)
	}
	return nil
}

// checkSummary refuses a summary FinishBenchJob cannot store.
func checkSummary(b *gpurent.BenchSummary) error {
	if b.GPUKey == "" || b.Probe == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "benchmark summary GPU key and probe are required")
	}
	if b.GPUs < 0 || b.Runs < 0 || b.Failed < 0 {
		return gpurent.Errorf(gpurent.CodeInvalid, "benchmark summary counts cannot be negative")
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"median", b.Median}, {"min", b.Min}, {"max", b.Max}, {"spread", b.Spread}, {"MAD", b.MAD},
		{"max temperature", b.MaxTempC}, {"min SM clock", b.MinSMClockMHz}, {"mean power", b.MeanPowerW},
		{"fleet median", b.FleetMedian}, {"fleet ratio", b.FleetRatio}, {"spec ratio", b.SpecRatio}} {
		if err := finite(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// checkCert refuses a certification SetGPUCert cannot store.
func checkCert(c *gpurent.GPUCert) error {
	if c.GPUID == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "certification GPU is required")
	}
	if err := checkCertState(c.State); err != nil {
		return err
	}
	if c.RatioPermille < 0 {
		return gpurent.Errorf(gpurent.CodeInvalid, "certification ratio cannot be negative")
	}
	return checkPermille(c.PricePermille)
}

// FinishBenchJob ends the open job f.JobID in one transaction; see
// gpurent.BenchFinish. It answers false, writing nothing, when the job was
// finished already; not_found for an unknown job. Summaries without a
// JobID, HostID, GPUType or At take the job's (and f.At); a summary of
// another job is invalid. f.Next, when set, is filled as CreateBenchJob
// fills its job, once everything committed.
func (s *Store) FinishBenchJob(ctx context.Context, f *gpurent.BenchFinish) (bool, error) {
	if f.JobID == "" {
		return false, gpurent.Errorf(gpurent.CodeInvalid, "benchmark job id is required")
	}
	if !f.State.Finished() {
		return false, gpurent.Errorf(gpurent.CodeInvalid, "a benchmark job ends done, failed or canceled, not %q", f.State)
	}
	ended := nowOr(f.At)
	sums := slices.Clone(f.Summaries)
	for i := range sums {
		b := &sums[i]
		if b.JobID == "" {
			b.JobID = f.JobID
		}
		if b.JobID != f.JobID {
			return false, gpurent.Errorf(gpurent.CodeInvalid, "summary of job %s given to finish job %s", b.JobID, f.JobID)
		}
		if err := checkSummary(b); err != nil {
			return false, err
		}
		if b.At.IsZero() {
			b.At = ended
		}
		b.At = normTime(b.At)
	}
	certs := slices.Clone(f.Certs)
	for i := range certs {
		if err := checkCert(&certs[i]); err != nil {
			return false, err
		}
	}
	var next *gpurent.BenchJob
	if f.Next != nil {
		n := *f.Next
		next = &n
	}
	finished := false
	err := s.atomic(ctx, func(st *Store) error {
		const op = "finish benchmark job"
		var hostID, gpuType, reason string
		err := st.writeRow(ctx, `UPDATE bench_jobs SET state = ?, error = ?, ended_at = ? WHERE id = ? AND ended_at IS NULL
RETURNING host_id, gpu_type, reason`, string(f.State), f.Error, st.ts(ended), f.JobID).Scan(&hostID, &gpuType, &reason)
		if errors.Is(err, sql.ErrNoRows) {
			ok, err := st.exists(ctx, `SELECT 1 FROM bench_jobs WHERE id = ?`, f.JobID)
			if err != nil {
				return st.dbErr(err, op)
			}
			if !ok {
				return notFound("benchmark job", f.JobID)
			}
			return nil // finished already: nothing to write
		}
		if err != nil {
			return st.dbErr(err, op)
		}
		finished = true
		if err := st.insertBenchRecords(ctx, f.JobID, f.Records); err != nil {
			return err
		}
		for i := range sums {
			if sums[i].HostID == "" {
				sums[i].HostID = hostID
			}
			if sums[i].GPUType == "" {
				sums[i].GPUType = gpuType
			}
		}
		if err := st.insertBenchSummaries(ctx, sums); err != nil {
			return err
		}
		if len(sums) > 0 && f.State == gpurent.BenchDone && gpurent.BenchReason(reason) != gpurent.BenchVerify {
			if err := st.updateLatestSummaries(ctx, f.JobID); err != nil {
				return err
			}
		}
		if _, err := st.exec(ctx, `UPDATE bench_holds SET released_at = ? WHERE job_id = ? AND released_at IS NULL`,
			st.ts(ended), f.JobID); err != nil {
			return st.dbErr(err, op)
		}
		for i := range certs {
			if err := st.setGPUCert(ctx, &certs[i]); err != nil {
				return err
			}
		}
		if next != nil {
			if err := st.createBenchJob(ctx, next, next.HostID != hostID); err != nil {
				return err
			}
		}
		_, err = st.BumpHostGeneration(ctx, hostID)
		return err
	})
	if err != nil || !finished {
		return false, err
	}
	f.At = ended
	f.Summaries = sums
	f.Certs = certs
	if next != nil {
		*f.Next = *next
	}
	return true, nil
}

// insertBenchRecords stores a job's raw record lines, numbered in order.
func (s *Store) insertBenchRecords(ctx context.Context, jobID string, lines [][]byte) error {
	for start := 0; start < len(lines); start += benchRecordBatch {
		part := lines[start:min(start+benchRecordBatch, len(lines))]
		args := make([]any, 0, 3*len(part))
		for k, line := range part {
			if line == nil {
				line = []byte{}
			}
			args = append(args, jobID, start+k, line)
		}
		rows := strings.Repeat("(?, ?, ?), ", len(part)-1) + "(?, ?, ?)"
		if _, err := s.exec(ctx, `INSERT INTO bench_records (job_id, seq, line) VALUES `+rows, args...); err != nil {
			return s.dbErr(err, "store benchmark records")
		}
	}
	return nil
}

// insertBenchSummaries stores summaries, in order.
func (s *Store) insertBenchSummaries(ctx context.Context, sums []gpurent.BenchSummary) error {
	const row = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	for start := 0; start < len(sums); start += benchSummaryBatch {
		part := sums[start:min(start+benchSummaryBatch, len(sums))]
		args := make([]any, 0, 27*len(part))
		for k := range part {
			args = append(args, s.summaryArgs(&part[k])...)
		}
		q := `INSERT INTO bench_summaries (` + benchSummaryCols + `) VALUES ` + strings.Repeat(row+", ", len(part)-1) + row
		if _, err := s.exec(ctx, q, args...); err != nil {
			return s.dbErr(err, "store benchmark summaries")
		}
	}
	return nil
}

// updateLatestSummaries makes the job's summaries the latest of their GPU
// key and probe where they are newer (by time, then insertion) than the
// latest kept. Within the job, the newest of a key and probe counts.
func (s *Store) updateLatestSummaries(ctx context.Context, jobID string) error {
	_, err := s.exec(ctx, `INSERT INTO bench_latest (gpu_key, probe, gpu_type, at, summary_seq)
SELECT b.gpu_key, b.probe, b.gpu_type, b.at, b.seq FROM bench_summaries b
WHERE b.job_id = ? AND NOT EXISTS (SELECT 1 FROM bench_summaries o WHERE o.job_id = b.job_id AND o.gpu_key = b.gpu_key
AND o.probe = b.probe AND (o.at > b.at OR (o.at = b.at AND o.seq > b.seq)))
ON CONFLICT (gpu_key, probe) DO UPDATE SET gpu_type = excluded.gpu_type, at = excluded.at, summary_seq = excluded.summary_seq
WHERE excluded.at > bench_latest.at OR (excluded.at = bench_latest.at AND excluded.summary_seq > bench_latest.summary_seq)`, jobID)
	if err != nil {
		return s.dbErr(err, "keep the latest benchmark summaries")
	}
	return nil
}

// prefixCols qualifies each column of the list cols with alias.
func prefixCols(alias, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// BenchRecords returns the job's raw record lines in the order stored;
// not_found for an unknown job.
func (s *Store) BenchRecords(ctx context.Context, jobID string) ([][]byte, error) {
	lines, err := queryAll(ctx, s, "read benchmark records", `SELECT line FROM bench_records WHERE job_id = ? ORDER BY seq`,
		func(r rowScanner) ([]byte, error) {
			var b []byte
			err := r.Scan(&b)
			if b == nil {
				b = []byte{}
			}
			return b, err
		}, jobID)
	if err != nil || len(lines) > 0 {
		return lines, err
	}
	ok, err := s.exists(ctx, `SELECT 1 FROM bench_jobs WHERE id = ?`, jobID)
	if err != nil {
		return nil, s.dbErr(err, "read benchmark records")
	}
	if !ok {
		return nil, notFound("benchmark job", jobID)
	}
	return lines, nil
}

// ListBenchSummaries returns the summaries f selects, oldest first (ties in
// insertion order); NoVerify leaves out those of verify jobs. LatestOnly
// keeps, per GPU key and probe, only the newest summary of a done job that
// was not a verify job, and that only if the other filters select it (so
// with JobID it answers which of the job's summaries are still the
// latest). It reads what FinishBenchJob keeps, never the history.
func (s *Store) ListBenchSummaries(ctx context.Context, f gpurent.BenchSummaryFilter) ([]gpurent.BenchSummary, error) {
	conds := []string{"1 = 1"}
	var args []any
	if f.JobID != "" {
		conds = append(conds, "b.job_id = ?")
		args = append(args, f.JobID)
	}
	if f.GPUKey != "" {
		conds = append(conds, "b.gpu_key = ?")
		args = append(args, f.GPUKey)
	}
	if f.GPUType != "" {
		if f.LatestOnly {
			conds = append(conds, "l.gpu_type = ?")
		} else {
			conds = append(conds, "b.gpu_type = ?")
		}
		args = append(args, f.GPUType)
	}
	if !f.Since.IsZero() {
		conds = append(conds, "b.at >= ?")
		args = append(args, s.ts(f.Since))
	}
	if f.NoVerify && !f.LatestOnly {
		conds = append(conds, "NOT EXISTS (SELECT 1 FROM bench_jobs v WHERE v.id = b.job_id AND v.reason = ?)")
		args = append(args, string(gpurent.BenchVerify))
	}
	from := ` FROM bench_summaries b`
	if f.LatestOnly {
		from = ` FROM bench_latest l JOIN bench_summaries b ON b.seq = l.summary_seq`
	}
	return queryAll(ctx, s, "list benchmark summaries", `SELECT `+prefixCols("b", benchSummaryCols)+from+`
WHERE `+strings.Join(conds, " AND ")+` ORDER BY b.at, b.seq`, scanBenchSummary, args...)
}

// SetGPUCert writes the GPU's certification, replacing any; not_found for
// an unknown GPU. Empty HostID and TypeID take the GPU's; a zero UpdatedAt
// is now. c is updated to what is stored.
func (s *Store) SetGPUCert(ctx context.Context, c *gpurent.GPUCert) error {
	if err := checkCert(c); err != nil {
		return err
	}
	nc := *c
	if err := s.setGPUCert(ctx, &nc); err != nil {
		return err
	}
	*c = nc
	return nil
}

// setGPUCert writes a checked certification, filling c.
func (s *Store) setGPUCert(ctx context.Context, c *gpurent.GPUCert) error {
	const op = "set GPU certification"
	var hid, tid string
	err := s.queryRow(ctx, `SELECT host_id, type_id FROM gpus WHERE id = ?`, c.GPUID).Scan(&hid, &tid)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("GPU", c.GPUID)
	}
	if err != nil {
		return s.dbErr(err, op)
	}
	if c.HostID == "" {
		c.HostID = hid
	}
	if c.TypeID == "" {
		c.TypeID = tid
	}
	c.UpdatedAt = nowOr(c.UpdatedAt)
	c.LastRunAt = normTimePtr(c.LastRunAt)
	// GPU rows are never deleted: the one read above stands.
	_, err = s.exec(ctx, `INSERT INTO gpu_certs (gpu_id, host_id, type_id, state, ratio_permille, price_permille, reason,
last_job_id, last_run_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (gpu_id) DO UPDATE SET host_id = excluded.host_id, type_id = excluded.type_id, state = excluded.state,
ratio_permille = excluded.ratio_permille, price_permille = excluded.price_permille, reason = excluded.reason,
last_job_id = excluded.last_job_id, last_run_at = excluded.last_run_at, updated_at = excluded.updated_at`,
		c.GPUID, c.HostID, c.TypeID, string(c.State), c.RatioPermille, c.PricePermille, c.Reason, c.LastJobID,
		s.tsp(c.LastRunAt), s.ts(c.UpdatedAt))
	if err != nil {
		return s.dbErr(err, op)
	}
	return nil
}

// ListGPUCerts lists the stored certifications of hostID's GPUs, or ("")
// of every GPU, by host and GPU index.
func (s *Store) ListGPUCerts(ctx context.Context, hostID string) ([]gpurent.GPUCert, error) {
	q := `SELECT ` + gpuCertCols + ` FROM gpu_certs c JOIN gpus g ON g.id = c.gpu_id`
	var args []any
	if hostID != "" {
		q += ` WHERE c.host_id = ?`
		args = append(args, hostID)
	}
	return queryAll(ctx, s, "list GPU certifications", q+` ORDER BY c.host_id, g.gpu_index, c.gpu_id`, scanGPUCert, args...)
}

// CertSettings answers the stored certification settings, or the defaults
// (delist, weekly, t2, zero UpdatedAt) until some are saved.
func (s *Store) CertSettings(ctx context.Context) (*gpurent.CertSettings, error) {
	var c gpurent.CertSettings
	var policy string
	var every int64
	err := s.queryRow(ctx, `SELECT policy, every_ns, tier, updated_at FROM cert_settings WHERE id = 1`).
		Scan(&policy, &every, &c.Tier, timeCol{&c.UpdatedAt})
	if errors.Is(err, sql.ErrNoRows) {
		return &gpurent.CertSettings{Policy: defaultCertPolicy, Every: defaultCertEvery, Tier: defaultCertTier}, nil
	}
	if err != nil {
		return nil, s.dbErr(err, "read certification settings")
	}
	c.Policy = gpurent.CertPolicy(policy)
	c.Every = time.Duration(every)
	return &c, nil
}

// SaveCertSettings stores the certification settings (policy delist or
// degrade, Every not negative, tier t1 or t2); a zero UpdatedAt is now,
// written back into cs.
func (s *Store) SaveCertSettings(ctx context.Context, cs *gpurent.CertSettings) error {
	if cs.Policy != gpurent.PolicyDelist && cs.Policy != gpurent.PolicyDegrade {
		return gpurent.Errorf(gpurent.CodeInvalid, "certification policy %q is not delist or degrade", cs.Policy)
	}
	if cs.Every < 0 {
		return gpurent.Errorf(gpurent.CodeInvalid, "certification interval cannot be negative")
	}
	if err := checkTier(cs.Tier); err != nil {
		return err
	}
	updated := nowOr(cs.UpdatedAt)
	_, err := s.exec(ctx, `INSERT INTO cert_settings (id, policy, every_ns, tier, updated_at) VALUES (1, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET policy = excluded.policy, every_ns = excluded.every_ns, tier = excluded.tier,
updated_at = excluded.updated_at`, string(cs.Policy), int64(cs.Every), cs.Tier, s.ts(updated))
	if err != nil {
		return s.dbErr(err, "save certification settings")
	}
	cs.UpdatedAt = updated
	return nil
}
