package docker

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/benchjudge"
)

// This file runs the benchmark suite (bench/README.md) for the agent's
// benchmark jobs: the pinned bench image in a container that sees exactly
// the job's GPUs, its stdout streamed line by line to the agent.

// Labels of benchmark containers. They carry no LabelManaged: a benchmark
// container is not an instance, and List never shows one.
const (
	LabelBench    = "io.gpurent.bench"     // "true"
	LabelBenchJob = "io.gpurent.bench.job" // the job id
)

// BenchContainerName is the container that runs a benchmark job.
func BenchContainerName(jobID string) string { return ContainerPrefix + "bench-" + jobID }

// Bounds of a benchmark container.
const (
	// benchStderrTail is how much of the end of stderr an error quotes.
	benchStderrTail = 4 << 10
	// benchPidsLimit bounds the container's processes and threads (the
	// suite runs one process per GPU, each with many threads).
	benchPidsLimit = 32768
	// benchShmSize caps the benchmark's /dev/shm (NCCL's shared-memory
	// transport needs far more than Docker's 64 MiB), at most half the
	// host's memory; pages count only when used.
	benchShmSize = 16 << 30
	// benchTmpSize caps the benchmark's scratch tmpfs at /tmp.
	benchTmpSize = 8 << 30
	// benchDrain bounds the wait for the output stream to end after the
	// container exited.
	benchDrain = 10 * time.Second
	// benchCleanup bounds the removal of the container, which runs even
	// after the job's context ended.
	benchCleanup = time.Minute
)

// BenchConfig configures a BenchRunner.
type BenchConfig struct {
	// Image is the benchmark image, "gpurent-bench:1"; in production pin
	// it by digest ("registry/gpurent-bench@sha256:..."). It is pulled
	// when missing unless the runtime's Config.NoPull is set.
	Image string
	// Timeout bounds one job; 0: by tier, GPU count and options (see
	// BenchTimeout).
	Timeout time.Duration
	// NoGPUs runs the container without its GPU device request. Only for
	// tests on machines without the NVIDIA Container Toolkit: a real
	// benchmark must always get its GPUs.
	NoGPUs bool
}

// BenchRunner runs benchmark jobs as containers of the bench image on a
// Runtime's daemon: tier and options as arguments, exactly the job's GPUs
// by UUID, no network, a private IPC namespace with a large /dev/shm
// (NCCL's shared memory between the per-GPU processes), no capability, a
// read-only root with a tmpfs scratch at /tmp, no new privileges, a pids
// limit, and no logs kept by the daemon (the output is streamed). It runs one job at a time, and removes any
// benchmark container left over in its scope before it starts one, so
// that a run that outlived a crashed agent never measures beside a new one.
type BenchRunner struct {
	rt   *Runtime
	cfg  BenchConfig
	busy sync.Mutex
}

// NewBenchRunner makes a runner on rt's daemon.
func NewBenchRunner(rt *Runtime, cfg BenchConfig) (*BenchRunner, error) {
	if rt == nil {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "benchmark runner: no Docker runtime")
	}
	if strings.TrimSpace(cfg.Image) == "" || strings.ContainsAny(cfg.Image, " \t\n") {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "benchmark runner: image %q is not an image reference", cfg.Image)
	}
	if cfg.Timeout < 0 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "benchmark runner: negative timeout")
	}
	if cfg.NoGPUs {
		rt.log.Warn("benchmark runner without GPU device requests: results measure nothing (tests only)")
	}
	return &BenchRunner{rt: rt, cfg: cfg}, nil
}

