package docker_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/benchjudge"
)

// benchTestTag is the stand-in of the benchmark image the tests build.
const benchTestTag = "gpurent-test/bench:1"

// benchScript is the stand-in suite: it parses the suite's arguments and
// prints records as the suite does, how depending on --gpu-type: two
// records (one with an error, so it exits 1) around a line of garbage;
// "usage-error" exits 2; "crash" exits 7; "slow" prints a record and
// sleeps. Each record carries in its params what reached the container.
const benchScript = `#!/bin/sh
tier="$1"; shift
gpu_type=""; uuids=""; runs=""; gemm=""
while [ $# -gt 0 ]; do
	case "$1" in
	--gpu-type) gpu_type="$2"; shift 2 ;;
	--expect-uuids) uuids="$2"; shift 2 ;;
	--runs) runs="$2"; shift 2 ;;
	--gemm-seconds) gemm="$2"; shift 2 ;;
	--warmup|--preheat-seconds) shift 2 ;;
	*) echo "suite: error: unrecognized argument $1" >&2; exit 2 ;;
	esac
done
echo "suite: $tier on $uuids" >&2
first="${uuids%%,*}"
record() {
	printf '{"schema":1,"probe":"gemm_bf16","uuids":["%s"],"gpu_type":"%s","value":%s,"unit":"TFLOPS","run":%s,"warmup":false,"params":{"n":8192,"dtype":"bf16","tier":"%s","runs":"%s","gemm_seconds":"%s","job":"%s","cuda_visible":"%s","nvidia_visible":"%s"},"started_at":"2026-11-30T01:02:03.456Z","ended_at":"2026-11-30T01:03:04.456Z","telemetry":{"max_temp_c":null,"mean_sm_clock_mhz":null,"min_sm_clock_mhz":null,"mean_power_w":null,"throttle_reasons":[]},"software":{"driver":"test","cuda":null,"torch":null,"synthetic":true},"error":%s}\n' \
		"$first" "$gpu_type" "$1" "$2" "$tier" "$runs" "$gemm" "$GPURENT_BENCH_JOB" "$CUDA_VISIBLE_DEVICES" "$NVIDIA_VISIBLE_DEVICES" "$3"
}
case "$gpu_type" in
usage-error) echo "suite: error: argument --gpu-type: invalid choice" >&2; exit 2 ;;
crash) echo "RuntimeError: CUDA error: an illegal memory access was encountered" >&2; exit 7 ;;
slow) record 780.5 1 null; exec sleep 600 ;;
esac
record 780.5 1 null
echo "Traceback (most recent call last): not a record"
record null 2 '"CUDA out of memory"'
exit 1
`

// benchImage builds the stand-in image FROM the busybox test image (itself
// FROM scratch); the daemon's build cache makes a rebuild cheap.
func benchImage(t *testing.T) string {
	t.Helper()
	base := dockertest.BusyboxImage(t)
	return dockertest.BuildImage(t, benchTestTag,
		dockertest.File{Name: "Dockerfile", Mode: 0o644,
			Body: []byte("FROM " + base + "\nCOPY suite.sh /suite.sh\nENTRYPOINT [\"/bin/sh\", \"/suite.sh\"]\nCMD []\n")},
		dockertest.File{Name: "suite.sh", Mode: 0o755, Body: []byte(benchScript)})
}

// newBenchRunner is a runner of the stand-in image in a scope of its own,
// so that its sweep never touches another test's containers.
// It returns the scope too.
func newBenchRunner(t *testing.T, cfg docker.BenchConfig) (*docker.BenchRunner, string) {
	t.Helper()
	if cfg.Image == "" {
		cfg.Image = benchImage(t)
	}
	scope := "benchtest-" + gpurent.RandomSecret(6)
	rt := newRuntime(t, docker.Config{Scope: scope, NoPull: true, StopTimeout: time.Second})
	b, err := docker.NewBenchRunner(rt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b, scope
}

func newBenchJob(t *testing.T, gpuType string) agentproto.BenchJob {
	t.Helper()
	job := agentproto.BenchJob{
		JobID: gpurent.NewID(gpurent.PrefixBenchJob), Tier: "t1", GPUType: gpuType,
		GPUUUIDs: []string{"GPU-11111111-2222-3333-4444-555555555555", "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"},
		Options:  agentproto.BenchOptions{Runs: 3, GEMMSeconds: 2.5},
	}
	cli := dockertest.Client(t)
	t.Cleanup(func() {
		_, _ = cli.ContainerRemove(context.Background(), docker.BenchContainerName(job.JobID), client.ContainerRemoveOptions{Force: true})
	})
	return job
}

// lineLog collects emitted lines (copies: the runner reuses its buffer).
type lineLog struct {
	mu    sync.Mutex
	lines []string
	first chan struct{}
}

func newLineLog() *lineLog { return &lineLog{first: make(chan struct{})} }

func (l *lineLog) emit(b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(b))
	if len(l.lines) == 1 {
		close(l.first)
	}
}

