package docker

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// These check the benchmark container's configuration without a daemon;
// benchrun_test.go runs it on the real Docker Engine.

func testBenchJob() agentproto.BenchJob {
	return agentproto.BenchJob{JobID: "bench-abc", Tier: "t2", GPUType: "h100-80g-sxm",
		GPUUUIDs: []string{"GPU-bbbb", "GPU-aaaa"}, Options: agentproto.BenchOptions{Runs: 7, Warmup: 2, GEMMSeconds: 30, PreheatSeconds: 0.5}}
}

func TestBenchContainerConfig(t *testing.T) {
	r := &Runtime{cfg: Config{StopTimeout: 7 * time.Second, Scope: "demo-a"}, network: "bridge", nvidia: true}
	b := &BenchRunner{rt: r, cfg: BenchConfig{Image: "gpurent-bench@sha256:0123"}}
	job := testBenchJob()
	cfg, host := b.containerConfig(job)
	if len(host.DeviceRequests) != 1 {
		t.Fatalf("DeviceRequests = %+v, want one", host.DeviceRequests)
	}
	dr := host.DeviceRequests[0]
	if dr.Driver != "nvidia" || dr.Count != 0 || !slices.Equal(dr.DeviceIDs, job.GPUUUIDs) ||
		len(dr.Capabilities) != 1 || !slices.Equal(dr.Capabilities[0], []string{"gpu"}) {
		t.Errorf("DeviceRequest = %+v, want exactly the job's UUIDs, never a count", dr)
	}
	dr.DeviceIDs[0] = "changed"
	if job.GPUUUIDs[0] != "GPU-bbbb" {
		t.Error("the device request shares the job's slice")
	}
	if host.NetworkMode != "none" || host.IpcMode != container.IPCModePrivate || host.ShmSize < 1<<30 {
		t.Errorf("network %q, ipc %q, shm %d; want none, a private IPC namespace and a large /dev/shm whatever the instances use",
			host.NetworkMode, host.IpcMode, host.ShmSize)
	}
	if !slices.Equal(host.CapDrop, []string{"ALL"}) || len(host.CapAdd) != 0 || !host.ReadonlyRootfs || host.Tmpfs["/tmp"] == "" {
		t.Errorf("cap-drop %v, cap-add %v, read-only root %v, tmpfs %v; want no capability and a read-only root with /tmp",
			host.CapDrop, host.CapAdd, host.ReadonlyRootfs, host.Tmpfs)
	}
	if host.Privileged || !slices.Contains(host.SecurityOpt, "no-new-privileges:true") || host.Init == nil || !*host.Init {
		t.Errorf("privileged %v, security %v, init %v", host.Privileged, host.SecurityOpt, host.Init)
	}
	if host.PidsLimit == nil || *host.PidsLimit <= 0 || host.LogConfig.Type != "none" || host.AutoRemove {
		t.Errorf("pids %v, log driver %q, auto-remove %v", host.PidsLimit, host.LogConfig.Type, host.AutoRemove)
	}
	if len(host.Mounts) != 0 || len(host.Binds) != 0 {
		t.Errorf("mounts %v binds %v: the benchmark gets no host files", host.Mounts, host.Binds)
	}
	if cfg.Image != "gpurent-bench@sha256:0123" || len(cfg.Entrypoint) != 0 {
		t.Errorf("image %q entrypoint %v: the image's own entry point runs", cfg.Image, cfg.Entrypoint)
	}
	wantArgs := []string{"t2", "--gpu-type", "h100-80g-sxm", "--expect-uuids", "GPU-bbbb,GPU-aaaa",
		"--runs", "7", "--warmup", "2", "--gemm-seconds", "30", "--preheat-seconds", "0.5"}
	if !slices.Equal(cfg.Cmd, wantArgs) {
		t.Errorf("args %q\nwant %q", cfg.Cmd, wantArgs)
	}
	wantEnv := []string{"HOME=/tmp", "XDG_CACHE_HOME=/tmp/.cache", "TRITON_CACHE_DIR=/tmp/.triton", "CUDA_VISIBLE_DEVICES=GPU-bbbb,GPU-aaaa", "GPURENT_BENCH_JOB=bench-abc", "NVIDIA_VISIBLE_DEVICES=GPU-bbbb,GPU-aaaa"}
	if !slices.Equal(cfg.Env, wantEnv) {
		t.Errorf("env %q, want %q", cfg.Env, wantEnv)
	}
	if cfg.Labels[LabelBench] != "true" || cfg.Labels[LabelBenchJob] != "bench-abc" || cfg.Labels[LabelScope] != "demo-a" {
		t.Errorf("labels %v", cfg.Labels)
	}
	if _, managed := cfg.Labels["io.gpurent.managed"]; managed {
		t.Error("a benchmark container is labelled as a managed instance")
	}
	if !cfg.AttachStdout || !cfg.AttachStderr || cfg.Tty || cfg.OpenStdin || *cfg.StopTimeout != 7 {
		t.Errorf("attach %v/%v tty %v stdin %v stop %d", cfg.AttachStdout, cfg.AttachStderr, cfg.Tty, cfg.OpenStdin, *cfg.StopTimeout)
	}

	// Defaults pass no option; NoGPUs (tests) asks for no device and
	// hides every GPU from a default nvidia runtime.
	b.cfg.NoGPUs = true
	job.Options = agentproto.BenchOptions{}
	cfg, host = b.containerConfig(job)
	if len(host.DeviceRequests) != 0 || !slices.Contains(cfg.Env, "NVIDIA_VISIBLE_DEVICES=void") {
		t.Errorf("NoGPUs: device requests %v, env %v", host.DeviceRequests, cfg.Env)
	}
	if !slices.Equal(cfg.Cmd, wantArgs[:5]) {
		t.Errorf("args without options %q", cfg.Cmd)
	}
}