// Run runs job to its end and hands each stdout line to emit (see
// agent.BenchRunner): nil when the suite exits 0 or 1 (1: some record
// carries its own error), an error naming the exit code and quoting the
// end of stderr otherwise, when the container cannot be made or started
// (no NVIDIA runtime, a GPU that is gone), when the job's deadline passes,
// or when ctx ends. The container is removed in every case.
func (b *BenchRunner) Run(ctx context.Context, job agentproto.BenchJob, emit func(line []byte)) error {
	if err := ValidateBenchJob(job); err != nil {
		return err
	}
	if !b.busy.TryLock() {
		return gpurent.Errorf(gpurent.CodeConflict, "a benchmark already runs on this host")
	}
	defer b.busy.Unlock()
	limit := b.cfg.Timeout
	if limit == 0 {
		limit = BenchTimeout(job)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, limit,
		gpurent.Errorf(gpurent.CodeUnavailable, "benchmark job %s ran past its deadline of %s", job.JobID, limit))
	defer cancel()
	log := b.rt.log.With("bench_job", job.JobID)

	if err := b.rt.findImage(ctx, b.cfg.Image); err != nil {
		return b.ended(ctx, err)
	}
	if err := b.sweep(ctx); err != nil {
		return b.ended(ctx, err)
	}
	cfg, host := b.containerConfig(job)
	created, err := b.rt.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: BenchContainerName(job.JobID), Config: cfg, HostConfig: host})
	if err != nil {
		return b.ended(ctx, wrap(err, "create the benchmark container of job %s", job.JobID))
	}
	id := created.ID
	defer b.remove(ctx, id, job.JobID)

	att, err := b.rt.cli.ContainerAttach(ctx, id, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return b.ended(ctx, wrap(err, "attach to the benchmark container of job %s", job.JobID))
	}
	defer att.Close()
	waited := b.rt.cli.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	lines := &lineSplitter{emit: emit, limit: benchjudge.MaxLineBytes + 1}
	tail := &tailBuffer{max: benchStderrTail}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = stdcopy.StdCopy(lines, tail, att.Reader) // ends with the container's output or a closed connection
		lines.flush()
	}()
	// Whatever happens next, no line is emitted after Run returns.
	drain := func(wait bool) {
		if wait {
			t := time.NewTimer(benchDrain)
			defer t.Stop()
			select {
			case <-copied:
				return
			case <-t.C:
				log.Warn("docker: the benchmark's output did not end after it exited; closing it")
			}
		}
		att.Close()
		<-copied
	}

	if _, err := b.rt.cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		drain(false)
		hint := ""
		if !b.cfg.NoGPUs && !b.rt.nvidia {
			hint = " (this Docker Engine has no NVIDIA runtime)"
		}
		return b.ended(ctx, wrap(err, "start the benchmark container of job %s%s", job.JobID, hint))
	}
	log.Info("docker: benchmark started", "image", b.cfg.Image, "tier", job.Tier, "gpus", len(job.GPUUUIDs), "deadline", limit)
	var res container.WaitResponse
	select {
	case res = <-waited.Result:
	case err := <-waited.Error:
		drain(false)
		return b.ended(ctx, wrap(err, "wait for the benchmark container of job %s", job.JobID))
	case <-ctx.Done():
		b.remove(ctx, id, job.JobID) // kill it now; the output ends with it
		drain(false)
		return b.ended(ctx, ctx.Err())
	}
	drain(true)
	return benchExit(job.JobID, res, tail.String())
}

// ended returns err, or the reason ctx ended when it did (the deadline, or
// the caller's cancellation) with err as the cause.
func (b *BenchRunner) ended(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		return err
	}
	cause := context.Cause(ctx)
	if gpurent.ErrorCode(cause) != gpurent.CodeInternal {
		return cause // the deadline, or a caller's own error
	}
	return gpurent.WrapError(gpurent.CodeUnavailable, cause, "benchmark canceled")
}

// benchExit maps the suite's exit status (bench/README.md) to Run's result.
func benchExit(jobID string, res container.WaitResponse, stderr string) error {
	why := strings.TrimSpace(strings.ToValidUTF8(stderr, "\uFFFD"))
	if why == "" {
		why = "nothing on stderr"
	}
	if res.Error != nil && res.Error.Message != "" {
		why = res.Error.Message + "; " + why
	}
	switch res.StatusCode {
	case 0, 1: // 1: some record carries an error, and says so itself
		return nil
	case 2:
		return gpurent.Errorf(gpurent.CodeInvalid, "benchmark of job %s refused its arguments (exit 2): %s", jobID, why)
	case 3:
		return gpurent.Errorf(gpurent.CodeUnavailable, "benchmark of job %s could not list the GPUs (exit 3): %s", jobID, why)
	}
	return gpurent.Errorf(gpurent.CodeUnavailable, "benchmark of job %s exited with code %d: %s", jobID, res.StatusCode, why)
}

// remove force-removes the container (killing it if it runs), even when
// ctx has ended.
func (b *BenchRunner) remove(ctx context.Context, id, jobID string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), benchCleanup)
	defer cancel()
	_, err := b.rt.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) { // conflict: removal already in progress
		b.rt.log.Error("docker: cannot remove a benchmark container", "bench_job", jobID, "container", id, "err", err)
	}
}

// sweep removes every benchmark container of this runtime's scope: only
// one benchmark runs on a host, and a container left by an agent that died
// would skew the new one's figures.
func (b *BenchRunner) sweep(ctx context.Context) error {
	filters := make(client.Filters).Add("label", LabelBench+"=true")
	if b.rt.cfg.Scope != "" {
		filters.Add("label", LabelScope+"="+b.rt.cfg.Scope)
	}
	res, err := b.rt.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filters})
	if err != nil {
		return wrap(err, "list benchmark containers")
	}
	for _, c := range res.Items {
		b.rt.log.Warn("docker: removing a benchmark container left over", "container", c.Names, "bench_job", c.Labels[LabelBenchJob], "state", c.State)
		b.remove(ctx, c.ID, c.Labels[LabelBenchJob])
	}
	return nil
}

