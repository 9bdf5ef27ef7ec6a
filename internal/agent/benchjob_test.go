package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/benchjudge"
	"github.com/gpurent/gpurent/internal/gpu/fake"
)

// recordingRunner wraps a BenchRunner, noting the jobs it was given in
// order and failing the test when two run at once.
type recordingRunner struct {
	t     *testing.T
	inner BenchRunner

	mu      sync.Mutex
	running int
	jobs    []string
}

func (r *recordingRunner) Run(ctx context.Context, job agentproto.BenchJob, emit func([]byte)) error {
	r.mu.Lock()
	r.running++
	if r.running > 1 {
		r.t.Errorf("benchmark job %s started while another runs", job.JobID)
	}
	r.jobs = append(r.jobs, job.JobID)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.running--
		r.mu.Unlock()
	}()
	return r.inner.Run(ctx, job, emit)
}

func (r *recordingRunner) ran() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.jobs...)
}

// funcRunner is a BenchRunner made of a function.
type funcRunner func(ctx context.Context, job agentproto.BenchJob, emit func([]byte)) error

func (f funcRunner) Run(ctx context.Context, job agentproto.BenchJob, emit func([]byte)) error {
	return f(ctx, job, emit)
}

// benchHost starts an agent on a host of 8 fake RTX 4090s whose jobs run
// on runner (nil: none), and waits until it is registered.
func benchHost(t *testing.T, runner BenchRunner) (*controlPlane, *host) {
	t.Helper()
	cp := newControlPlane(t)
	h := newHost(t, cp)
	cfg := h.config(h.runtime())
	if runner != nil {
		cfg.Bench = runner
	}
	h.startWith(cfg)
	cp.waitReport("the first report", 0, func(agentproto.Report) bool { return true })
	return cp, h
}

func benchJob(id, tier string, gpus ...int) agentproto.BenchJob {
	j := agentproto.BenchJob{JobID: id, Tier: tier, GPUType: "rtx4090-24g", Options: agentproto.BenchOptions{Runs: 3}}
	for _, i := range gpus {
		j.GPUUUIDs = append(j.GPUUUIDs, fake.UUID(hostName, i))
	}
	return j
}

// waitFinished waits until job has a done or failed result and returns
// every result taken for it.
func waitFinished(cp *controlPlane, job string) []agentproto.BenchResult {
	cp.t.Helper()
	var posts []agentproto.BenchResult
	cp.waitUntil("the result of "+job, func() bool {
		posts = cp.benchPostsOf(job)
		return len(posts) > 0 && posts[len(posts)-1].State != agentproto.BenchRunning
	})
	return posts
}

func parseRecords(t *testing.T, raw []json.RawMessage) []benchjudge.Record {
	t.Helper()
	var buf bytes.Buffer
	for _, r := range raw {
		buf.Write(r)
		buf.WriteByte('\n')
	}
	recs, err := benchjudge.ParseRecords(&buf)
	if err != nil {
		t.Fatalf("the posted records do not parse: %v", err)
	}
	return recs
}

