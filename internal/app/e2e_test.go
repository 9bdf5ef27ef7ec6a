package app

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/cli"
)

// user runs CLI commands in-process, as one person with one config dir.
type user struct {
	t   testing.TB
	env cli.Env
}

func newUser(t testing.TB, server string) *user {
	env := cli.Env{
		ConfigDir:    t.TempDir(),
		Getenv:       func(k string) string { return map[string]string{cli.EnvServer: server}[k] },
		PollInterval: 100 * time.Millisecond,
	}
	return &user{t: t, env: env}
}

// run executes `gpurent args...` and returns stdout, stderr and the error.
func (u *user) run(stdin string, args ...string) (string, string, error) {
	u.t.Helper()
	root := cli.NewRootWith(u.env)
	var out, errb bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(stdin))
	// The limit only ends a wedged command: one that waits (--wait) for a
	// move takes as long as its copy does, minutes on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return out.String(), errb.String(), err
}

// must runs a command that must succeed.
func (u *user) must(args ...string) string {
	u.t.Helper()
	out, errOut, err := u.run("", args...)
	if err != nil {
		u.t.Fatalf("gpurent %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// instance runs a command printing one instance as JSON.
func (u *user) instance(args ...string) apiv1.Instance {
	u.t.Helper()
	var in apiv1.Instance
	out := u.must(append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		u.t.Fatalf("gpurent %s -o json: %v\n%s", strings.Join(args, " "), err, out)
	}
	return in
}

// signUp registers and logs in.
func (u *user) signUp(email, password string) {
	u.t.Helper()
	if out, errOut, err := u.run(password+"\n", "register", "--email", email, "--name", email, "--password-stdin"); err != nil {
		u.t.Fatalf("register %s: %v\n%s%s", email, err, out, errOut)
	}
	if out, errOut, err := u.run(password+"\n", "login", "--email", email, "--password-stdin"); err != nil {
		u.t.Fatalf("login %s: %v\n%s%s", email, err, out, errOut)
	}
}

// eventually polls cond until it holds or the bound passes (a bounded wait
// for an asynchronous state, not a timing assertion).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute) // a bound on a hung test, not a measure
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freeGPUs(t testing.TB, u *user, typ string) int {
	var list apiv1.GPUTypeList
	if err := json.Unmarshal([]byte(u.must("gpus", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	for _, g := range list.GPUTypes {
		if g.ID == typ {
			return g.Free
		}
	}
	return -1
}

// TestEndToEnd: serve plus two agents with fake GPUs and the real Docker
// runtime; a customer registers and rents 2x H100 through the CLI, sees it
// run, stops, starts and removes it; another customer can neither see nor
// touch it; killing and restarting the agents, and restarting the control
// plane, leave the running container untouched.
func TestEndToEnd(t *testing.T) {
	image := dockertest.BusyboxImage(t)
	cli := dockertest.Client(t)
	ctx := context.Background()
	dir := t.TempDir()
	cfg := ServerConfig{DSN: filepath.Join(dir, "gpurent.db"), Listen: "127.0.0.1:0", JoinToken: "join-e2e",
		BcryptCost: 4, PollWait: 5 * time.Second, BillingInterval: 300 * time.Millisecond}
	s, err := StartServer(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	scope := "e2e-" + strings.ToLower(dockertest.NewInstanceID()[2:8])
	agents := AgentsConfig{InitBinary: dockertest.InitBinary(t), ServerURL: s.URL, Join: s, DataDir: filepath.Join(dir, "agents"),
		Hosts: []DemoHost{
			{Name: scope + "-a", Zone: "cd-tianfu-a", TypeID: "h100-80g-sxm", GPUs: 8, GroupSize: 8},
			{Name: scope + "-b", Zone: "cd-gaoxin-b", TypeID: "h100-80g-sxm", GPUs: 8, GroupSize: 8},
		},
		Catalog: c, Runtime: RuntimeDocker, HeartbeatInterval: 500 * time.Millisecond, RetryMax: time.Second}
	as, err := StartAgents(ctx, agents)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { as.Stop() }()

	alice := newUser(t, s.URL)
	alice.signUp("alice@lab.example", "alice-password-1")
	if out := alice.must("whoami"); !strings.Contains(out, "alice@lab.example") {
		t.Fatalf("whoami: %s", out)
	}
	eventually(t, "both hosts' 16 H100s listed free", func() bool { return freeGPUs(t, alice, "h100-80g-sxm") == 16 })

	// Before renting, the price: the seed's example, worked by hand in
	// internal/pricing's TestQuoteSeedExample.
	quote := alice.must("price", "--gpu", "h100-80g-sxm", "--count", "4", "--hours", "120", "--start", "2026-12-01T09:00")
	for _, want := range []string{"¥13,963.80", "¥7,640.60", "¥6,323.20", "¥11,173.40", "cheapest: hourly"} {
		if !strings.Contains(quote, want) {
			t.Errorf("gpurent price: %q missing from\n%s", want, quote)
		}
	}

	// A student applies for academic prices with a university address; an
	// operator approves; the quote then says the academic price is hers.
	carol := newUser(t, s.URL)
	carol.signUp("carol@std.uestc.edu.cn", "carol-password-1")
	// An address not yet proven proves nothing: refused until verified.
	if out, errOut, err := carol.run("", "academic", "apply", "--institution", "UESTC"); err == nil ||
		!strings.Contains(err.Error()+out+errOut, "not verified") {
		t.Fatalf("academic apply from an unverified address: %v %s%s", err, out, errOut)
	}
	carolAcc, err := s.Store.AccountByEmail(ctx, "carol@std.uestc.edu.cn")
	if err != nil {
		t.Fatal(err)
	}
	link, err := s.Auth.RequestEmailVerification(ctx, carolAcc)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Auth.ConfirmEmail(ctx, carolAcc, link); err != nil {
		t.Fatal(err)
	}
	carol.must("academic", "apply", "--institution", "UESTC")
	if _, err := s.Auth.CreateAccount(ctx, "ops@e2e.example", "Ops", "ops-password-12", "operator", 0); err != nil {
		t.Fatal(err)
	}
	ops := newUser(t, s.URL)
	if out, errOut, err := ops.run("ops-password-12\n", "login", "--email", "ops@e2e.example", "--password-stdin"); err != nil {
		t.Fatalf("operator login: %v %s%s", err, out, errOut)
	}
	// The operator credits alice's wallet: usage is debited from it.
	ops.must("credit", "alice@lab.example", "1000", "--reason", "e2e")

	var pending apiv1.AcademicApplicationList
	if err := json.Unmarshal([]byte(ops.must("academic", "ls", "--all", "--state", "pending", "-o", "json")), &pending); err != nil ||
		len(pending.Applications) != 1 {
		t.Fatalf("pending applications: %+v %v", pending, err)
	}
	ops.must("academic", "approve", pending.Applications[0].ID, "--note", "edu.cn address")
	if out := carol.must("whoami"); !strings.Contains(out, "verified until") {
		t.Errorf("whoami after approval:\n%s", out)
	}
	if out := carol.must("price", "--gpu", "h100-80g-sxm", "--count", "4", "--hours", "120", "--start", "2026-12-01T09:00"); !strings.Contains(out, "Academic prices (yours)") {
		t.Errorf("a verified student's quote:\n%s", out)
	}
	if out, errOut, err := alice.run("", "academic", "show", pending.Applications[0].ID); err == nil {
		t.Errorf("alice reads carol's application:\n%s%s", out, errOut)
	}

	in := alice.instance("rent", "--gpu", "h100-80g-sxm", "--count", "2", "--image", image, "--name", "train", "--wait")
	id := in.ID
	defer dockertest.Cleanup(t, id)
	if in.State != "running" || len(in.GPUs) != 2 || in.Runtime != "docker" || in.Volume == nil || in.Volume.MountPath != "/root/data" {
		t.Fatalf("rented instance: %+v", in)
	}
	if got := freeGPUs(t, alice, "h100-80g-sxm"); got != 14 {
		t.Errorf("free H100s after renting 2: %d, want 14", got)
	}
	if out := alice.must("ls"); !strings.Contains(out, id) || !strings.Contains(out, "running") {
		t.Errorf("ls does not show the running instance:\n%s", out)
	}
	shown := alice.instance("show", id)
	if len(shown.Events) < 3 || shown.HostName == "" {
		t.Errorf("show: want host and events, got %+v", shown)
	}

	// The container holds exactly its GPUs, its limits and its volume.
	name := dockertest.InstanceContainer(t, dockertest.Client(t), id)
	ci := dockertest.Inspect(t, cli, name)
	env := strings.Join(ci.Config.Env, "\n")
	want := strings.Join(in.GPUs, ",")
	if !strings.Contains(env, "NVIDIA_VISIBLE_DEVICES="+want) || !strings.Contains(env, "CUDA_VISIBLE_DEVICES="+want) {
		t.Errorf("container env %q lacks the GPUs %s", env, want)
	}
	if ci.HostConfig.NanoCPUs <= 0 || ci.HostConfig.Memory <= 0 || ci.HostConfig.Privileged {
		t.Errorf("limits: cpu %d mem %d privileged %v", ci.HostConfig.NanoCPUs, ci.HostConfig.Memory, ci.HostConfig.Privileged)
	}
	dockertest.MustExec(t, cli, name, "sh", "-c", "echo kept > /root/data/notes.txt")
	startedAt := ci.State.StartedAt

	// Another customer sees and touches nothing of it.
	bob := newUser(t, s.URL)
	bob.signUp("bob@other.example", "bob-password-12")
	for _, args := range [][]string{{"show", id}, {"stop", id}, {"start", id}, {"rm", id}} {
		out, errOut, err := bob.run("", args...)
		if err == nil || !strings.Contains(err.Error()+errOut, "not found") {
			t.Errorf("bob: gpurent %v: want a not-found error, got err=%v\n%s%s", args, err, out, errOut)
		}
	}
	// Bob's wallet is empty: the start gate refuses him.
	if out, errOut, err := bob.run("", "rent", "--gpu", "h100-80g-sxm", "--count", "1", "--image", image); err == nil ||
		!strings.Contains(err.Error()+errOut, "payment_required") {
		t.Errorf("bob rents with an empty wallet: %v\n%s%s", err, out, errOut)
	}
	if out := bob.must("ls", "-o", "json"); strings.Contains(out, id) {
		t.Errorf("bob's ls shows alice's instance: %s", out)
	}

	// Kill the agents and start them again: the container runs on, untouched.
	as.Stop()
	if st := dockertest.Inspect(t, cli, name).State; !st.Running || st.StartedAt != startedAt {
		t.Fatalf("stopping the agents touched the container: %+v", st)
	}
	if as, err = StartAgents(ctx, agents); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // a few heartbeats and a convergence
	if st := dockertest.Inspect(t, cli, name).State; !st.Running || st.StartedAt != startedAt {
		t.Fatalf("restarted agents restarted the container: %+v", st)
	}

	// Restart the control plane on the same database and address.
	cfg.Listen = strings.TrimPrefix(s.URL, "http://")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = StartServer(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if got := alice.instance("show", id); got.State != "running" {
		t.Errorf("after a control-plane restart: state %s", got.State)
	}
	time.Sleep(1500 * time.Millisecond)
	if st := dockertest.Inspect(t, cli, name).State; !st.Running || st.StartedAt != startedAt {
		t.Fatalf("a control-plane restart touched the container: %+v", st)
	}

	// Metering saw one run, still open, through both restarts.
	runsOf := func() []gpurent.UsageRun {
		runs, err := s.Store.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: id})
		if err != nil {
			t.Fatal(err)
		}
		return runs
	}
	eventually(t, "the run reported", func() bool { return len(runsOf()) == 1 })
	if runs := runsOf(); len(runs) != 1 || runs[0].EndedAt != nil || runs[0].GPUCount != 2 || runs[0].AccountID != in.AccountID {
		t.Fatalf("runs after the restarts: %+v", runs)
	}

	// Stop: GPUs go back to the pool, the container and volume stay.
	if got := alice.instance("stop", id, "--wait"); got.State != "stopped" || len(got.GPUs) != 0 {
		t.Fatalf("stop: %+v", got)
	}
	if st := dockertest.Inspect(t, cli, name).State; st.Running {
		t.Error("container still running after stop")
	}
	eventually(t, "GPUs released after stop", func() bool { return freeGPUs(t, alice, "h100-80g-sxm") == 16 })

	eventually(t, "the run's end reported", func() bool {
		runs := runsOf()
		return len(runs) == 1 && runs[0].EndedAt != nil && runs[0].EndReason == gpurent.RunEndReported
	})

	// Start: back on the same host, the data is there.
	got := alice.instance("start", id, "--wait")
	if got.State != "running" || got.HostID != in.HostID || len(got.GPUs) != 2 {
		t.Fatalf("start: %+v", got)
	}
	if out := dockertest.MustExec(t, cli, name, "cat", "/root/data/notes.txt"); strings.TrimSpace(out) != "kept" {
		t.Errorf("volume after stop/start: %q", out)
	}

	// Remove: container and volume go, the GPUs come back.
	if got := alice.instance("rm", id, "--wait", "--yes"); got.State != "deleted" {
		t.Fatalf("rm: %+v", got)
	}
	if _, err := cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{}); err == nil {
		t.Error("container still exists after rm")
	}
	if _, err := cli.VolumeInspect(ctx, got.Volume.ID, client.VolumeInspectOptions{}); err == nil {
		t.Error("volume still exists after rm")
	}
	if out := alice.must("ls"); strings.Contains(out, id) {
		t.Errorf("ls still lists the removed instance:\n%s", out)
	}
	eventually(t, "GPUs released after rm", func() bool { return freeGPUs(t, alice, "h100-80g-sxm") == 16 })
	eventually(t, "two runs, both ended and settled", func() bool {
		runs := runsOf()
		return len(runs) == 2 && runs[0].Settled && runs[1].Settled
	})
	// What the runs cost left the wallet: 2 x H100 for at least the 60 s
	// minimum of each run, debited exactly once.
	runs := runsOf()
	var debited int64
	for _, r := range runs {
		if r.DebitedFen <= 0 {
			t.Errorf("run %s debited %d fen", r.ID, r.DebitedFen)
		}
		debited += r.DebitedFen
	}
	acc, err := s.Store.AccountByEmail(ctx, "alice@lab.example")
	if err != nil {
		t.Fatal(err)
	}
	bal, err := s.Store.LedgerBalances(ctx, acc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if bal.CashFen != 100_000-debited {
		t.Errorf("alice's cash %d fen, want ¥1,000 − %d fen debited", bal.CashFen, debited)
	}
	var bill apiv1.Statement
	if err := json.Unmarshal([]byte(alice.must("bill", "-o", "json")), &bill); err != nil || len(bill.Lines) == 0 || bill.TotalFen <= 0 {
		t.Errorf("this month's statement: %+v %v", bill, err)
	}
	if out := alice.must("bill", "--csv"); !strings.HasPrefix(out, "month,instance_id,") || !strings.Contains(out, id) {
		t.Errorf("statement CSV:\n%s", out)
	}
	if out := alice.must("wallet", "history"); !strings.Contains(out, "debit") {
		t.Errorf("wallet history shows no usage debit:\n%s", out)
	}
}
