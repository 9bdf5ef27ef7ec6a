package app

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/transparency"
)

// TestTransparencyEndToEnd: a control plane with its schedule on and two
// agents of fake H100s (real Docker runtime, synthetic benchmark runs). One
// card is scripted to measure 85% of a healthy one. Onboarding benchmarks
// every idle card; the slow one FAILs, is re-run, and is delisted; the public
// report (page, JSON, CSV, CLI) shows it and why, with no UUID published;
// every other card stays listed and rentable. Then a customer verifies her
// instance's GPUs with the CLI and gets them judged against the fleet.
func TestTransparencyEndToEnd(t *testing.T) {
	image := dockertest.BusyboxImage(t)
	ctx := context.Background()
	dir := t.TempDir()
	cfg := ServerConfig{DSN: filepath.Join(dir, "gpurent.db"), Listen: "127.0.0.1:0", JoinToken: "join-transparency",
		BcryptCost: 4, PollWait: 5 * time.Second, BillingInterval: 300 * time.Millisecond, Logger: testLogger(),
		Certification: CertificationConfig{AcceptSynthetic: true, Interval: 200 * time.Millisecond}}
	s, err := StartServer(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	scope := "tr-" + strings.ToLower(dockertest.NewInstanceID()[2:8])
	as, err := StartAgents(ctx, AgentsConfig{InitBinary: dockertest.InitBinary(t), ServerURL: s.URL, Join: s, DataDir: filepath.Join(dir, "agents"),
		Hosts: []DemoHost{
			{Name: scope + "-a", Zone: "cd-tianfu-a", TypeID: "h100-80g-sxm", GPUs: 4, GroupSize: 4},
			{Name: scope + "-b", Zone: "cd-gaoxin-b", TypeID: "h100-80g-sxm", GPUs: 4, GroupSize: 4},
		},
		Catalog: c, Runtime: RuntimeDocker, HeartbeatInterval: 300 * time.Millisecond, RetryMax: time.Second,
		Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { as.Stop() }()
	s.Incidents.SetInjector(as)
	// Scripted before the agents have even registered, so the card is
	// slow in its very first run.
	slow, err := as.SlowDemoCard(ctx, 0.85)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := s.Auth.CreateAccount(ctx, "ops@tr.example", "Ops", "ops-password-12", "operator", 0); err != nil {
		t.Fatal(err)
	}
	ops := newUser(t, s.URL)
	if out, errOut, err := ops.run("ops-password-12\n", "login", "--email", "ops@tr.example", "--password-stdin"); err != nil {
		t.Fatalf("operator login: %v %s%s", err, out, errOut)
	}

	// Every card gets a certification; the slow one ends delisted.
	var certs []apiv1.GPUCert
	eventually(t, "every card certified and the slow one delisted", func() bool {
		if err := json.Unmarshal([]byte(ops.must("certify", "status", "-o", "json")), &certs); err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, c := range certs {
			switch {
			case c.GPU == slow && c.State == "delisted":
				done++
			case c.GPU != slow && c.State == "certified":
				done++
			}
		}
		return len(certs) == 8 && done == 8
	})
	// It was flagged, then re-run: its jobs say so.
	var jobs []apiv1.BenchJob
	if err := json.Unmarshal([]byte(ops.must("certify", "jobs", "--gpu", slow, "-o", "json")), &jobs); err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].Reason != "rerun" || jobs[1].Reason != "onboarding" || jobs[0].State != "done" {
		t.Fatalf("the slow card's jobs, newest first: %+v", jobs)
	}
	var provisional, confirmed bool
	for _, r := range jobs[1].Results {
		provisional = provisional || (r.GPU == slow && r.Outcome == "FAIL" && r.Provisional)
	}
	for _, r := range jobs[0].Results {
		confirmed = confirmed || (r.GPU == slow && r.Outcome == "FAIL" && !r.Provisional && r.FleetRatio < 0.9 && r.FleetRatio > 0.8)
	}
	if !provisional || !confirmed {
		t.Fatalf("want a provisional FAIL then a confirmed one:\nfirst %+v\nre-run %+v", jobs[1].Results, jobs[0].Results)
	}
	if out := ops.must("certify", "status"); !strings.Contains(out, "delisted") || !strings.Contains(out, "fleet median") {
		t.Errorf("certify status does not say why:\n%s", out)
	}
	// The incident service takes the card out: degraded, with the
	// benchmark as cause. It acts on the benchmark's fault event on its
	// own pass, a moment after the certification is written.
	eventually(t, "the delisted card degraded by the incident service", func() bool {
		var health apiv1.GPUHealthList
		if err := json.Unmarshal([]byte(ops.must("gpus", "--health", "-o", "json")), &health); err != nil {
			t.Fatal(err)
		}
		for _, g := range health.GPUs {
			if g.UUID == slow {
				t.Logf("delisted card's health: %s %q", g.Health, g.Reason)
				return g.Health == "degraded" && strings.Contains(g.Reason, "benchmark")
			}
		}
		t.Fatalf("the delisted card %s is not in the health list", slow)
		return false
	})

	// Anyone, without logging in, reads the report.
	resp, err := http.Get(s.URL + "/api/v1/transparency")
	if err != nil {
		t.Fatal(err)
	}
	var rep apiv1.Transparency
	err = json.NewDecoder(resp.Body).Decode(&rep)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("public report: %d %v", resp.StatusCode, err)
	}
	if len(rep.Types) != 1 || rep.Types[0].Certified != 7 || rep.Types[0].Delisted != 1 || !rep.Synthetic {
		t.Fatalf("report: %+v", rep.Types)
	}
	if len(rep.Delisted) != 1 || rep.Delisted[0].Hash != transparency.HashUUID(slow) || !strings.Contains(rep.Delisted[0].Reason, "fleet median") {
		t.Fatalf("delisted on the report: %+v", rep.Delisted)
	}
	for _, url := range []string{"/transparency?lang=en", "/transparency?lang=zh", "/api/v1/transparency.csv", "/api/v1/transparency"} {
		resp, err := http.Get(s.URL + url)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.Contains(string(body), slow) {
			t.Fatalf("%s: %d, or the UUID is published", url, resp.StatusCode)
		}
		if strings.HasSuffix(url, ".csv") {
			rows, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
			if err != nil || len(rows) < 9 {
				t.Fatalf("CSV: %d rows, %v", len(rows), err)
			}
		}
	}
	alice := newUser(t, s.URL)
	alice.signUp("alice@tr.example", "alice-password-1")
	if out := alice.must("transparency"); !strings.Contains(out, "7 certified") || !strings.Contains(out, "1 delisted") ||
		!strings.Contains(out, transparency.HashUUID(slow)) || !strings.Contains(out, "DEMO DATA") {
		t.Errorf("gpurent transparency:\n%s", out)
	}

	// The healthy fleet stays listed: 7 of 8 free and rentable.
	eventually(t, "seven H100s free", func() bool { return freeGPUs(t, alice, "h100-80g-sxm") == 7 })
	ops.must("credit", "alice@tr.example", "1000", "--reason", "transparency")
	in := alice.instance("rent", "--gpu", "h100-80g-sxm", "--count", "4", "--image", image, "--name", "bench", "--wait")
	defer dockertest.Cleanup(t, in.ID)
	for _, g := range in.GPUs {
		if g == slow {
			t.Fatalf("the delisted card was rented: %v", in.GPUs)
		}
	}

	// She verifies her GPUs: the suite on her instance, judged against the fleet.
	out := alice.must("verify", in.ID, "--wait", "--wait-timeout", "60s")
	if !strings.Contains(out, "PASS") || strings.Contains(out, "FAIL") || !strings.Contains(out, "gemm_bf16") {
		t.Fatalf("gpurent verify:\n%s", out)
	}
	var runs []apiv1.BenchJob
	if err := json.Unmarshal([]byte(alice.must("verify", in.ID, "--list", "-o", "json")), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("verify --list: %v %+v", err, runs)
	}
	if len(runs[0].GPUs) != 4 || runs[0].State != "done" {
		t.Fatalf("verify run: %+v", runs[0])
	}
	// A verify never changes a card's certification.
	if err := json.Unmarshal([]byte(ops.must("certify", "status", "-o", "json")), &certs); err != nil {
		t.Fatal(err)
	}
	for _, c := range certs {
		if c.GPU != slow && c.State != "certified" {
			t.Fatalf("after a verify: %+v", c)
		}
	}

	// The card is fixed and repaired: it is benchmarked before it is
	// rented again, passes, and is listed.
	hostOf := ""
	for _, c := range certs {
		if c.GPU == slow {
			hostOf = c.Host
		}
	}
	var hostID string
	hosts, err := s.Store.ListHosts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		if h.Name == hostOf {
			hostID = h.ID
		}
	}
	ops.must("fault", "inject", "--host", hostID, "--gpu", slow, "--kind", "slow", "--detail", "1")
	if out := ops.must("gpu", "repair", slow, "--note", "reseated"); !strings.Contains(out, "benchmarked before it is rented again") {
		t.Errorf("gpu repair:\n%s", out)
	}
	eventually(t, "the repaired card certified and listed again", func() bool {
		if err := json.Unmarshal([]byte(ops.must("certify", "status", "-o", "json")), &certs); err != nil {
			t.Fatal(err)
		}
		for _, c := range certs {
			if c.GPU == slow {
				return c.State == "certified"
			}
		}
		return false
	})
	if err := json.Unmarshal([]byte(ops.must("certify", "jobs", "--gpu", slow, "-o", "json")), &jobs); err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 3 || jobs[0].Reason != "relist" {
		t.Fatalf("the repaired card's jobs: %+v", jobs)
	}
	eventually(t, "four H100s free beside the rental", func() bool { return freeGPUs(t, alice, "h100-80g-sxm") == 4 })
}