func TestValidateBenchJob(t *testing.T) {
	if err := ValidateBenchJob(testBenchJob()); err != nil {
		t.Fatalf("a good job refused: %v", err)
	}
	mig := testBenchJob()
	mig.GPUUUIDs = []string{"MIG-GPU-5e6f/1/0", "MIG-8c1f2d3e-aaaa-bbbb-cccc-000000000000"}
	if err := ValidateBenchJob(mig); err != nil {
		t.Errorf("MIG UUIDs refused: %v", err)
	}
	for name, mut := range map[string]func(j *agentproto.BenchJob){
		"no id":          func(j *agentproto.BenchJob) { j.JobID = "" },
		"id with slash":  func(j *agentproto.BenchJob) { j.JobID = "a/b" },
		"tier t3":        func(j *agentproto.BenchJob) { j.Tier = "t3" },
		"type flag":      func(j *agentproto.BenchJob) { j.GPUType = "--probe" },
		"no GPUs":        func(j *agentproto.BenchJob) { j.GPUUUIDs = nil },
		"all GPUs":       func(j *agentproto.BenchJob) { j.GPUUUIDs = []string{"all"} },
		"comma":          func(j *agentproto.BenchJob) { j.GPUUUIDs = []string{"GPU-a,GPU-b"} },
		"twice":          func(j *agentproto.BenchJob) { j.GPUUUIDs = []string{"GPU-a", "GPU-a"} },
		"space":          func(j *agentproto.BenchJob) { j.GPUUUIDs = []string{"GPU-a b"} },
		"negative runs":  func(j *agentproto.BenchJob) { j.Options.Runs = -1 },
		"too many runs":  func(j *agentproto.BenchJob) { j.Options.Runs = 1001 },
		"warm-ups":       func(j *agentproto.BenchJob) { j.Options.Warmup = 101 },
		"NaN seconds":    func(j *agentproto.BenchJob) { j.Options.GEMMSeconds = math.NaN() },
		"hours pre-heat": func(j *agentproto.BenchJob) { j.Options.PreheatSeconds = 7200 },
	} {
		j := testBenchJob()
		mut(&j)
		if err := ValidateBenchJob(j); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
}

func TestBenchTimeout(t *testing.T) {
	j := testBenchJob()
	j.Options = agentproto.BenchOptions{}
	if got := BenchTimeout(j); got != 90*time.Minute+60*time.Minute {
		t.Errorf("t2 on 2 GPUs: %s", got)
	}
	j.Tier = "t1"
	if got := BenchTimeout(j); got != 40*time.Minute {
		t.Errorf("t1 on 2 GPUs: %s", got)
	}
	j.Options = agentproto.BenchOptions{Runs: 7, GEMMSeconds: 60, PreheatSeconds: 30}
	// 8 runs against 4 by default: twice; plus 2 × (30 + 8 × 60 × 2) s.
	if got, want := BenchTimeout(j), 80*time.Minute+2*(30+960)*time.Second; got != want {
		t.Errorf("t1 with options: %s, want %s", got, want)
	}
	j.Tier = "t0"
	if got := BenchTimeout(j); got != 10*time.Minute {
		t.Errorf("t0: %s", got)
	}
}

func TestLineSplitter(t *testing.T) {
	var got []string
	l := &lineSplitter{emit: func(b []byte) { got = append(got, string(b)) }, limit: 8}
	for _, chunk := range []string{"ab", "c\nde", "f\n\n0123456789abc", "def\nlast"} {
		if n, err := l.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	l.flush()
	want := []string{"abc", "def", "", "01234567", "last"}
	if !slices.Equal(got, want) {
		t.Errorf("lines %q, want %q (a long line cut at the limit)", got, want)
	}
	if cap(l.buf) > 16 {
		t.Errorf("the splitter grew to %d bytes for a limit of 8", cap(l.buf))
	}
}

func TestTailBuffer(t *testing.T) {
	tb := &tailBuffer{max: 10}
	for _, s := range []string{"hello ", "world", ", this is the end"} {
		_, _ = tb.Write([]byte(s))
	}
	if tb.String() != "is the end" {
		t.Errorf("tail %q", tb.String())
	}
	_, _ = tb.Write([]byte("!"))
	if tb.String() != "s the end!" || cap(tb.b) > 32 {
		t.Errorf("tail %q (capacity %d)", tb.String(), cap(tb.b))
	}
	big := bytes.Repeat([]byte("x"), 1000)
	_, _ = tb.Write(big)
	if tb.String() != strings.Repeat("x", 10) {
		t.Errorf("tail after a big write %q", tb.String())
	}
}

func TestBenchExit(t *testing.T) {
	for _, c := range []struct {
		code int64
		want gpurent.Code
		text string
	}{
		{0, "", ""},
		{1, "", ""},
		{2, gpurent.CodeInvalid, "refused its arguments (exit 2): usage: bad"},
		{3, gpurent.CodeUnavailable, "could not list the GPUs (exit 3): usage: bad"},
		{137, gpurent.CodeUnavailable, "exited with code 137: usage: bad"},
	} {
		err := benchExit("bench-1", container.WaitResponse{StatusCode: c.code}, "\n usage: bad \n")
		if gpurent.ErrorCode(err) != c.want || c.text != "" && !strings.Contains(err.Error(), c.text) {
			t.Errorf("exit %d: %v, want %s %q", c.code, err, c.want, c.text)
		}
	}
	err := benchExit("bench-1", container.WaitResponse{StatusCode: 9}, "\xff")
	if err == nil || !strings.Contains(err.Error(), "\uFFFD") {
		t.Errorf("stderr not made valid UTF-8: %v", err)
	}
	if err := benchExit("bench-1", container.WaitResponse{StatusCode: 9}, ""); err == nil || !strings.Contains(err.Error(), "nothing on stderr") {
		t.Errorf("empty stderr: %v", err)
	}
}
