package cli_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/apiv1"
)

func TestLoginSavesConfigWithMode0600(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	r := h.run("s3cret pass\n", "login", "--server", f.srv.URL+"/", "--email", fxAccount.Email, "--password-stdin")
	if r.code != 0 {
		t.Fatalf("login: exit %d: %s", r.code, r.stderr)
	}
	contains(t, "login output", r.stdout, "Logged in to "+f.srv.URL+" as li@example.com")

	reqs := f.requests()
	var lr apiv1.LoginRequest
	if err := json.Unmarshal(reqs[len(reqs)-1].Body, &lr); err != nil || lr.Password != "s3cret pass" {
		t.Fatalf("login request %s (%v): want the password without its newline", reqs[len(reqs)-1].Body, err)
	}

	path := filepath.Join(h.dir, "config.json")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := st.Mode().Perm(); m != 0o600 {
		t.Fatalf("config.json mode %04o, want 0600", m)
	}
	dst, err := os.Stat(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := dst.Mode().Perm(); m != 0o700 {
		t.Fatalf("config dir mode %04o, want 0700", m)
	}
	var saved map[string]string
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &saved); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"server": f.srv.URL, "token": "tok-session"}; !reflect.DeepEqual(saved, want) {
		t.Fatalf("saved %v, want %v", saved, want)
	}

	// whoami uses the saved server and token.
	out := h.ok("whoami")
	contains(t, "whoami", out, "li@example.com", "Li Wei", "customer", "¥1,234,567.89", f.srv.URL)
	last := f.requests()[len(f.requests())-1]
	if last.Path != "/api/v1/me" || last.Auth != "Bearer tok-session" {
		t.Fatalf("whoami sent %s with %q", last.Path, last.Auth)
	}
}

func TestLoginPromptsForMissingAnswers(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	h.vars["GPURENT_SERVER"] = f.srv.URL
	r := h.run("li@example.com\ns3cret pass\n", "login")
	if r.code != 0 {
		t.Fatalf("login: exit %d: %s", r.code, r.stderr)
	}
	contains(t, "prompts on stderr", r.stderr, "Email: ", "Password: ")
	if strings.Contains(r.stdout, "Email:") {
		t.Fatalf("prompts went to stdout: %q", r.stdout)
	}
	if h.ok("whoami") == "" {
		t.Fatal("whoami printed nothing")
	}
}

func TestLoginWrongPassword(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	r := h.run("wrong\n", "login", "--server", f.srv.URL, "--email", fxAccount.Email, "--password-stdin")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1", r.code)
	}
	contains(t, "stderr", r.stderr, "error: wrong email or password (unauthorized)")
	if _, err := os.Stat(filepath.Join(h.dir, "config.json")); !os.IsNotExist(err) {
		t.Fatalf("a failed login wrote the config (%v)", err)
	}
}

func TestLoginPasswordStdinNeedsEmail(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	r := h.run("pw\n", "login", "--server", f.srv.URL, "--password-stdin")
	if r.code != 2 {
		t.Fatalf("exit %d, want 2 (usage)", r.code)
	}
	contains(t, "stderr", r.stderr, "--password-stdin needs --email")
}

func TestLoginWithAPIToken(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	out := h.ok("login", "--server", f.srv.URL, "--token", "tok-api")
	contains(t, "login", out, "li@example.com")
	b, _ := os.ReadFile(filepath.Join(h.dir, "config.json"))
	contains(t, "config", string(b), `"token": "tok-api"`)

	r := h.run("", "login", "--server", f.srv.URL, "--token", "bogus")
	if r.code != 1 {
		t.Fatalf("bad token: exit %d, want 1", r.code)
	}
	b, _ = os.ReadFile(filepath.Join(h.dir, "config.json"))
	contains(t, "config after a refused token", string(b), `"token": "tok-api"`)
}