// containerConfig builds the container of a job. It is pure, so that the
// configuration is checked without a daemon too.
func (b *BenchRunner) containerConfig(job agentproto.BenchJob) (*container.Config, *container.HostConfig) {
	stop := int(b.rt.cfg.StopTimeout.Seconds())
	gpus := strings.Join(job.GPUUUIDs, ",")
	visible := gpus
	if b.cfg.NoGPUs {
		visible = noGPUs // never let a default nvidia runtime add GPUs behind the request's back
	}
	labels := map[string]string{LabelBench: "true", LabelBenchJob: job.JobID}
	if b.rt.cfg.Scope != "" {
		labels[LabelScope] = b.rt.cfg.Scope
	}
	cfg := &container.Config{
		Image: b.cfg.Image,
		Cmd:   BenchArgs(job),
		Env: []string{
			// The root is read-only: caches (PyTorch, Triton) go to /tmp.
			"HOME=/tmp",
			"XDG_CACHE_HOME=/tmp/.cache",
			"TRITON_CACHE_DIR=/tmp/.triton",
			EnvCUDAVisibleDevices + "=" + gpus,
			"GPURENT_BENCH_JOB=" + job.JobID,
			EnvNvidiaVisibleDevices + "=" + visible,
		},
		Labels:       labels,
		AttachStdout: true,
		AttachStderr: true,
		StopTimeout:  &stop,
	}
	pids := int64(benchPidsLimit)
	useInit := true
	shm := int64(benchShmSize)
	if m := b.rt.hostMemory; m > 0 && shm > m/2 {
		shm = m / 2
	}
	host := &container.HostConfig{
		NetworkMode: "none",
		// A private IPC namespace with a /dev/shm big enough for NCCL's
		// shared-memory transport between the per-GPU processes: the
		// host's IPC namespace would let the suite reach every shared
		// memory segment and semaphore on the host.
		IpcMode: container.IPCModePrivate,
		ShmSize: shm,
		// The suite needs no capability and writes only its scratch
		// (caches under /tmp): no capability, a read-only root.
		CapDrop:        []string{"ALL"},
		ReadonlyRootfs: true,
		Tmpfs:          map[string]string{"/tmp": fmt.Sprintf("rw,nosuid,nodev,size=%d", benchTmpSize)},
		SecurityOpt:    []string{"no-new-privileges:true"},
		Init:           &useInit,
		LogConfig:      container.LogConfig{Type: "none"},
		Resources:      container.Resources{PidsLimit: &pids},
	}
	if !b.cfg.NoGPUs {
		host.DeviceRequests = []container.DeviceRequest{{
			Driver:       "nvidia",
			DeviceIDs:    slices.Clone(job.GPUUUIDs),
			Capabilities: [][]string{{"gpu"}},
		}}
	}
	return cfg, host
}

// BenchArgs are the suite's arguments for a job: the tier, the GPU type,
// the GPUs it must see, and the options that are set.
func BenchArgs(job agentproto.BenchJob) []string {
	args := []string{job.Tier, "--gpu-type", job.GPUType, "--expect-uuids", strings.Join(job.GPUUUIDs, ",")}
	o := job.Options
	if o.Runs > 0 {
		args = append(args, "--runs", strconv.Itoa(o.Runs))
	}
	if o.Warmup > 0 {
		args = append(args, "--warmup", strconv.Itoa(o.Warmup))
	}
	if o.GEMMSeconds > 0 {
		args = append(args, "--gemm-seconds", strconv.FormatFloat(o.GEMMSeconds, 'f', -1, 64))
	}
	if o.PreheatSeconds > 0 {
		args = append(args, "--preheat-seconds", strconv.FormatFloat(o.PreheatSeconds, 'f', -1, 64))
	}
	return args
}

// Bounds of a job's options.
const (
	maxBenchRuns    = 1000
	maxBenchWarmup  = 100
	maxBenchSeconds = 3600.0
	maxBenchGPUs    = 64
)

