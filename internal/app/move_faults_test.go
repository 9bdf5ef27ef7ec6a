package app

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// writerScript keeps writing while the instance runs, from every start:
// a sequence on the volume (seq, with the last number in seq.last so a
// restart continues it), the same sequence in the container's own layer,
// and the host's uptime (10 ms) for the downtime. A stop ends it between
// two rounds (the image's first process passes SIGTERM on and waits), so
// the three files always agree.
const writerScript = `#!/bin/sh
mkdir -p /var/tmp
i=$(cat /root/data/seq.last 2>/dev/null || echo 0)
stop=
trap 'stop=1' TERM
while [ -z "$stop" ]; do
  i=$((i+1))
  echo $i >> /root/data/seq
  echo $i > /root/data/seq.last
  echo $i >> /var/tmp/layer.seq
  cut -d" " -f1 /proc/uptime >> /root/data/ticks
  usleep 3000
done
`

// dataDir is the host directory of the instance's volume as a host's
// runtime mounts it.
func dataDir(t testing.TB, container string) string {
	t.Helper()
	ci := dockertest.Inspect(t, dockertest.Client(t), container)
	for _, m := range ci.Mounts {
		if m.Destination == runtime.DataPath {
			return m.Source
		}
	}
	t.Fatalf("container %s mounts no volume at %s", container, runtime.DataPath)
	return ""
}

// startWriter puts a dataset and the writer on the instance's volume (from
// the host, as an upload would) and restarts the instance so that it runs
// the writer from then on.
func (f *moveFleet) startWriter(id string, dataMiB int) {
	f.t.Helper()
	f.sshRun(id, "dd if=/dev/urandom of=/root/data/dataset.bin bs=1M count="+strconv.Itoa(dataMiB)+" 2>/dev/null")
	dir := dataDir(f.t, docker.ScopedContainerName(f.hosts["a"].Name, id))
	if err := os.WriteFile(filepath.Join(dir, "boot.sh"), []byte(writerScript), 0o755); err != nil {
		f.t.Fatal(err)
	}
	f.alice.must("stop", id, "--wait")
	f.alice.must("start", id, "--wait")
	eventually(f.t, "the writer writing", func() bool {
		out, _, err := f.alice.run("", "ssh", id, "-i", f.alice.key, "--ssh-option", "BatchMode=yes", "--", "cat", "/root/data/seq.last")
		n, _ := strconv.Atoi(strings.TrimSpace(out))
		return err == nil && n > 10
	})
}

