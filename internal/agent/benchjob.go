package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/benchjudge"
)

// BenchRunner runs the benchmark suite (bench/) for one job on exactly the
// job's GPUs: the Docker runner (runtime/docker) on real hosts, the
// SyntheticRunner on hosts with fake GPUs.
type BenchRunner interface {
	// Run runs job until the suite ends or ctx does, handing each line the
	// suite prints on stdout to emit, in order, without its newline. emit
	// must not keep line after it returns. A runner may cut a line longer
	// than benchjudge.MaxLineBytes to benchjudge.MaxLineBytes+1 bytes rather than
	// hold it whole. Run returns nil when the suite ran to its end, even
	// when some records carry an error (they say so themselves), and an
	// error when it could not run or ended abnormally; the lines emitted
	// until then are kept either way.
	Run(ctx context.Context, job agentproto.BenchJob, emit func(line []byte)) error
}

// Bounds of what the agent keeps of a job's output and reports of it,
// within what the control plane takes (a 16 MiB request, 20,000 records,
// 2,000 bytes of error).
const (
	maxBenchLines = 20_000   // records a job may report
	maxBenchBytes = 12 << 20 // their total size, as sent
	maxBenchError = 2000     // the error text of a result
	// benchErrorHead is what a cut error text keeps of its start (what
	// failed); the rest is its end (the last words of stderr).
	benchErrorHead = 500
	// maxBenchSeen bounds the job ids remembered as started in this
	// process (a job id is never run twice): the oldest are forgotten.
	maxBenchSeen = 4096
)

// errBenchWithdrawn is the cause of a job's cancellation when it left the
// desired state.
var errBenchWithdrawn = errors.New("the job left the desired state")

// benchState is the agent's benchmark jobs: the latest list the desired
// state holds, the ids already taken up, and the one in progress.
type benchState struct {
	kick chan struct{} // the list changed

	mu      sync.Mutex
	jobs    []agentproto.BenchJob
	seen    map[string]bool
	order   []string // seen, oldest first
	current string   // the job being run or reported, "" when none
	cancel  context.CancelCauseFunc
}

func newBenchState() *benchState {
	return &benchState{kick: make(chan struct{}, 1), seen: map[string]bool{}}
}

// update takes the jobs of a new desired state: the job in progress is
// canceled when the list no longer holds it, and the bench loop looks for
// new ones.
func (b *benchState) update(jobs []agentproto.BenchJob) {
	b.mu.Lock()
	b.jobs = slices.Clone(jobs)
	if b.current != "" && !slices.ContainsFunc(jobs, func(j agentproto.BenchJob) bool { return j.JobID == b.current }) {
		b.cancel(errBenchWithdrawn)
	}
	b.mu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// next takes up the first job of the list not taken up before, and returns
// it with a context that ends when it leaves the list or ctx ends. ok is
// false when there is none.
func (b *benchState) next(ctx context.Context) (job agentproto.BenchJob, jobCtx context.Context, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, j := range b.jobs {
		if b.seen[j.JobID] {
			continue
		}
		b.remember(j.JobID)
		jobCtx, cancel := context.WithCancelCause(ctx)
		b.current, b.cancel = j.JobID, cancel
		return j, jobCtx, true
	}
	return agentproto.BenchJob{}, nil, false
}

// remember marks id as taken up. Beyond maxBenchSeen ids it forgets the
// oldest that the list no longer holds. b.mu is held.
func (b *benchState) remember(id string) {
	b.seen[id] = true
	b.order = append(b.order, id)
	if len(b.order) <= maxBenchSeen {
		return
	}
	listed := make(map[string]bool, len(b.jobs))
	for _, j := range b.jobs {
		listed[j.JobID] = true
	}
	for i, old := range b.order {
		if !listed[old] {
			delete(b.seen, old)
			b.order = slices.Delete(b.order, i, i+1)
			return
		}
	}
}

// finish ends the job in progress.
func (b *benchState) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancel != nil {
		b.cancel(nil)
	}
	b.current, b.cancel = "", nil
}