// ValidateBenchJob checks what the runner passes to the daemon and the
// suite: a known tier, a GPU type and GPU UUIDs that are plain names, and
// options within bounds.
func ValidateBenchJob(job agentproto.BenchJob) error {
	o := job.Options
	switch {
	case !validName(job.JobID):
		return gpurent.Errorf(gpurent.CodeInvalid, "benchmark job id %q is not usable as a container name", job.JobID)
	case job.Tier != "t0" && job.Tier != "t1" && job.Tier != "t2":
		return gpurent.Errorf(gpurent.CodeInvalid, "benchmark job %s: tier %q is not t0, t1 or t2", job.JobID, job.Tier)
	case !validName(job.GPUType) || len(job.GPUType) > 64:
		return gpurent.Errorf(gpurent.CodeInvalid, "benchmark job %s: GPU type %q is not a type id", job.JobID, job.GPUType)
	case len(job.GPUUUIDs) == 0 || len(job.GPUUUIDs) > maxBenchGPUs:
		return gpurent.Errorf(gpurent.CodeInvalid, "benchmark job %s: %d GPUs, want 1 to %d", job.JobID, len(job.GPUUUIDs), maxBenchGPUs)
	case o.Runs < 0 || o.Runs > maxBenchRuns || o.Warmup < 0 || o.Warmup > maxBenchWarmup:
		return gpurent.Errorf(gpurent.CodeInvalid, "benchmark job %s: runs %d and warm-ups %d, at most %d and %d",
			job.JobID, o.Runs, o.Warmup, maxBenchRuns, maxBenchWarmup)
	case !(o.GEMMSeconds >= 0 && o.GEMMSeconds <= maxBenchSeconds) || !(o.PreheatSeconds >= 0 && o.PreheatSeconds <= maxBenchSeconds):
		return gpurent.Errorf(gpurent.CodeInvalid, "benchmark job %s: GEMM and pre-heat seconds must be 0 to %v", job.JobID, maxBenchSeconds)
	}
	seen := make(map[string]bool, len(job.GPUUUIDs))
	for _, u := range job.GPUUUIDs {
		if !gpuUUID(u) || seen[u] {
			return gpurent.Errorf(gpurent.CodeInvalid, "benchmark job %s: %q is not a GPU UUID or is listed twice", job.JobID, u)
		}
		seen[u] = true
	}
	return nil
}

// gpuUUID reports whether s reads as a GPU (or MIG) UUID as NVML prints
// one: letters, digits, '-', '_', '.', '/', and not a word the toolkit
// takes for a set of GPUs.
func gpuUUID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	switch strings.ToLower(s) {
	case "all", "none", noGPUs:
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./", c)) {
			return false
		}
	}
	return true
}

// BenchTimeout is the deadline of a job when BenchConfig.Timeout is 0:
// generous, to end a hung run, never a healthy one. T0 gets 10 minutes;
// T1 30 minutes plus 5 per GPU; T2 90 minutes plus 30 per GPU (copies and
// ResNet-50 go one GPU at a time). More runs than the tier's default
// stretch it in proportion, and twice the GEMM and pre-heat time the
// options ask for is added.
func BenchTimeout(job agentproto.BenchJob) time.Duration {
	n := time.Duration(len(job.GPUUUIDs))
	o := job.Options
	var base time.Duration
	defRuns, defWarmup := 3, 1
	switch job.Tier {
	case "t0":
		return 10 * time.Minute
	case "t1":
		base = 30*time.Minute + 5*time.Minute*n
	default:
		base = 90*time.Minute + 30*time.Minute*n
		defRuns = 5
	}
	runs, warmup := defRuns, defWarmup
	if o.Runs > 0 {
		runs = o.Runs
	}
	if o.Warmup > 0 {
		warmup = o.Warmup
	}
	if scale := math.Ceil(float64(runs+warmup) / float64(defRuns+defWarmup)); scale > 1 {
		base = time.Duration(scale) * base
	}
	extra := o.PreheatSeconds + float64(runs+warmup)*o.GEMMSeconds*2 // BF16 and FP8
	return base + 2*time.Duration(extra*float64(time.Second))
}

// lineSplitter cuts a stream into lines for emit, holding at most limit
// bytes of one: a longer line is emitted cut at limit bytes.
type lineSplitter struct {
	emit  func([]byte)
	limit int
	buf   []byte
}

func (l *lineSplitter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := l.limit - len(l.buf); room > 0 {
			l.buf = append(l.buf, chunk[:min(room, len(chunk))]...)
		}
		if i < 0 {
			break
		}
		l.emit(l.buf)
		l.buf = l.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

// flush emits a last line that had no newline.
func (l *lineSplitter) flush() {
	if len(l.buf) > 0 {
		l.emit(l.buf)
		l.buf = l.buf[:0]
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		t.b = append(t.b[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if over := len(t.b) + len(p) - t.max; over > 0 {
		t.b = t.b[:copy(t.b, t.b[over:])]
	}
	t.b = append(t.b, p...)
	return n, nil
}

func (t *tailBuffer) String() string { return string(t.b) }