// TestMoveUnderWrites: a process keeps writing, to the volume and to the
// container's own layer, during the pre-copy of a cross-host upgrade; after
// the switch nothing written before the final stop is missing, and the
// sequence goes on where it stopped.
func TestMoveUnderWrites(t *testing.T) {
	f := startMoveFleet(t, "writes", 0)
	in := f.alice.instance("rent", "--gpu", moveH100, "--count", "1", "--image", f.image, "--wait")
	defer dockertest.Cleanup(t, in.ID)
	f.startWriter(in.ID, 256)
	source := docker.ScopedContainerName(f.hosts["a"].Name, in.ID)
	srcData := dataDir(t, source)

	// Watch the source: once it stopped for the final pass, note what it
	// had written (before the old host removes its copy).
	cli := dockertest.Client(t)
	stoppedAt := make(chan string, 1)
	go func() {
		for i := 0; i < 6000; i++ {
			res, err := cli.ContainerInspect(context.Background(), source, client.ContainerInspectOptions{})
			if err == nil && res.Container.State != nil && !res.Container.State.Running {
				b, _ := os.ReadFile(filepath.Join(srcData, "seq.last"))
				stoppedAt <- strings.TrimSpace(string(b))
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		stoppedAt <- ""
	}()
	f.alice.must("upgrade", in.ID, "--gpu", moveA100, "--count", "1", "--yes", "--wait")
	lastText := <-stoppedAt
	last, err := strconv.Atoi(lastText)
	if err != nil || last < 10 {
		t.Fatalf("could not read what the source wrote before its final stop (%q, %v)", lastText, err)
	}
	ops := f.operations(in.ID)
	if ops[0].Step != "done" || ops[0].Passes < 2 || ops[0].BytesMoved < 256<<20 {
		t.Fatalf("operation %+v: want done after at least 2 live passes moving the 256 MiB", ops[0])
	}
	got := f.alice.instance("show", in.ID)
	if got.HostID != f.hostID("b") {
		t.Fatalf("instance on %s, want host b", got.HostName)
	}
	// The new container continues the sequence: wait for it to write.
	eventually(t, "the writer writing on the new host", func() bool {
		out := f.sshRun(in.ID, "cat /root/data/seq.last")
		n, _ := strconv.Atoi(strings.TrimSpace(out))
		return n > last+10
	})
	// Both sequences, on the volume and in the container's own layer, are
	// whole: 1, 2, 3, ... past the last number written before the stop.
	for _, file := range []string{"/root/data/seq", "/var/tmp/layer.seq"} {
		seq := strings.Fields(f.sshRun(in.ID, "cat "+file))
		for i, s := range seq {
			if s != strconv.Itoa(i+1) {
				t.Fatalf("%s line %d is %q, want %d: a write was lost or repeated across the move (final stop at %d)", file, i+1, s, i+1, last)
			}
		}
		if len(seq) <= last {
			t.Fatalf("%s has %d lines, the source had written %d before its final stop", file, len(seq), last)
		}
	}
	// Downtime: the longest gap between ticks (10 ms resolution).
	var prev, gap float64
	for _, l := range strings.Fields(f.sshRun(in.ID, "cat /root/data/ticks")) {
		v, err := strconv.ParseFloat(l, 64)
		if err != nil {
			continue
		}
		if prev > 0 && v-prev > gap {
			gap = v - prev
		}
		prev = v
	}
	t.Logf("cross-host move of 256 MiB under writes: %d passes, %d bytes moved, downtime %.2f s (longest gap between writes)",
		ops[0].Passes, ops[0].BytesMoved, gap)
}

// checkOneAllocation checks the instance holds exactly one open allocation
// and that no host holds a GPU for it outside that allocation.
func (f *moveFleet) checkOneAllocation(id string) *gpurent.Allocation {
	f.t.Helper()
	ctx := context.Background()
	allocs, err := f.s.Store.ListAllocations(ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	var open []gpurent.Allocation
	for _, a := range allocs {
		if a.EndedAt == nil {
			open = append(open, a)
		}
	}
	if len(open) != 1 {
		f.t.Fatalf("instance %s has %d open allocations, want 1: %+v", id, len(open), open)
	}
	hosts, err := f.s.Store.ListHosts(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, h := range hosts {
		for _, g := range h.GPUs {
			if g.InstanceID == id && g.AllocationID != open[0].ID {
				f.t.Fatalf("GPU %s on host %s is still held by allocation %s", g.ID, h.Name, g.AllocationID)
			}
		}
	}
	return &open[0]
}

// checkRuns checks the instance's runs never overlap and that no run was
// billed for an allocation that was rolled back.
func (f *moveFleet) checkRuns(id string) {
	f.t.Helper()
	ctx := context.Background()
	runs, err := f.s.Store.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: id})
	if err != nil {
		f.t.Fatal(err)
	}
	for i, r := range runs {
		a, err := f.s.Store.AllocationByID(ctx, r.AllocationID)
		if err != nil {
			f.t.Fatal(err)
		}
		if a.EndReason == gpurent.AllocEndRolledBack && r.DebitedFen != 0 {
			f.t.Errorf("run %s of a rolled-back target was billed %d fen", r.ID, r.DebitedFen)
		}
		for j, o := range runs {
			if i == j {
				continue
			}
			end := func(r gpurent.UsageRun) time.Time {
				if r.EndedAt != nil {
					return *r.EndedAt
				}
				return time.Now().Add(time.Hour)
			}
			if r.StartedAt.Before(end(o)) && o.StartedAt.Before(end(r)) {
				f.t.Errorf("runs %s and %s overlap: billed twice", r.ID, o.ID)
			}
		}
	}
}

// waitStep waits until the instance's newest operation reaches one of steps.
func (f *moveFleet) waitStep(id string, steps ...string) apiv1.Operation {
	f.t.Helper()
	var op apiv1.Operation
	deadline := time.Now().Add(5 * time.Minute) // a bound on a hung test, not a measure
	for {
		if ops := f.operations(id); len(ops) > 0 {
			op = ops[0]
			for _, s := range steps {
				if op.Step == s {
					return op
				}
			}
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("gave up waiting for operation step %s: %+v", strings.Join(steps, " or "), op)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sub runs a subtest with the fleet's helpers failing that subtest.
func (f *moveFleet) sub(t *testing.T, name string, fn func(t *testing.T)) {
	t.Run(name, func(t *testing.T) {
		parent := f.t
		f.t = t
		defer func() { f.t = parent }()
		fn(t)
	})
}

// TestMoveFaults injects the faults a move must survive: the target agent
// killed mid-copy (the copy stalls, the move rolls back, the target cleans
// up when it returns, and a second attempt succeeds), the control plane
// stopped mid-switch (the move finishes after its restart), and a target
// container that cannot be created (rolled back at once). Each time the
// instance ends running on exactly one allocation, with its files, no run
// billed twice and no GPU left held.
func TestMoveFaults(t *testing.T) {
	// The stall limit is what tells a dead target from a slow one. It no
	// longer runs while the target reports that it is still preparing (the
	// source waits for it without backoff), and the source reports its
	// bytes about every second during a pass, so 12 s without progress is
	// far more than a live host on a loaded 2-core machine takes, and short
	// enough for the rollback below to come soon.
	f := startMoveFleet(t, "faults", 12*time.Second)
	in := f.alice.instance("rent", "--gpu", moveH100, "--count", "1", "--image", f.image, "--wait")
	defer dockertest.Cleanup(t, in.ID)
	f.sshRun(in.ID, setupScript)
	f.sshRun(in.ID, "dd if=/dev/urandom of=/root/data/big.bin bs=1M count=384 2>/dev/null")
	want := f.sshRun(in.ID, fingerprintScript)

	f.sub(t, "target agent killed mid-copy", func(t *testing.T) {
		f.alice.must("upgrade", in.ID, "--gpu", moveA100, "--count", "1", "--yes")
		f.waitStep(in.ID, "copying")
		f.stopAgent("b")
		op := f.waitStep(in.ID, "rolling_back", "rolled_back")
		if !strings.Contains(op.Message, "no progress") {
			t.Errorf("rollback reason %q", op.Message)
		}
		eventually(t, "the instance running on its old host", func() bool {
			got := f.alice.instance("show", in.ID)
			return got.State == "running" && got.HostID == f.hostID("a") && got.GPUType == moveH100
		})
		f.checkOneAllocation(in.ID)
		if have := f.sshRun(in.ID, fingerprintScript); have != want {
			t.Fatalf("files changed by the rolled-back move:\n%s\nvs\n%s", have, want)
		}
		// The target comes back and removes what it had prepared.
		f.startAgent("b")
		f.waitStep(in.ID, "rolled_back")
		target := docker.ScopedContainerName(f.hosts["b"].Name, in.ID)
		eventually(t, "the target's copy removed", func() bool {
			return exec.Command("docker", "inspect", target).Run() != nil
		})
		// And a second attempt succeeds.
		f.alice.must("upgrade", in.ID, "--gpu", moveA100, "--count", "1", "--yes", "--wait")
		if have := f.sshRun(in.ID, fingerprintScript); have != want {
			t.Fatalf("files after the second attempt:\n%s\nvs\n%s", have, want)
		}
		f.checkOneAllocation(in.ID)
		f.checkRuns(in.ID)
	})

	f.sub(t, "control plane stopped mid-switch", func(t *testing.T) {
		f.alice.must("upgrade", in.ID, "--gpu", moveH100, "--count", "1", "--yes")
		f.waitStep(in.ID, "final", "starting")
		f.restartServer()
		f.waitStep(in.ID, "done")
		got := f.alice.instance("show", in.ID)
		if got.State != "running" || got.HostID != f.hostID("a") || got.GPUType != moveH100 {
			t.Fatalf("after the restart: %s on %s, %s", got.State, got.HostName, got.GPUType)
		}
		if have := f.sshRun(in.ID, fingerprintScript); have != want {
			t.Fatalf("files after the restart:\n%s\nvs\n%s", have, want)
		}
		f.checkOneAllocation(in.ID)
		f.checkRuns(in.ID)
	})

	f.sub(t, "target container cannot be made", func(t *testing.T) {
		// The image goes from the daemon (the running container keeps
		// its layers): neither a same-host nor a cross-host target can be
		// created from it, and pulling is impossible here.
		tag := "gpurent-test/vanishing:" + strings.ToLower(in.ID[2:10])
		if out, err := exec.Command("docker", "tag", f.image, tag).CombinedOutput(); err != nil {
			t.Fatalf("docker tag: %v %s", err, out)
		}
		gone := f.alice.instance("rent", "--gpu", moveH100, "--count", "1", "--image", tag, "--wait")
		defer dockertest.Cleanup(t, gone.ID)
		if out, err := exec.Command("docker", "rmi", tag).CombinedOutput(); err != nil {
			t.Fatalf("docker rmi: %v %s", err, out)
		}
		for _, args := range [][]string{{"--count", "2"}, {"--gpu", moveA100, "--count", "1"}} {
			out, errOut, err := f.alice.run("", append([]string{"upgrade", gone.ID, "--yes", "--wait"}, args...)...)
			if err == nil || !strings.Contains(out+errOut+err.Error(), "rolled back") {
				t.Fatalf("upgrade %v of an instance whose image is gone: %v\n%s\n%s", args, err, out, errOut)
			}
			f.waitStep(gone.ID, "rolled_back")
			eventually(t, "the instance running again on its old allocation", func() bool {
				got := f.alice.instance("show", gone.ID)
				return got.State == "running" && got.HostID == f.hostID("a") && got.GPUCount == 1 && got.GPUType == moveH100
			})
			f.checkOneAllocation(gone.ID)
			f.checkRuns(gone.ID)
		}
	})
}

// TestStartElsewhereAndQueued: a stopped instance whose host is full starts
// on another host with its files (`start --move`), and, stopped again with
// that host full too, waits in the queue (`start --queue`) and starts by
// itself, with a notice, once a GPU there frees up.
func TestStartElsewhereAndQueued(t *testing.T) {
	f := startMoveFleet(t, "elsewhere", 0)
	in := f.alice.instance("rent", "--gpu", moveH100, "--count", "1", "--image", f.image, "--wait")
	defer dockertest.Cleanup(t, in.ID)
	f.sshRun(in.ID, setupScript)
	want := f.sshRun(in.ID, fingerprintScript)
	f.alice.must("stop", in.ID, "--wait")
	filler := f.alice.instance("rent", "--gpu", moveH100, "--count", "4", "--image", f.image, "--wait")
	defer dockertest.Cleanup(t, filler.ID)

	// A third host with H100 joins; the stopped instance's host is full.
	f.hosts["c"] = DemoHost{Name: f.hosts["a"].Name + "c", Zone: "cd-tianfu-a", TypeID: moveH100, GPUs: 2, GroupSize: 2}
	f.startAgent("c")
	eventually(t, "host c's GPUs listed", func() bool { return freeGPUs(t, f.alice.user, moveH100) == 2 })
	// Its agent says where it receives copies in a report after the
	// registration: a move to it waits for that.
	eventually(t, "host c's access server known", func() bool {
		h, err := f.s.Store.HostByID(context.Background(), f.hostID("c"))
		return err == nil && h.AccessAddr != ""
	})
	if _, _, err := f.alice.run("", "start", in.ID); err == nil {
		t.Fatal("a plain start on a full host succeeded")
	}
	f.alice.must("start", in.ID, "--move", "--wait")
	got := f.alice.instance("show", in.ID)
	if got.State != "running" || got.HostID != f.hostID("c") {
		t.Fatalf("after start --move: %s on %s, want running on host c", got.State, got.HostName)
	}
	if have := f.sshRun(in.ID, fingerprintScript); have != want {
		t.Fatalf("files after the moved start:\n%s\nvs\n%s", have, want)
	}
	f.checkOneAllocation(in.ID)

	// Stopped again; host c fills up; the start waits in the queue.
	f.alice.must("stop", in.ID, "--wait")
	other := f.alice.instance("rent", "--gpu", moveH100, "--count", "2", "--image", f.image, "--wait")
	defer dockertest.Cleanup(t, other.ID)
	f.alice.must("start", in.ID, "--queue")
	if op := f.waitStep(in.ID, "queued"); op.Kind != "start" {
		t.Fatalf("queued operation %+v", op)
	}
	time.Sleep(time.Second) // a few ticks: still waiting
	if got := f.alice.instance("show", in.ID); got.State != "stopped" {
		t.Fatalf("started while its host is full: %s", got.State)
	}
	f.alice.must("rm", other.ID, "--wait", "--yes")
	f.waitStep(in.ID, "done")
	eventually(t, "the queued instance running", func() bool {
		return f.alice.instance("show", in.ID).State == "running"
	})
	if have := f.sshRun(in.ID, fingerprintScript); have != want {
		t.Fatalf("files after the queued start:\n%s\nvs\n%s", have, want)
	}
	events := f.alice.must("wallet", "alerts")
	if !strings.Contains(events, "instance_starting") || !strings.Contains(events, in.ID) {
		t.Fatalf("no notice of the queued start among the account events:\n%s", events)
	}
}
