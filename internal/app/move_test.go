package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/pricing"
)

// moveFleet is a control plane with two hosts on this machine, each its own
// agent (own state directory, own access server on loopback, own names in
// the shared Docker Engine: separate hosts as far as a move can tell):
// host a with 4 H100, host b with 4 A100.
type moveFleet struct {
	t      testing.TB // the test or subtest the helpers fail
	root   testing.TB // the test the fleet lives as long as
	cfg    ServerConfig
	s      *Server
	alice  *sshUser
	acc    *gpurent.Account
	ops    *gpurent.Account
	image  string
	cat    catalog.Catalog
	dir    string
	hosts  map[string]DemoHost
	agents map[string]*Agents
}

const (
	moveA100 = "a100-80g-sxm"
	moveH100 = "h100-80g-sxm"
)

func startMoveFleet(t testing.TB, name string, stall time.Duration) *moveFleet {
	t.Helper()
	return startFleetOf(t, name, fleetOptions{stall: stall, typeA: moveH100, typeB: moveA100})
}

// fleetOptions shape a two-host fleet.
type fleetOptions struct {
	stall, hostDown time.Duration
	typeA, typeB    string
	gpus            int // per host (0: 4)
}

func startFleetOf(t testing.TB, name string, o fleetOptions) *moveFleet {
	t.Helper()
	stall := o.stall
	if o.gpus == 0 {
		o.gpus = 4
	}
	f := &moveFleet{t: t, root: t, image: dockertest.BusyboxBootImage(t), dir: t.TempDir(), agents: map[string]*Agents{}}
	f.cfg = ServerConfig{DSN: filepath.Join(f.dir, "gpurent.db"), Listen: "127.0.0.1:0", JoinToken: "join-" + name,
		BcryptCost: 4, PollWait: 5 * time.Second, BillingInterval: 200 * time.Millisecond, OperationsInterval: 200 * time.Millisecond,
		MoveStallTimeout: stall, HostDownAfter: o.hostDown, Logger: testLogger(), SSHListen: "127.0.0.1:0", KeyDir: filepath.Join(f.dir, "keys")}
	s, err := StartServer(context.Background(), f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.s = s
	f.cfg.Listen = strings.TrimPrefix(s.URL, "http://") // a restart serves where the agents look
	t.Cleanup(func() { f.s.Close() })
	if f.cat, err = catalog.Default(); err != nil {
		t.Fatal(err)
	}
	scope := name + "-" + strings.ToLower(dockertest.NewInstanceID()[2:8])
	f.hosts = map[string]DemoHost{
		"a": {Name: scope + "-a", Zone: "cd-tianfu-a", TypeID: o.typeA, GPUs: o.gpus, GroupSize: 2},
		"b": {Name: scope + "-b", Zone: "cd-tianfu-a", TypeID: o.typeB, GPUs: o.gpus, GroupSize: 2},
	}
	f.startAgent("a")
	f.startAgent("b")
	u := newUser(t, s.URL)
	u.signUp(name+"@lab.example", name+"-password-1")
	if f.acc, err = s.Store.AccountByEmail(context.Background(), name+"@lab.example"); err != nil {
		t.Fatal(err)
	}
	if f.ops, err = s.Auth.CreateAccount(context.Background(), "ops@"+name+".example", "Ops", "ops-password-12", gpurent.RoleOperator, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Wallet.Credit(context.Background(), f.ops, f.acc.ID, 1_000_000, "test credit", "seed"); err != nil {
		t.Fatal(err)
	}
	f.alice = newSSHUser(t, &dockerFleet{s: s, u: u}, "")
	eventually(t, "both hosts' GPUs listed", func() bool {
		if o.typeA == o.typeB {
			return freeGPUs(t, u, o.typeA) == 2*o.gpus
		}
		return freeGPUs(t, u, o.typeA) == o.gpus && freeGPUs(t, u, o.typeB) == o.gpus
	})
	return f
}

// startAgent (re)starts the agent of host role ("a" or "b").
func (f *moveFleet) startAgent(role string) {
	f.t.Helper()
	as, err := StartAgents(context.Background(), AgentsConfig{InitBinary: dockertest.InitBinary(f.t), ServerURL: f.s.URL, Join: f.s,
		DataDir: filepath.Join(f.dir, "agents"), Hosts: []DemoHost{f.hosts[role]}, Catalog: f.cat, Runtime: RuntimeDocker,
		HeartbeatInterval: 300 * time.Millisecond, RetryMax: time.Second, HealthInterval: 200 * time.Millisecond,
		Logger: testLogger()})
	if err != nil {
		f.t.Fatal(err)
	}
	f.agents[role] = as
	f.root.Cleanup(as.Stop)
}

// stopAgent stops host role's agent, as a crash would: its containers stay.
func (f *moveFleet) stopAgent(role string) { f.agents[role].Stop() }

// restartServer stops the control plane and starts it again on the same
// database and address.
func (f *moveFleet) restartServer() {
	f.t.Helper()
	if err := f.s.Close(); err != nil {
		f.t.Logf("close: %v", err)
	}
	s, err := StartServer(context.Background(), f.cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	f.s = s
}

func (f *moveFleet) hostID(role string) string {
	f.t.Helper()
	hosts, err := f.s.Store.ListHosts(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	for _, h := range hosts {
		if h.Name == f.hosts[role].Name {
			return h.ID
		}
	}
	f.t.Fatalf("host %s not registered", f.hosts[role].Name)
	return ""
}

// sshRun runs a shell command in the instance through the gateway with
// the real OpenSSH client.
func (f *moveFleet) sshRun(id, script string) string {
	f.t.Helper()
	out, errOut, err := f.alice.run("", "ssh", id, "-i", f.alice.key, "--ssh-option", "BatchMode=yes", "--",
		"sh", "-c", "'"+script+"'")
	if err != nil {
		f.t.Fatalf("ssh %s: %v\nstdout: %s\nstderr: %s", script, err, out, errOut)
	}
	return out
}

// fingerprint is every file's hash, mode and size, the symlink, and the
// deleted image file, as seen from inside the instance.
const fingerprintScript = `cd / && sha256sum root/data/ds/ckpt.bin root/data/ds/notes.txt opt/tool/bin/tool etc/tool.conf && ` +
	`stat -c "%n %a %s %u" opt/tool/bin/tool root/data/ds/ckpt.bin && readlink usr/local/bin/tool && ` +
	`(test -e bin/sed && echo sed-present || echo sed-deleted) && ls opt/tool/lib | wc -l`

const setupScript = `mkdir -p /root/data/ds /opt/tool/bin /opt/tool/lib && ` +
	`dd if=/dev/urandom of=/root/data/ds/ckpt.bin bs=1M count=16 2>/dev/null && echo run-42 > /root/data/ds/notes.txt && ` +
	`dd if=/dev/urandom of=/opt/tool/bin/tool bs=64k count=4 2>/dev/null && chmod 4751 /opt/tool/bin/tool && ` +
	`for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo lib$i > /opt/tool/lib/lib$i.so; done && ` +
	`echo threads=8 > /etc/tool.conf && mkdir -p /usr/local/bin && ln -s /opt/tool/bin/tool /usr/local/bin/tool && rm /bin/sed`

// checkGPUs checks the instance's container sees exactly its GPUs.
func (f *moveFleet) checkGPUs(in apiv1.Instance) {
	f.t.Helper()
	cli := dockertest.Client(f.t)
	ci := dockertest.Inspect(f.t, cli, dockertest.InstanceContainer(f.t, cli, in.ID))
	want := "void"
	if len(in.GPUs) > 0 {
		want = strings.Join(in.GPUs, ",")
	}
	if !slices.Contains(ci.Config.Env, "NVIDIA_VISIBLE_DEVICES="+want) {
		f.t.Fatalf("container env %v, want NVIDIA_VISIBLE_DEVICES=%s", ci.Config.Env, want)
	}
	if len(in.GPUs) != in.GPUCount {
		f.t.Fatalf("instance lists %d GPUs for a count of %d", len(in.GPUs), in.GPUCount)
	}
}

// operations lists the instance's operations, newest first.
func (f *moveFleet) operations(id string) []apiv1.Operation {
	f.t.Helper()
	var list apiv1.OperationList
	out := f.alice.must("operations", id, "-o", "json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		f.t.Fatalf("operations -o json: %v\n%s", err, out)
	}
	return list.Operations
}

// TestUpgradeKeepsEverything is the headline: an instance with files on its
// volume and anywhere in its file system (a tool installed, a config
// written, an image file deleted) is upgraded on its host, moved to another
// host and GPU type, downgraded, put in no-GPU mode and back, and moved back
// again; after each step every file is as it was, the container sees
// exactly its new GPUs, and SSH through the same gateway works. Billing: each
// run is priced at its own GPUs, runs never overlap, and the seconds of the
// switches are not billed.
func TestUpgradeKeepsEverything(t *testing.T) {
	f := startMoveFleet(t, "upgrade", 0)
	in := f.alice.instance("rent", "--gpu", moveH100, "--count", "1", "--image", f.image, "--wait")
	defer dockertest.Cleanup(t, in.ID)
	if in.HostID != f.hostID("a") {
		t.Fatalf("placed on %s, want host a", in.HostName)
	}
	f.sshRun(in.ID, setupScript)
	want := f.sshRun(in.ID, fingerprintScript)
	if !strings.Contains(want, "sed-deleted") || !strings.Contains(want, "4751") {
		t.Fatalf("setup did not take: %s", want)
	}

	steps := []struct {
		name      string
		args      []string
		host      string
		typ       string
		count     int
		crossHost bool
	}{
		{"more GPUs on the same host", []string{"--count", "2"}, "a", moveH100, 2, false},
		{"another type on another host", []string{"--gpu", moveA100, "--count", "2"}, "b", moveA100, 2, true},
		{"fewer GPUs", []string{"--count", "1"}, "b", moveA100, 1, false},
		{"no-GPU mode", []string{"--count", "0"}, "b", moveA100, 0, false},
		{"back from no-GPU mode", []string{"--count", "1"}, "b", moveA100, 1, false},
		{"back to H100 on the first host", []string{"--gpu", moveH100, "--count", "1"}, "a", moveH100, 1, true},
	}
	for _, st := range steps {
		out := f.alice.must(append([]string{"upgrade", in.ID, "--yes", "--wait"}, st.args...)...)
		got := f.alice.instance("show", in.ID)
		if got.State != "running" || got.HostID != f.hostID(st.host) || got.GPUType != st.typ || got.GPUCount != st.count {
			t.Fatalf("%s: instance %s on %s, %d x %s; want running on host %s, %d x %s\n%s",
				st.name, got.State, got.HostName, got.GPUCount, got.GPUType, st.host, st.count, st.typ, out)
		}
		f.checkGPUs(got)
		if have := f.sshRun(in.ID, fingerprintScript); have != want {
			t.Fatalf("%s: the file system changed:\nbefore:\n%s\nafter:\n%s", st.name, want, have)
		}
		ops := f.operations(in.ID)
		if len(ops) == 0 || ops[0].Step != "done" {
			t.Fatalf("%s: newest operation %+v, want done", st.name, ops)
		}
		if cross := ops[0].From.HostID != ops[0].To.HostID; cross != st.crossHost {
			t.Errorf("%s: cross-host %v, want %v", st.name, cross, st.crossHost)
		}
		// Exactly one allocation is open, holding exactly the GPUs shown.
		allocs, err := f.s.Store.ListAllocations(context.Background(), in.ID)
		if err != nil {
			t.Fatal(err)
		}
		open := 0
		for _, a := range allocs {
			if a.EndedAt == nil {
				open++
				if !slices.Equal(a.GPUIDs, got.GPUs) {
					t.Errorf("%s: open allocation holds %v, instance shows %v", st.name, a.GPUIDs, got.GPUs)
				}
			}
		}
		if open != 1 {
			t.Fatalf("%s: %d open allocations, want 1", st.name, open)
		}
	}

	// Billing: stop, let the last run settle, and check every run.
	f.alice.must("stop", in.ID, "--wait")
	ctx := context.Background()
	var runs []gpurent.UsageRun
	eventually(t, "every run settled", func() bool {
		var err error
		if runs, err = f.s.Store.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: in.ID}); err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if !r.Settled {
				return false
			}
		}
		return len(runs) > 0
	})
	slices.SortFunc(runs, func(a, b gpurent.UsageRun) int { return a.StartedAt.Compare(b.StartedAt) })
	wantShapes := []string{"1x" + moveH100, "2x" + moveH100, "2x" + moveA100, "1x" + moveA100, "0x" + moveA100, "1x" + moveA100, "1x" + moveH100}
	var shapes []string
	for i, r := range runs {
		shapes = append(shapes, strconv.Itoa(r.GPUCount)+"x"+r.TypeID)
		if i > 0 && (runs[i-1].EndedAt == nil || runs[i-1].EndedAt.After(r.StartedAt)) {
			t.Errorf("run %d (%s) starts at %s before run %d ended at %s: billed twice", i, shapes[i], r.StartedAt, i-1, runs[i-1].EndedAt)
		}
		start := r.StartedAt.Truncate(time.Second)
		dur := max(r.EndedAt.Truncate(time.Second).Sub(start), time.Minute)
		q, err := f.s.Billing.Quote(ctx, nil, pricing.QuoteRequest{TypeID: r.TypeID, Count: r.GPUCount, Start: start, Duration: dur})
		if err != nil {
			t.Fatal(err)
		}
		// The quote rounds each line, the run once in all: a fen apart
		// at most where a run crosses an off-peak boundary.
		if d := r.DebitedFen - q.List.HourlyFen; d < -1 || d > 1 {
			t.Errorf("run %d (%s, %s from %s) debited %d fen; its own GPUs' price for that time is %d fen",
				i, shapes[i], dur, start.Format(time.RFC3339), r.DebitedFen, q.List.HourlyFen)
		}
	}
	if !slices.Equal(shapes, wantShapes) {
		t.Fatalf("runs %v, want %v", shapes, wantShapes)
	}
}

// testLogger logs to stderr when GPURENT_TEST_LOG is set (debugging a
// fleet test), else nowhere.
func testLogger() *slog.Logger {
	if os.Getenv("GPURENT_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, nil))
}