func TestBenchJobRunsOnceAndPostsRecords(t *testing.T) {
	runner := &recordingRunner{t: t}
	cp, h := benchHost(t, runner)
	slow := fake.UUID(hostName, 1)
	if err := h.gpus.SetPerformance(slow, 0.8); err != nil {
		t.Fatal(err)
	}
	runner.inner = SyntheticRunner{Performance: h.gpus.Performance}

	j1 := benchJob("bench-1", "t2", 0, 1)
	cp.setBench(hostName, j1)
	posts := waitFinished(cp, j1.JobID)
	if len(posts) != 2 || posts[0].State != agentproto.BenchRunning || posts[1].State != agentproto.BenchDone {
		t.Fatalf("posts = %+v, want running then done", posts)
	}
	run, done := posts[0], posts[1]
	if run.StartedAt.IsZero() || len(run.Records) != 0 || !run.EndedAt.IsZero() {
		t.Errorf("running post = %+v", run)
	}
	if done.Error != "" || !done.StartedAt.Equal(run.StartedAt) || done.EndedAt.Before(done.StartedAt) {
		t.Errorf("done post: error %q, started %v, ended %v", done.Error, done.StartedAt, done.EndedAt)
	}
	recs := parseRecords(t, done.Records)
	// An RTX 4090 has reference figures for copy_h2d and resnet50_amp:
	// per GPU one warm-up and 3 timed runs of each.
	if len(recs) != 2*2*4 {
		t.Fatalf("%d records, want 16", len(recs))
	}
	sum := map[string]float64{}
	for _, r := range recs {
		if !r.Software.Synthetic || r.GPUType != "rtx4090-24g" || len(r.GPUUUIDs) != 1 {
			t.Errorf("record %+v", r)
		}
		if !r.Warmup && r.Probe == benchjudge.ProbeH2DBW {
			sum[r.GPUUUIDs[0]] += r.Value
		}
	}
	if ratio := sum[slow] / sum[fake.UUID(hostName, 0)]; ratio < 0.75 || ratio > 0.85 {
		t.Errorf("the slow card measures %.3f of the healthy one, want about 0.8", ratio)
	}

	// The job still listed beside new ones is not run again; the new
	// ones run one at a time, in order.
	cp.setBench(hostName, j1, benchJob("bench-2", "t1", 2), benchJob("bench-3", "t1", 3, 4))
	waitFinished(cp, "bench-3")
	if got := runner.ran(); strings.Join(got, " ") != "bench-1 bench-2 bench-3" {
		t.Errorf("ran %v, want bench-1 bench-2 bench-3", got)
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if n := len(cp.benchPostsOf(j1.JobID)); n != 2 {
		t.Errorf("%d posts for bench-1, want 2", n)
	}
	if p := cp.benchPostsOf("bench-2"); len(p) != 2 || p[1].State != agentproto.BenchDone || len(p[1].Records) != 4 {
		t.Errorf("bench-2 posts = %+v, want running, then done with 4 records", p)
	}
}

func TestBenchJobLeavingDesiredIsCanceled(t *testing.T) {
	started := make(chan struct{})
	ended := make(chan error, 1)
	runner := &recordingRunner{t: t, inner: funcRunner(func(ctx context.Context, job agentproto.BenchJob, emit func([]byte)) error {
		if job.JobID != "bench-long" {
			return SyntheticRunner{}.Run(ctx, job, emit)
		}
		emit([]byte(`{"schema":1}`))
		close(started)
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return ctx.Err()
	})}
	cp, _ := benchHost(t, runner)
	cp.setBench(hostName, benchJob("bench-long", "t1", 0))
	within(t, "the long job to start", started)
	cp.waitUntil("bench-long running", func() bool { return len(cp.benchPostsOf("bench-long")) == 1 })

	cp.setBench(hostName)
	select {
	case err := <-ended:
		if err != errBenchWithdrawn {
			t.Errorf("the job ended with %v, want errBenchWithdrawn", err)
		}
	case <-time.After(30 * time.Second): // bounds a hung test; measures nothing
		t.Fatal("the job that left the desired state was not canceled")
	}
	// The next job runs; the canceled one reported nothing more.
	cp.setBench(hostName, benchJob("bench-next", "t1", 0))
	waitFinished(cp, "bench-next")
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if p := cp.benchPostsOf("bench-long"); len(p) != 1 || p[0].State != agentproto.BenchRunning {
		t.Errorf("posts of the canceled job = %+v, want only running", p)
	}
}

func TestBench404DropsJob(t *testing.T) {
	runner := &recordingRunner{t: t, inner: SyntheticRunner{}}
	cp, _ := benchHost(t, runner)
	cp.mu.Lock()
	cp.benchAnswer["bench-gone/running"] = http.StatusNotFound
	cp.benchAnswer["bench-late/done"] = http.StatusNotFound
	cp.mu.Unlock()
	cp.setBench(hostName, benchJob("bench-gone", "t1", 0), benchJob("bench-late", "t1", 1), benchJob("bench-ok", "t1", 2))
	waitFinished(cp, "bench-ok")
	if got := runner.ran(); strings.Join(got, " ") != "bench-late bench-ok" {
		t.Errorf("ran %v: a job the control plane does not know must not run", got)
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if n := len(cp.benchPostsOf("bench-gone")); n != 0 {
		t.Errorf("%d results taken for bench-gone", n)
	}
	if p := cp.benchPostsOf("bench-late"); len(p) != 1 || p[0].State != agentproto.BenchRunning {
		t.Errorf("bench-late posts = %+v, want running only", p)
	}
	// One try each: a 404 is not retried.
	if r := cp.benchRefused; r["bench-gone/running"] != 1 || r["bench-late/done"] != 1 || len(r) != 2 {
		t.Errorf("refused posts = %v, want one for each 404", r)
	}
}

func TestBenchWithoutRunnerPostsFailed(t *testing.T) {
	cp, _ := benchHost(t, nil)
	cp.setBench(hostName, benchJob("bench-1", "t1", 0))
	posts := waitFinished(cp, "bench-1")
	if len(posts) != 1 || posts[0].State != agentproto.BenchFailed ||
		!strings.Contains(posts[0].Error, "no benchmark runner on this host") || len(posts[0].Records) != 0 {
		t.Fatalf("posts = %+v, want one failed saying there is no runner", posts)
	}
}

func TestBenchRefusesGPUsNotOnTheHost(t *testing.T) {
	runner := &recordingRunner{t: t, inner: SyntheticRunner{}}
	cp, _ := benchHost(t, runner)
	stranger := benchJob("bench-stranger", "t1", 0)
	stranger.GPUUUIDs = append(stranger.GPUUUIDs, fake.UUID("another-host", 0))
	wrongType := benchJob("bench-type", "t1", 1)
	wrongType.GPUType = "h100-80g-sxm"
	cp.setBench(hostName, stranger, wrongType)
	for _, c := range []struct{ job, want string }{
		{stranger.JobID, "is not on this host"},
		{wrongType.JobID, "is a rtx4090-24g, not a h100-80g-sxm"},
	} {
		posts := waitFinished(cp, c.job)
		if len(posts) != 1 || posts[0].State != agentproto.BenchFailed || !strings.Contains(posts[0].Error, c.want) {
			t.Errorf("%s posts = %+v, want one failed saying %q", c.job, posts, c.want)
		}
	}
	if got := runner.ran(); len(got) != 0 {
		t.Errorf("ran %v", got)
	}
}

func TestBenchRetriesUntilTaken(t *testing.T) {
	cp, _ := benchHost(t, SyntheticRunner{})
	cp.mu.Lock()
	cp.benchFlaky = 5
	cp.mu.Unlock()
	// A rotated token too: the agent registers again and goes on.
	regs := cp.registrationCount()
	cp.revoke(hostName)
	cp.setBench(hostName, benchJob("bench-1", "t1", 0))
	posts := waitFinished(cp, "bench-1")
	if len(posts) != 2 || posts[0].State != agentproto.BenchRunning || posts[1].State != agentproto.BenchDone {
		t.Fatalf("posts = %+v, want running then done", posts)
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	total := 0
	for _, n := range cp.benchRefused {
		total += n
	}
	if total != 5 {
		t.Errorf("%d posts refused, want the 5 answered 503 (%v)", total, cp.benchRefused)
	}
	if len(cp.registrations) != regs+1 {
		t.Errorf("%d registrations after the token was revoked, want %d", len(cp.registrations), regs+1)
	}
}

func TestBenchSeenIsBoundedButKeepsListedJobs(t *testing.T) {
	b := newBenchState()
	listed := agentproto.BenchJob{JobID: "bench-listed"}
	b.update([]agentproto.BenchJob{listed})
	if _, _, ok := b.next(t.Context()); !ok {
		t.Fatal("the listed job was not taken up")
	}
	b.finish()
	for i := range maxBenchSeen + 10 {
		b.mu.Lock()
		b.remember(fmt.Sprintf("bench-%d", i))
		b.mu.Unlock()
	}
	if len(b.seen) != maxBenchSeen || len(b.order) != maxBenchSeen {
		t.Fatalf("%d ids remembered (%d in order), want %d", len(b.seen), len(b.order), maxBenchSeen)
	}
	if _, _, ok := b.next(t.Context()); ok {
		t.Error("a job still listed was forgotten and taken up again")
	}
	if b.seen["bench-0"] || !b.seen[fmt.Sprintf("bench-%d", maxBenchSeen+9)] {
		t.Error("not the oldest unlisted ids forgotten")
	}
}

func TestBenchRunnerFailureKeepsRecords(t *testing.T) {
	runner := funcRunner(func(ctx context.Context, job agentproto.BenchJob, emit func([]byte)) error {
		if err := (SyntheticRunner{}).Run(ctx, job, emit); err != nil {
			return err
		}
		emit([]byte("Traceback (most recent call last):"))
		return gpurent.Errorf(gpurent.CodeUnavailable, "benchmark container exited with code 2")
	})
	cp, _ := benchHost(t, runner)
	cp.setBench(hostName, benchJob("bench-1", "t1", 0))
	posts := waitFinished(cp, "bench-1")
	last := posts[len(posts)-1]
	if last.State != agentproto.BenchFailed || !strings.Contains(last.Error, "exited with code 2") ||
		!strings.Contains(last.Error, "1 output line(s) dropped: 1 not a JSON object") {
		t.Fatalf("result = %+v", last)
	}
	if recs := parseRecords(t, last.Records); len(recs) != 4 {
		t.Errorf("%d records kept, want the 4 printed before the failure", len(recs))
	}
}

func TestBenchRefusedResultIsReportedFailed(t *testing.T) {
	cp, _ := benchHost(t, SyntheticRunner{})
	cp.mu.Lock()
	cp.benchAnswer["bench-1/done"] = http.StatusRequestEntityTooLarge
	cp.mu.Unlock()
	cp.setBench(hostName, benchJob("bench-1", "t1", 0))
	posts := waitFinished(cp, "bench-1")
	last := posts[len(posts)-1]
	if len(posts) != 2 || last.State != agentproto.BenchFailed || len(last.Records) != 0 ||
		!strings.Contains(last.Error, "the control plane refused the 4 records") {
		t.Fatalf("posts = %+v, want running, then failed saying the records were refused", posts)
	}
}

func TestRecordCollectorBounds(t *testing.T) {
	var c recordCollector
	c.add([]byte("  \t"))                                       // blank: ignored, not counted
	c.add([]byte("not json"))                                   // dropped
	c.add([]byte(`["an array"]`))                               // dropped
	c.add([]byte(`{"a":1} {"b":2}`))                            // two values: dropped
	c.add([]byte("{\"a\":\"\xff\"}"))                           // not UTF-8: dropped
	c.add(bytes.Repeat([]byte("x"), 1+benchjudge.MaxLineBytes)) // too long
	// Short enough as printed, too long once < is escaped as the
	// control plane receives it.
	c.add([]byte(`{"s":"` + strings.Repeat("<", benchjudge.MaxLineBytes/2) + `"}`))
	line := []byte(` { "i" : 0 } `)
	c.add(line)
	line[2] = 'X' // the collector keeps its own copy
	for i := 1; i < maxBenchLines+3; i++ {
		c.add(fmt.Appendf(nil, `{"i":%d}`, i))
	}
	recs := c.records()
	if len(recs) != maxBenchLines || string(recs[0]) != `{"i":0}` || string(recs[maxBenchLines-1]) != fmt.Sprintf(`{"i":%d}`, maxBenchLines-1) {
		t.Fatalf("kept %d records, first %s", len(recs), recs[0])
	}
	want := fmt.Sprintf("9 output line(s) dropped: 4 not a JSON object, 2 longer than %d bytes, 3 beyond the limit of %d records or 12 MiB",
		benchjudge.MaxLineBytes, maxBenchLines)
	if got := c.note(); got != want {
		t.Errorf("note = %q\nwant   %q", got, want)
	}

	// The byte bound holds too.
	var big recordCollector
	pad := strings.Repeat("x", benchjudge.MaxLineBytes-20)
	for i := range maxBenchBytes/len(pad) + 10 {
		big.add(fmt.Appendf(nil, `{"i":%d,"p":"%s"}`, i, pad))
	}
	size := 0
	for _, r := range big.records() {
		size += len(r)
	}
	if size > maxBenchBytes || big.overLimit == 0 {
		t.Errorf("kept %d bytes (limit %d), dropped %d", size, maxBenchBytes, big.overLimit)
	}
}

func TestBenchErrorTextIsBounded(t *testing.T) {
	long := "exited with code 2: " + strings.Repeat("é", maxBenchError) + "ValueError: the last line"
	got := benchErrorText(long)
	if len(got) > maxBenchError || len(got) < maxBenchError-4 || !utf8Valid(got) ||
		!strings.HasPrefix(got, "exited with code 2: éé") || !strings.HasSuffix(got, "éValueError: the last line") ||
		!strings.Contains(got, " … ") {
		t.Errorf("benchErrorText: %d bytes, valid %v: %.40q … %q", len(got), utf8Valid(got), got, got[len(got)-40:])
	}
	if short := "exit 2: usage"; benchErrorText(short) != short {
		t.Errorf("a short text changed: %q", benchErrorText(short))
	}
	if got := benchErrorText("bad \xff byte"); got != "bad \uFFFD byte" {
		t.Errorf("benchErrorText = %q", got)
	}
}

// within waits for ch to close; the deadline only bounds a hung test.
func within(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("gave up waiting for %s", what)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "") == s }