// benchLoop runs the desired state's benchmark jobs one at a time, in the
// order listed, each once in the life of the process.
func (a *Agent) benchLoop(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.bench.kick:
		}
		for ctx.Err() == nil {
			job, jobCtx, ok := a.bench.next(ctx)
			if !ok {
				break
			}
			a.runBenchJob(jobCtx, job)
			a.bench.finish()
		}
	}
}

// runBenchJob runs one job and reports it: running, then done or failed
// with its records. A job that leaves the desired state (or an agent that
// stops) ends it without a word: the control plane has let it go, or the
// next agent takes it up again.
func (a *Agent) runBenchJob(ctx context.Context, job agentproto.BenchJob) {
	log := a.log.With("bench_job", job.JobID, "tier", job.Tier, "gpus", len(job.GPUUUIDs))
	if job.JobID == "" {
		log.Error("agent: the desired state holds a benchmark job without an id; ignoring it")
		return
	}
	started := a.now()
	refuse := func(err error) {
		log.Error("agent: refusing a benchmark job", "err", err)
		a.sendBenchResult(ctx, log, agentproto.BenchResult{JobID: job.JobID, State: agentproto.BenchFailed,
			Error: benchErrorText(err.Error()), StartedAt: started, EndedAt: a.now()})
	}
	if err := a.checkBenchJob(ctx, job); err != nil {
		if ctx.Err() == nil {
			refuse(err)
		}
		return
	}
	if a.cfg.Bench == nil {
		refuse(gpurent.Errorf(gpurent.CodeUnavailable, "no benchmark runner on this host"))
		return
	}
	if !a.sendBenchResult(ctx, log, agentproto.BenchResult{JobID: job.JobID, State: agentproto.BenchRunning, StartedAt: started}) {
		return
	}
	log.Info("agent: benchmark job started")
	col := &recordCollector{}
	err := a.cfg.Bench.Run(ctx, job, col.add)
	if ctx.Err() != nil {
		log.Warn("agent: benchmark job ended before it finished", "why", context.Cause(ctx), "records", col.count())
		return
	}
	res := agentproto.BenchResult{JobID: job.JobID, State: agentproto.BenchDone, StartedAt: started, EndedAt: a.now(),
		Records: col.records()}
	var why []string
	if err != nil {
		why = append(why, err.Error())
	} else if len(res.Records) == 0 {
		why = append(why, "the benchmark printed no records")
	}
	if len(why) > 0 {
		res.State = agentproto.BenchFailed
	}
	if note := col.note(); note != "" {
		why = append(why, note)
	}
	res.Error = benchErrorText(strings.Join(why, "; "))
	log.Info("agent: benchmark job finished", "state", res.State, "records", len(res.Records),
		"took", res.EndedAt.Sub(started).Round(time.Second), "error", res.Error)
	a.sendBenchResult(ctx, log, res)
}

// checkBenchJob refuses a job that this host cannot run as given.
func (a *Agent) checkBenchJob(ctx context.Context, job agentproto.BenchJob) error {
	o := job.Options
	switch {
	case job.Tier == "":
		return gpurent.Errorf(gpurent.CodeInvalid, "benchmark job %s names no tier", job.JobID)
	case len(job.GPUUUIDs) == 0:
		return gpurent.Errorf(gpurent.CodeInvalid, "benchmark job %s names no GPU", job.JobID)
	case o.Runs < 0 || o.Warmup < 0 || !(o.GEMMSeconds >= 0) || !(o.PreheatSeconds >= 0):
		return gpurent.Errorf(gpurent.CodeInvalid, "benchmark job %s: negative options", job.JobID)
	}
	devs, err := a.cfg.GPUs.Devices(ctx)
	if err != nil {
		return gpurent.WrapError(gpurent.CodeUnavailable, err, "cannot list this host's GPUs")
	}
	types := make(map[string]string, len(devs))
	for _, d := range devs {
		types[d.UUID] = d.TypeID
	}
	seen := make(map[string]bool, len(job.GPUUUIDs))
	for _, u := range job.GPUUUIDs {
		t, ok := types[u]
		switch {
		case seen[u]:
			return gpurent.Errorf(gpurent.CodeInvalid, "benchmark job %s lists GPU %s twice", job.JobID, u)
		case !ok:
			return gpurent.Errorf(gpurent.CodeNotFound, "GPU %s is not on this host", u)
		case t != "" && job.GPUType != "" && t != job.GPUType:
			return gpurent.Errorf(gpurent.CodeConflict, "GPU %s is a %s, not a %s", u, t, job.GPUType)
		}
		seen[u] = true
	}
	return nil
}