func TestLogoutRevokesAndForgets(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	h.login(f)
	out := h.ok("logout")
	contains(t, "logout", out, "Logged out of "+f.srv.URL)
	reqs := f.requests()
	if last := reqs[len(reqs)-1]; last.Path != "/api/v1/auth/logout" || last.Auth != "Bearer tok-session" {
		t.Fatalf("logout sent %s %q", last.Path, last.Auth)
	}
	b, _ := os.ReadFile(filepath.Join(h.dir, "config.json"))
	if strings.Contains(string(b), "tok-session") || !strings.Contains(string(b), f.srv.URL) {
		t.Fatalf("config after logout: %s (want the server kept, the token gone)", b)
	}
	r := h.run("", "whoami")
	if r.code != 1 {
		t.Fatalf("whoami after logout: exit %d", r.code)
	}
	contains(t, "stderr", r.stderr, "(unauthorized)", "gpurent login")
	contains(t, "second logout", h.ok("logout"), "Not logged in")
}

func TestServerAndTokenPrecedence(t *testing.T) {
	cfgSrv, envSrv, flagSrv := newFakeAPI(t), newFakeAPI(t), newFakeAPI(t)
	h := newHarness(t)
	h.login(cfgSrv) // config: cfgSrv with tok-session

	lastReq := func(f *fakeAPI) got {
		t.Helper()
		reqs := f.requests()
		if len(reqs) == 0 {
			t.Fatalf("server got no request")
		}
		return reqs[len(reqs)-1]
	}

	// Config file alone.
	h.ok("zones")
	if r := lastReq(cfgSrv); r.Auth != "Bearer tok-session" {
		t.Fatalf("config: token %q", r.Auth)
	}

	// Environment beats the config; the saved token is not sent to another server.
	h.vars["GPURENT_SERVER"] = envSrv.URL()
	r := h.run("", "zones")
	if r.code != 1 {
		t.Fatalf("env server without a token: exit %d", r.code)
	}
	if a := lastReq(envSrv).Auth; a != "" {
		t.Fatalf("the saved token leaked to another server: %q", a)
	}
	h.vars["GPURENT_TOKEN"] = "tok-env"
	h.ok("zones")
	if a := lastReq(envSrv).Auth; a != "Bearer tok-env" {
		t.Fatalf("env token: %q", a)
	}

	// Flags beat the environment.
	n := len(envSrv.requests())
	h.ok("zones", "--server", flagSrv.URL(), "--token", "tok-flag")
	if a := lastReq(flagSrv).Auth; a != "Bearer tok-flag" {
		t.Fatalf("flag token: %q", a)
	}
	if len(envSrv.requests()) != n {
		t.Fatalf("the env server was called although --server was given")
	}

	// The env token goes with a flag server too (the user chose both).
	h.ok("zones", "--server", flagSrv.URL())
	if a := lastReq(flagSrv).Auth; a != "Bearer tok-env" {
		t.Fatalf("env token with flag server: %q", a)
	}

	// The saved server with its saved token again once the env is gone.
	delete(h.vars, "GPURENT_SERVER")
	delete(h.vars, "GPURENT_TOKEN")
	h.ok("zones", "--server", cfgSrv.URL()+"/")
	if a := lastReq(cfgSrv).Auth; a != "Bearer tok-session" {
		t.Fatalf("saved token with its own server given by flag: %q", a)
	}
}

func TestInvalidServerURL(t *testing.T) {
	h := newHarness(t)
	r := h.run("", "zones", "--server", "ftp://x")
	if r.code != 1 {
		t.Fatalf("exit %d", r.code)
	}
	contains(t, "stderr", r.stderr, `invalid server URL "ftp://x"`, "(invalid)")
}

func TestUnreachableServerIsNamed(t *testing.T) {
	f := newFakeAPI(t)
	url := f.URL()
	f.srv.Close()
	h := newHarness(t)
	r := h.run("", "ls", "--server", url, "--token", "tok-flag")
	if r.code != 1 {
		t.Fatalf("exit %d", r.code)
	}
	contains(t, "stderr", r.stderr, "error: cannot reach gpurent server "+url+": ", "(unavailable)")
}

