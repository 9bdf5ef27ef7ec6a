package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/cli"
)

// lastBody is the body of the last request with method and path.
func (f *fakeAPI) lastBody(t *testing.T, method, path string) []byte {
	t.Helper()
	reqs := f.requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Method == method && reqs[i].Path == path {
			return reqs[i].Body
		}
	}
	t.Fatalf("no %s %s among %d requests", method, path, len(reqs))
	return nil
}

// TestRentCmdFlag: --cmd sends startup_command, --cmd ” sends "" (none),
// and leaving it out sends nothing (the image's own).
func TestRentCmdFlag(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	h.login(f)
	for _, c := range []struct {
		args []string
		want *string
	}{
		{nil, nil},
		{[]string{"--cmd", ""}, ptr("")},
		{[]string{"--cmd", "python train.py && sleep 1"}, ptr("python train.py && sleep 1")},
	} {
		h.ok(append([]string{"rent", "--gpu", "h100-80g-sxm", "--image", "ubuntu:24.04"}, c.args...)...)
		body := f.lastBody(t, "POST", "/api/v1/instances")
		var req map[string]any
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		v, has := req["startup_command"]
		switch {
		case c.want == nil && has:
			t.Errorf("%v sent startup_command %v, want it left out", c.args, v)
		case c.want != nil && (!has || v != *c.want):
			t.Errorf("%v sent %s, want startup_command %q", c.args, body, *c.want)
		}
	}
}

// TestSetCmd: set-cmd sends the line, ” or image_default, says when it
// applies, and refuses ambiguous use.
func TestSetCmd(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	h.login(f)
	out := h.ok("set-cmd", "ins-1", "jupyter lab")
	contains(t, "set-cmd", out, "ins-1", "next start")
	var req apiv1.SetStartupRequest
	_ = json.Unmarshal(f.lastBody(t, "PUT", "/api/v1/instances/ins-1/startup"), &req)
	if req.StartupCommand == nil || *req.StartupCommand != "jupyter lab" || req.ImageDefault {
		t.Errorf("sent %+v", req)
	}
	h.ok("set-cmd", "ins-1", "")
	req = apiv1.SetStartupRequest{}
	_ = json.Unmarshal(f.lastBody(t, "PUT", "/api/v1/instances/ins-1/startup"), &req)
	if req.StartupCommand == nil || *req.StartupCommand != "" {
		t.Errorf("'' sent %+v", req)
	}
	h.ok("set-cmd", "ins-1", "--image-default")
	req = apiv1.SetStartupRequest{}
	_ = json.Unmarshal(f.lastBody(t, "PUT", "/api/v1/instances/ins-1/startup"), &req)
	if req.StartupCommand != nil || !req.ImageDefault {
		t.Errorf("--image-default sent %+v", req)
	}
	for _, args := range [][]string{{"set-cmd", "ins-1"}, {"set-cmd", "ins-1", "x", "--image-default"}} {
		if r := h.run("", args...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage): %s", args, r.code, r.stderr)
		}
	}
	if r := h.run("", "set-cmd", "nope", "x"); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("unknown instance: %d %s", r.code, r.stderr)
	}
}

// TestLogsCmd: logs prints the stream and passes -f, --since and --tail;
// a refusal is a clear error.
func TestLogsCmd(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	h.login(f)
	out := h.ok("logs", "ins-1", "-f", "--since", "10m", "--tail", "50")
	if out != "epoch 1\nepoch 2\n" {
		t.Errorf("logs printed %q", out)
	}
	reqs := f.requests()
	last := reqs[len(reqs)-1]
	if last.Path != "/api/v1/instances/ins-1/logs" || !strings.Contains(last.Query, "follow=true") ||
		!strings.Contains(last.Query, "since=10m") || !strings.Contains(last.Query, "tail=50") {
		t.Errorf("asked %s?%s", last.Path, last.Query)
	}
	r := h.run("", "logs", "ins-2")
	if r.code != 1 || !strings.Contains(r.stderr, "while it runs") {
		t.Errorf("logs of a failed instance: %d %q", r.code, r.stderr)
	}
	if r := h.run("", "logs", "ins-1", "--tail", "-3"); r.code != 2 {
		t.Errorf("--tail -3: exit %d", r.code)
	}
}