// sendBenchResult posts res until the control plane takes it, and reports
// whether it did. It gives up when the control plane does not know the job
// (404: unknown or finished), when the job leaves the desired state or the
// agent stops (ctx), and when the control plane refuses the result outright:
// a refused done or failed result with records is then sent once more as
// failed, without them, saying so.
func (a *Agent) sendBenchResult(ctx context.Context, log *slog.Logger, res agentproto.BenchResult) bool {
	err := a.postBench(ctx, res)
	switch {
	case err == nil:
		return true
	case ctx.Err() != nil:
		return false
	case gpurent.IsCode(err, gpurent.CodeNotFound):
		log.Warn("agent: the control plane no longer knows the benchmark job; dropping it", "state", res.State)
		return false
	}
	log.Error("agent: the control plane refused the benchmark result", "state", res.State, "records", len(res.Records), "err", err)
	if res.State == agentproto.BenchRunning || len(res.Records) == 0 {
		return false
	}
	return a.sendBenchResult(ctx, log, agentproto.BenchResult{JobID: res.JobID, State: agentproto.BenchFailed,
		StartedAt: res.StartedAt, EndedAt: res.EndedAt,
		Error: benchErrorText(fmt.Sprintf("the control plane refused the %d records: %s", len(res.Records), gpurent.ErrorMessage(err)))})
}

// benchErrorText bounds an error text to maxBenchError bytes of valid
// UTF-8: a longer one keeps its start and its end, where a runner's error
// says what failed and how the program's diagnostics ended.
func benchErrorText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxBenchError {
		return s
	}
	const gap = " … "
	head := benchErrorHead
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	tail := len(s) - (maxBenchError - head - len(gap))
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + gap + s[tail:]
}

// recordCollector keeps a job's output lines that are JSON objects, within
// the bounds, and counts what it drops. It is safe for concurrent use.
type recordCollector struct {
	mu        sync.Mutex
	lines     []json.RawMessage
	size      int
	notObject int // not a JSON object (or not UTF-8)
	tooLong   int // longer than benchjudge.MaxLineBytes
	overLimit int // beyond maxBenchLines or maxBenchBytes
}

// add takes one line. A record is kept as it will be sent (compact, with
// <, > and & escaped, as encoding/json sends a RawMessage), so that its
// size, and the line the control plane stores, are what the bounds say.
func (c *recordCollector) add(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(line) > benchjudge.MaxLineBytes {
		c.tooLong++
		return
	}
	var compact bytes.Buffer
	if line[0] != '{' || !utf8.Valid(line) || json.Compact(&compact, line) != nil {
		c.notObject++
		return
	}
	var sent bytes.Buffer
	json.HTMLEscape(&sent, compact.Bytes())
	switch {
	case sent.Len() > benchjudge.MaxLineBytes:
		c.tooLong++
	case len(c.lines) >= maxBenchLines || c.size+sent.Len() > maxBenchBytes:
		c.overLimit++
	default:
		c.lines = append(c.lines, json.RawMessage(sent.Bytes()))
		c.size += sent.Len()
	}
}

func (c *recordCollector) records() []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.lines)
}

func (c *recordCollector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.lines)
}

// note says what was dropped, "" when nothing was.
func (c *recordCollector) note() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	if c.notObject > 0 {
		parts = append(parts, fmt.Sprintf("%d not a JSON object", c.notObject))
	}
	if c.tooLong > 0 {
		parts = append(parts, fmt.Sprintf("%d longer than %d bytes", c.tooLong, benchjudge.MaxLineBytes))
	}
	if c.overLimit > 0 {
		parts = append(parts, fmt.Sprintf("%d beyond the limit of %d records or %d MiB", c.overLimit, maxBenchLines, maxBenchBytes>>20))
	}
	if len(parts) == 0 {
		return ""
	}
	n := c.notObject + c.tooLong + c.overLimit
	return fmt.Sprintf("%d output line(s) dropped: %s", n, strings.Join(parts, ", "))
}