func TestLooseConfigModeWarns(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	h.login(f)
	if err := os.Chmod(filepath.Join(h.dir, "config.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.run("", "whoami")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	contains(t, "stderr", r.stderr, "readable by others", "chmod 600")
}

func TestBrokenConfigIsReported(t *testing.T) {
	h := newHarness(t)
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.dir, "config.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := h.run("", "ls")
	if r.code != 1 {
		t.Fatalf("exit %d", r.code)
	}
	contains(t, "stderr", r.stderr, "config.json is not valid JSON", "(invalid)")
}

// TestTablesAndJSON runs every read command in both output formats.
func TestTablesAndJSON(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	h.login(f)

	host1 := fxHosts.Hosts[0]
	host1.State = "cordoned"
	host2 := fxHosts.Hosts[1]
	host2.State = "ready"
	newInst := apiv1.Instance{ID: "ins-new", Name: "job", State: "pending", Image: "img:1",
		GPUType: "h100-80g-sxm", GPUCount: 2, Plan: "hourly", CreatedAt: t0, UpdatedAt: t0}
	stopped := fxRunning
	stopped.State, stopped.Events = "stopping", nil
	started := fxRunning
	started.State, started.Events = "pending", nil
	deleting := fxRunning
	deleting.State, deleting.Events = "deleting", nil

	cases := []struct {
		name  string
		args  []string
		table []string
		json  any // decoded -o json output must equal this
	}{
		{"whoami", []string{"whoami"}, []string{"acc-1", "li@example.com", "¥1,234,567.89"}, fxAccount},
		{"gpus", []string{"gpus"}, []string{
			"TYPE", "MEMORY", "BANDWIDTH", "BF16 TFLOPS", "FP8 TFLOPS", "NVLINK", "P2P", "FREE/TOTAL",
			"HOURLY", "DAILY", "WEEKLY", "MONTHLY", "FREE BY ZONE",
			"h100-80g-sxm", "80 GB", "3350 GB/s", "989.4", "1978.9", "900 GB/s", "yes", "5/16",
			"¥19.99", "¥430.00", "¥2,800.00", "¥11,000.00", "cd-tianfu-a 3/8 (≤3 per host), sh-lingang-b 2/8 (≤2 per host)",
			"rtx4090-24g", "none", "no", "0/8", "¥1.99",
		}, fxGPUTypes},
		{"zones", []string{"zones"}, []string{"ZONE", "cd-tianfu-a", "Chengdu Tianfu Software Park A", "chengdu",
			"https://cd-a.example.com/probe", "sh-lingang-b"}, fxZones},
		{"ls", []string{"ls"}, []string{"ID", "STATE", "ins-1", "train", "running", "2 × h100-80g-sxm", "gpu-01",
			"2025-03-01 08:00:00 UTC"}, apiv1.InstanceList{Instances: []apiv1.Instance{fxRunning}}},
		{"ls-all", []string{"ls", "--all"}, []string{"ins-1", "ins-2", "failed"},
			apiv1.InstanceList{Instances: []apiv1.Instance{fxRunning, fxDemo}}},
		{"show", []string{"show", "ins-1"}, []string{
			"State:", "running", "GPUs:", "2 × h100-80g-sxm", "GPU-aaaa", "GPU-bbbb",
			"Host:", "gpu-01 (host-1)", "Runtime:", "docker", "CPU:", "32 cores", "Memory:", "256 GiB",
			"vol-1, 100 GiB, mounted at /data", "Events:", "created", "requested 2 × h100-80g-sxm",
			"2025-03-01 08:00:30 UTC", "container started",
		}, fxRunning},
		{"show-demo", []string{"show", "ins-2"}, []string{
			"failed (image not found)", "process (DEMO ONLY, no isolation)", "WARNING", "demo-only",
		}, fxDemo},
		{"rent", []string{"rent", "--gpu", "h100-80g-sxm", "--count", "2", "--image", "img:1", "--name", "job"},
			[]string{"ins-new", "pending", "2 × h100-80g-sxm"}, newInst},
		{"stop", []string{"stop", "ins-1"}, []string{"ID", "NAME", "STATE", "ins-1", "train", "stopping"}, stopped},
		{"start", []string{"start", "ins-1"}, []string{"ins-1", "pending"}, started},
		{"rm", []string{"rm", "ins-1", "--yes"}, []string{"ins-1", "deleting"}, deleting},
		{"hosts", []string{"hosts"}, []string{
			"ID", "ZONE", "STATE", "RUNTIME", "GPUS FREE/TOTAL", "LAST SEEN",
			"host-1", "gpu-01", "ready", "docker", "1/2", "42s ago",
			"host-2", "cordoned", "process (demo)", "never", "for demos only",
		}, fxHosts},
		{"cordon", []string{"cordon", "host-1"}, []string{"Host gpu-01 (host-1) is cordoned."}, host1},
		{"zone-probe", []string{"zones", "set-probe", "cd-tianfu-a", "https://probe.cd-a.example/probe"},
			[]string{"Zone cd-tianfu-a: browsers time https://probe.cd-a.example/probe."},
			apiv1.Zone{ID: "cd-tianfu-a", Name: "Chengdu Tianfu Software Park A", Region: "chengdu", ProbeURL: "https://probe.cd-a.example/probe"}},
		{"zone-probe-clear", []string{"zones", "set-probe", "cd-tianfu-a", "--clear"},
			[]string{"Zone cd-tianfu-a has no probe: its latency test times the control plane."},
			apiv1.Zone{ID: "cd-tianfu-a", Name: "Chengdu Tianfu Software Park A", Region: "chengdu"}},
		{"uncordon", []string{"uncordon", "host-2"}, []string{"Host demo-01 (host-2) is ready."}, host2},
		{"token", []string{"token", "create", "ci"}, []string{"ID:", "tok-9", "Name:", "ci", "Token:", "gpr_secret"},
			apiv1.Token{Token: "gpr_secret", ID: "tok-9", Name: "ci", Kind: "api", CreatedAt: t0}},
		{"register", []string{"register", "--email", "new@example.com", "--name", "New", "--password-stdin"},
			[]string{"Registered new@example.com (acc-1)"},
			apiv1.Account{ID: "acc-1", Email: "new@example.com", Name: "New", Role: "customer", BalanceFen: 123456789, CreatedAt: t0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.run("pw\n", tc.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			contains(t, "table", r.stdout, tc.table...)

			r = h.run("pw\n", append(tc.args, "-o", "json")...)
			if r.code != 0 {
				t.Fatalf("-o json: exit %d: %s", r.code, r.stderr)
			}
			// Decode into the expected value's type and compare by
			// re-encoding both, field for field.
			ptr := reflect.New(reflect.TypeOf(tc.json))
			dec := json.NewDecoder(strings.NewReader(r.stdout))
			dec.DisallowUnknownFields()
			if err := dec.Decode(ptr.Interface()); err != nil {
				t.Fatalf("-o json output is not the API's JSON: %v\n%s", err, r.stdout)
			}
			if dec.More() {
				t.Fatalf("-o json printed more than one document:\n%s", r.stdout)
			}
			gotJSON, _ := json.Marshal(ptr.Elem().Interface())
			wantJSON, _ := json.Marshal(tc.json)
			if string(gotJSON) != string(wantJSON) {
				t.Fatalf("-o json:\n got %s\nwant %s", gotJSON, wantJSON)
			}
		})
	}
}

func TestHostsVerboseListsGPUs(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	h.login(f)
	out := h.ok("hosts", "-v")
	contains(t, "hosts -v", out, "HOST", "INDEX", "GPU", "HEALTH", "TOPOLOGY", "HOLDER",
		"GPU-aaaa", "healthy", "nvl0", "ins-1", "GPU-cccc", "failed")
	if strings.Contains(h.ok("hosts"), "GPU-aaaa") {
		t.Fatal("hosts without -v lists GPUs")
	}
}

func TestUnknownOutputFormat(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	h.login(f)
	r := h.run("", "ls", "-o", "yaml")
	if r.code != 1 {
		t.Fatalf("exit %d", r.code)
	}
	contains(t, "stderr", r.stderr, `unknown output format "yaml"`)
}

func TestProblemAnswerGoesToStderr(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	h.login(f)
	r := h.run("", "show", "nope")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1", r.code)
	}
	if r.stdout != "" {
		t.Fatalf("stdout %q, want nothing", r.stdout)
	}
	if want := "error: instance nope not found (not_found)\n"; r.stderr != want {
		t.Fatalf("stderr %q, want %q", r.stderr, want)
	}

	r = h.run("", "register", "--email", "taken@example.com", "--name", "X", "--password-stdin")
	// No stdin: the password is empty, refused before any request.
	if r.code != 1 {
		t.Fatalf("exit %d", r.code)
	}
	contains(t, "stderr", r.stderr, "password must not be empty")
	r = h.run("pw", "register", "--email", "taken@example.com", "--name", "X", "--password-stdin")
	if r.code != 1 {
		t.Fatalf("exit %d", r.code)
	}
	contains(t, "stderr", r.stderr, "error: an account with this email exists (conflict)")
}

func TestUnauthorizedHintsLogin(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	r := h.run("", "ls", "--server", f.URL())
	if r.code != 1 {
		t.Fatalf("exit %d", r.code)
	}
	contains(t, "stderr", r.stderr, "error: missing or invalid token (unauthorized)", "hint: run `gpurent login`")
}

func TestUsageErrorsExit2(t *testing.T) {
	h := newHarness(t)
	for _, args := range [][]string{
		{"ls", "--bogus"},
		{"show"},
		{"cordon"},
		{"zones", "set-probe", "cd-tianfu-a"},
		{"zones", "set-probe", "cd-tianfu-a", "https://p.example/", "--clear"},
		{"zones", "set-probe", "cd-tianfu-a", ""},
		{"token", "create"},
		{"token", "frobnicate"},
		{"frobnicate"},
		{"rent", "--gpu", "h100-80g-sxm"},
		{"whoami", "extra"},
	} {
		r := h.run("", args...)
		if r.code != 2 {
			t.Errorf("gpurent %v: exit %d, want 2\n%s", args, r.code, r.stderr)
			continue
		}
		contains(t, "stderr", r.stderr, "error: ", "usage: ")
	}
	if r := h.run(""); r.code != 0 || !strings.Contains(r.stdout, "rent") {
		t.Errorf("gpurent alone: exit %d, want help listing the commands:\n%s", r.code, r.stdout)
	}
}

func TestRentSendsIdempotencyKeyAndRetriesWithIt(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	h.login(f)
	creates := func() []got {
		var out []got
		for _, r := range f.requests() {
			if r.Method == "POST" && r.Path == "/api/v1/instances" {
				out = append(out, r)
			}
		}
		return out
	}

	h.ok("rent", "--gpu", "h100-80g-sxm", "--image", "img", "--idempotency-key", "job-42")
	if c := creates(); len(c) != 1 || c[0].Key != "job-42" {
		t.Fatalf("creates %+v, want one with key job-42", c)
	}
	var req apiv1.CreateInstanceRequest
	_ = json.Unmarshal(creates()[0].Body, &req)
	if req.GPUType != "h100-80g-sxm" || req.GPUCount != 1 || req.Image != "img" {
		t.Fatalf("request %+v", req)
	}

	// No key given: a random one, reused on the retry after a dropped
	// connection. A fresh transport, so the first attempt opens a new
	// connection and net/http itself does not retry it.
	h.hc = &http.Client{Transport: &http.Transport{}}
	f.mu.Lock()
	f.dropCreates = 1
	f.mu.Unlock()
	out := h.ok("rent", "--gpu", "h100-80g-sxm", "--image", "img")
	contains(t, "rent", out, "ins-new")
	c := creates()[1:]
	if len(c) != 2 {
		t.Fatalf("%d create attempts, want 2", len(c))
	}
	if c[0].Key == "" || c[0].Key != c[1].Key || c[0].Key == "job-42" {
		t.Fatalf("attempt keys %q and %q: want one fresh key reused", c[0].Key, c[1].Key)
	}
}

func TestRentWait(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	h.login(f)
	f.mu.Lock()
	f.states["ins-new"] = []string{"pending", "provisioning", "busy", "busy", "provisioning", "running"}
	f.mu.Unlock()
	r := h.run("", "rent", "--gpu", "h100-80g-sxm", "--count", "2", "--image", "img", "--wait")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	contains(t, "rent --wait", r.stdout, "ins-new", "running", "GPU-aaaa", "gpu-01 (host-1)")
	contains(t, "progress", r.stderr, "ins-new: provisioning", "ins-new: running",
		"warning: database is busy (unavailable); still trying")

	f.mu.Lock()
	f.states["ins-new"] = []string{"provisioning", "failed"}
	f.mu.Unlock()
	r = h.run("", "rent", "--gpu", "h100-80g-sxm", "--image", "img", "--wait")
	if r.code != 1 {
		t.Fatalf("failed instance: exit %d", r.code)
	}
	contains(t, "stderr", r.stderr, "instance ins-new is failed, not running: no GPU free in zone (conflict)")
}

func TestWaitGivesUp(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	h.login(f)
	f.mu.Lock()
	f.states["ins-1"] = []string{"stopping"}
	f.mu.Unlock()
	r := h.run("", "stop", "ins-1", "--wait", "--wait-timeout", "20ms")
	if r.code != 1 {
		t.Fatalf("exit %d", r.code)
	}
	contains(t, "stderr", r.stderr, "gave up waiting for instance ins-1 after 20ms (state: stopping)")
}

func TestActionsOnSeveralIDs(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	h.login(f)
	f.mu.Lock()
	f.states["ins-1"] = []string{"deleting", "deleted"}
	f.states["ins-2"] = []string{"gone"}
	f.mu.Unlock()
	r := h.run("", "rm", "ins-1", "nope", "ins-2", "--wait", "--yes")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1", r.code)
	}
	contains(t, "stdout", r.stdout, "ins-1", "deleted", "ins-2")
	if strings.Contains(r.stdout, "nope") {
		t.Fatalf("stdout lists the failed id:\n%s", r.stdout)
	}
	contains(t, "stderr", r.stderr, "error: nope: instance nope not found (not_found)",
		"error: 1 of 3 instances could not be deleted (not_found)")
	var deletes int
	for _, q := range f.requests() {
		if q.Method == "DELETE" {
			deletes++
		}
	}
	if deletes != 3 {
		t.Fatalf("%d DELETE requests, want 3 (one failure must not stop the rest)", deletes)
	}

	// -o json: one document per instance that answered.
	r = h.run("", "stop", "ins-1", "ins-2", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	var ids []string
	for dec.More() {
		var in apiv1.Instance
		if err := dec.Decode(&in); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, in.ID)
	}
	if !reflect.DeepEqual(ids, []string{"ins-1", "ins-2"}) {
		t.Fatalf("json ids %v", ids)
	}
}

func TestRmWaitTreatsNotFoundAsDeleted(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	h.login(f)
	// The server may purge a deleted instance: GET answers 404.
	f.mu.Lock()
	f.states["ins-1"] = []string{"deleting", "gone"}
	f.mu.Unlock()
	r := h.run("", "rm", "ins-1", "--wait", "-y")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	contains(t, "rm --wait", r.stdout, "ins-1", "deleted")
}
