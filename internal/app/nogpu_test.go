package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/rating"
)

// TestNoGPUMode: `gpurent rent --no-gpu` runs a real container with no GPU
// on a GPU host, holds none of its GPUs, and its run is rated at the price
// book's no-GPU price, not a GPU's.
func TestNoGPUMode(t *testing.T) {
	f := startDockerFleet(t, "nogpu", "a100-80g-sxm", 2)
	s, u, acc, image := f.s, f.u, f.acc, f.image
	cli := dockertest.Client(t)
	ctx := context.Background()
	// 10 fen pass the no-GPU start gate (an hour at 0.10 CNY), far from a GPU's.
	f.credit(t, 10, "seed")
	if _, stderr, err := u.run("", "rent", "--gpu", "a100-80g-sxm", "--image", image); err == nil || !strings.Contains(err.Error()+stderr, "top up first") {
		t.Fatalf("a GPU rent with 10 fen: err %v, stderr %q; want refused for the balance", err, stderr)
	}
	in := u.instance("rent", "--gpu", "a100-80g-sxm", "--no-gpu", "--image", image, "--wait")
	defer dockertest.Cleanup(t, in.ID)
	if in.State != "running" || in.GPUCount != 0 || len(in.GPUs) != 0 {
		t.Fatalf("instance %+v: want running with no GPUs", in)
	}
	env := dockertest.MustExec(t, cli, dockertest.InstanceContainer(t, cli, in.ID), "sh", "-c", "echo nv=$NVIDIA_VISIBLE_DEVICES")
	if !strings.Contains(env, "nv=void") {
		t.Errorf("container environment %q: want NVIDIA_VISIBLE_DEVICES=void", env)
	}
	if n := freeGPUs(t, u, "a100-80g-sxm"); n != 2 {
		t.Errorf("free A100s with a no-GPU instance running: %d, want 2", n)
	}
	if _, stderr, err := u.run("", "rent", "--gpu", "a100-80g-sxm", "--no-gpu", "--count", "1", "--image", image); err == nil || !strings.Contains(err.Error()+stderr, "--no-gpu") {
		t.Errorf("--no-gpu with --count: err %v, stderr %q", err, stderr)
	}
	time.Sleep(1500 * time.Millisecond) // a little running time
	u.must("stop", in.ID, "--wait")
	eventually(t, "the run settled", func() bool {
		runs, err := s.Store.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: in.ID})
		return err == nil && len(runs) == 1 && runs[0].Settled && runs[0].GPUCount == 0
	})
	st, err := s.Metering.Statement(ctx, s.Billing, acc, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Lines) != 1 {
		t.Fatalf("statement lines %+v, want one", st.Lines)
	}
	l := st.Lines[0]
	if l.Window != "no-gpu" || l.RateFen != rating.DefaultNoGPUFen || l.Seconds != 60 {
		t.Errorf("statement line %+v: want 60 s (the minimum) of no-gpu at %d fen/h", l, rating.DefaultNoGPUFen)
	}
}