// TestShowStartup: show says the startup command and how it stands.
func TestShowStartup(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	h.login(f)
	out := h.ok("show", "ins-2")
	contains(t, "show of the image default", out, "Startup command", "the image's own entrypoint and command")
	h.ok("set-cmd", "ins-1", "")
	// The fake keeps no state: check the view of a status directly.
	exited := t0.Add(3 * time.Minute)
	f.mu.Lock()
	f.override = &apiv1.Instance{ID: "ins-9", State: "running", Image: "ubuntu", GPUType: "h100-80g-sxm", GPUCount: 1,
		StartupCommand: ptr("exit 1"), Startup: &apiv1.StartupStatus{State: "exited", ExitCode: ptr(1), ExitedAt: &exited,
			Summary: "exited 1 at 2025-03-01 08:03:00 UTC (the instance keeps running)"}}
	f.mu.Unlock()
	out = h.ok("show", "ins-9")
	contains(t, "show of an exit", out, "Startup command", "exit 1", "exited 1 at 2025-03-01 08:03:00 UTC (the instance keeps running)")
}

// TestRmRefusesWithoutTerminal: rm of an instance with a data volume,
// stdin not a terminal, refuses without --yes and deletes nothing.
func TestRmRefusesWithoutTerminal(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	h.login(f)
	r := h.run("y\n", "rm", "ins-1")
	if r.code != 2 || !strings.Contains(r.stderr, "not a terminal") || !strings.Contains(r.stderr, "--yes") ||
		!strings.Contains(r.stderr, "vol-1") {
		t.Fatalf("rm without a terminal: exit %d: %s", r.code, r.stderr)
	}
	for _, q := range f.requests() {
		if q.Method == "DELETE" {
			t.Fatal("rm deleted without confirmation")
		}
	}
	// No volume left (a failed instance without one): nothing to confirm.
	if r := h.run("", "rm", "ins-2"); r.code != 0 {
		t.Errorf("rm of an instance without a volume: exit %d: %s", r.code, r.stderr)
	}
	h.ok("rm", "ins-1", "--yes")
}

// TestRmAsksOnTerminal: on a terminal rm asks; n keeps the instance, the
// instance id or y deletes it.
func TestRmAsksOnTerminal(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	h.login(f)
	deletes := func() int {
		n := 0
		for _, q := range f.requests() {
			if q.Method == "DELETE" {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		answer string
		code   int
		delete bool
	}{{"n\n", 1, false}, {"\n", 1, false}, {"ins-2\n", 1, false}, {"ins-1\n", 0, true}, {"y\n", 0, true}} {
		master, slave := openPTY(t)
		var stdout, stderr bytes.Buffer
		root := cli.NewRootWith(h.env())
		root.SetIn(slave)
		root.SetOut(&stdout)
		root.SetErr(&stderr)
		before := deletes()
		if _, err := master.Write([]byte(c.answer)); err != nil { // typed ahead: the terminal holds it
			t.Fatal(err)
		}
		code := cli.Execute(context.Background(), root, []string{"rm", "ins-1"})
		if code != c.code {
			t.Errorf("answer %q: exit %d, want %d: %s", c.answer, code, c.code, stderr.String())
		}
		if !strings.Contains(stderr.String(), "Type the instance ID or y to confirm") {
			t.Errorf("answer %q: no prompt: %s", c.answer, stderr.String())
		}
		if got := deletes() > before; got != c.delete {
			t.Errorf("answer %q: deleted %v, want %v", c.answer, got, c.delete)
		}
	}
}