func (l *lineLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// requireRemoved fails unless the job's container is gone.
func requireRemoved(t *testing.T, jobID string) {
	t.Helper()
	_, err := dockertest.Client(t).ContainerInspect(t.Context(), docker.BenchContainerName(jobID), client.ContainerInspectOptions{})
	if !cerrdefs.IsNotFound(err) {
		t.Errorf("the benchmark container of %s is still there (inspect: %v)", jobID, err)
	}
}

func TestBenchRunStreamsRecords(t *testing.T) {
	b, _ := newBenchRunner(t, docker.BenchConfig{NoGPUs: true})
	job := newBenchJob(t, "h100-80g-sxm")
	out := newLineLog()
	if err := b.Run(t.Context(), job, out.emit); err != nil {
		t.Fatalf("Run: %v (exit 1 means a record has an error: a success)", err)
	}
	lines := out.all()
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "Traceback") {
		t.Fatalf("lines %q, want a record, the garbage line, a record", lines)
	}
	recs, err := benchjudge.ParseRecords(strings.NewReader(lines[0] + "\n" + lines[2] + "\n"))
	if err != nil {
		t.Fatalf("the records do not parse: %v", err)
	}
	if len(recs) != 2 || recs[0].Value != 780.5 || recs[1].Error != "CUDA out of memory" {
		t.Errorf("records %+v", recs)
	}
	if recs[0].GPUType != "h100-80g-sxm" || recs[0].GPUKey() != job.GPUUUIDs[0] {
		t.Errorf("gpu type %q, uuid %q: the arguments did not reach the suite", recs[0].GPUType, recs[0].GPUKey())
	}
	var raw struct {
		Params map[string]any `json:"params"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &raw); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"tier": "t1", "runs": "3", "gemm_seconds": "2.5", "job": job.JobID,
		"cuda_visible":   strings.Join(job.GPUUUIDs, ","),
		"nvidia_visible": "void", // NoGPUs: no GPU through a default nvidia runtime either
	}
	for k, v := range want {
		if raw.Params[k] != v {
			t.Errorf("in the container %s = %v, want %q", k, raw.Params[k], v)
		}
	}
	requireRemoved(t, job.JobID)
}

func TestBenchRunFailures(t *testing.T) {
	b, _ := newBenchRunner(t, docker.BenchConfig{NoGPUs: true})
	for _, c := range []struct {
		gpuType string
		code    gpurent.Code
		text    []string
	}{
		{"usage-error", gpurent.CodeInvalid, []string{"exit 2", "argument --gpu-type: invalid choice", "suite: t1 on GPU-1111"}},
		{"crash", gpurent.CodeUnavailable, []string{"exited with code 7", "an illegal memory access"}},
	} {
		job := newBenchJob(t, c.gpuType)
		out := newLineLog()
		err := b.Run(t.Context(), job, out.emit)
		if !gpurent.IsCode(err, c.code) {
			t.Errorf("%s: Run = %v, want %s", c.gpuType, err, c.code)
		}
		for _, s := range c.text {
			if err == nil || !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %v does not say %q", c.gpuType, err, s)
			}
		}
		if lines := out.all(); len(lines) != 0 {
			t.Errorf("%s: lines %q", c.gpuType, lines)
		}
		requireRemoved(t, job.JobID)
	}
}

func TestBenchRunCancelKillsContainer(t *testing.T) {
	b, _ := newBenchRunner(t, docker.BenchConfig{NoGPUs: true})
	job := newBenchJob(t, "slow")
	out := newLineLog()
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx, job, out.emit) }()
	select {
	case <-out.first:
	case err := <-done:
		t.Fatalf("Run returned %v before the first record", err)
	case <-time.After(2 * time.Minute): // bounds a hung test; measures nothing
		t.Fatal("no record from the slow suite")
	}
	// It runs: a second job on the same runner is refused.
	if err := b.Run(t.Context(), newBenchJob(t, "h100-80g-sxm"), func([]byte) {}); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("a second job while one runs: %v, want conflict", err)
	}
	c := dockertest.Inspect(t, dockertest.Client(t), docker.BenchContainerName(job.JobID))
	if c.State.Status != container.StateRunning || c.HostConfig.NetworkMode != "none" || c.HostConfig.IpcMode != "private" {
		t.Errorf("container state %s, network %s, ipc %s", c.State.Status, c.HostConfig.NetworkMode, c.HostConfig.IpcMode)
	}
	// Inside: no capability at all, a read-only root, a private IPC
	// namespace (not the host's), a writable /tmp and a large /dev/shm.
	cli := dockertest.Client(t)
	name := docker.BenchContainerName(job.JobID)
	status := dockertest.MustExec(t, cli, name, "cat", "/proc/self/status")
	for _, f := range []string{"CapEff", "CapBnd", "CapPrm"} {
		if !strings.Contains(status, f+":\t0000000000000000") {
			t.Errorf("%s is not empty:\n%s", f, status)
		}
	}
	if r := dockertest.Exec(t, cli, name, "touch", "/rootfs-write"); r.ExitCode == 0 {
		t.Error("the benchmark wrote to its root file system")
	}
	dockertest.MustExec(t, cli, name, "touch", "/tmp/scratch", "/dev/shm/nccl")
	hostIPC, err := os.Readlink("/proc/self/ns/ipc")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(dockertest.MustExec(t, cli, name, "readlink", "/proc/1/ns/ipc")); got == hostIPC {
		t.Errorf("the benchmark shares the host's IPC namespace %s", got)
	}
	if df := dockertest.MustExec(t, cli, name, "df", "-k", "/dev/shm"); strings.Contains(df, " 65536 ") {
		t.Errorf("/dev/shm has Docker's 64 MiB default:\n%s", df)
	}
	withdrawn := errors.New("withdrawn")
	cancel(withdrawn)
	select {
	case err := <-done:
		if !gpurent.IsCode(err, gpurent.CodeUnavailable) || !errors.Is(err, withdrawn) {
			t.Errorf("Run after cancel = %v, want unavailable with the cause", err)
		}
	case <-time.After(2 * time.Minute): // bounds a hung test; measures nothing
		t.Fatal("Run did not return after its context was canceled")
	}
	requireRemoved(t, job.JobID)
	if lines := out.all(); len(lines) != 1 {
		t.Errorf("lines %q, want the one record printed before the cancel", lines)
	}
}

func TestBenchRunDeadline(t *testing.T) {
	b, _ := newBenchRunner(t, docker.BenchConfig{NoGPUs: true, Timeout: 2 * time.Second})
	job := newBenchJob(t, "slow")
	err := b.Run(t.Context(), job, func([]byte) {})
	if !gpurent.IsCode(err, gpurent.CodeUnavailable) || !strings.Contains(err.Error(), "ran past its deadline of 2s") {
		t.Errorf("Run = %v, want the deadline", err)
	}
	requireRemoved(t, job.JobID)
}

func TestBenchRunRequestsGPUs(t *testing.T) {
	// This machine has no NVIDIA Container Toolkit: a real job, which
	// asks for its GPUs, must fail rather than run without them.
	b, _ := newBenchRunner(t, docker.BenchConfig{})
	job := newBenchJob(t, "h100-80g-sxm")
	out := newLineLog()
	err := b.Run(t.Context(), job, out.emit)
	if err == nil || len(out.all()) != 0 {
		t.Fatalf("Run = %v with lines %q: a benchmark ran without its GPUs", err, out.all())
	}
	t.Logf("without the NVIDIA toolkit: %v", err)
	if !strings.Contains(err.Error(), "benchmark container of job "+job.JobID) {
		t.Errorf("error %v", err)
	}
	requireRemoved(t, job.JobID)
}

func TestBenchRunSweepsLeftovers(t *testing.T) {
	b, scope := newBenchRunner(t, docker.BenchConfig{NoGPUs: true})
	cli := dockertest.Client(t)
	// A benchmark container an earlier agent of this scope left running.
	stale := newBenchJob(t, "slow")
	created, err := cli.ContainerCreate(t.Context(), client.ContainerCreateOptions{
		Name: docker.BenchContainerName(stale.JobID),
		Config: &container.Config{Image: dockertest.BusyboxImage(t), Cmd: []string{"sleep", "600"},
			Labels: map[string]string{docker.LabelBench: "true", docker.LabelBenchJob: stale.JobID, docker.LabelScope: scope}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerStart(t.Context(), created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	job := newBenchJob(t, "h100-80g-sxm")
	if err := b.Run(t.Context(), job, func([]byte) {}); err != nil {
		t.Fatal(err)
	}
	requireRemoved(t, stale.JobID)
	requireRemoved(t, job.JobID)
}
