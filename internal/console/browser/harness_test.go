package browser

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/app"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/testtier"
)

// site is a control plane with its console and two agents of fake GPUs
// (the real Docker runtime), an operator and the busybox image.
type site struct {
	t      testing.TB
	s      *app.Server
	url    string
	agents *app.Agents
	image  string
	ops    *gpurent.Account
}

const (
	opsEmail    = "ops@console.example"
	opsPassword = "ops-password-12"
)

// startSite starts the site; hosts are "a" with 4 H100 and "b" with 4 A100
// (and more H100 when h100 > 4: a second H100 host).
func startSite(t testing.TB) *site {
	t.Helper()
	image := dockertest.BusyboxImage(t)
	dir := t.TempDir()
	cfg := app.ServerConfig{DSN: filepath.Join(dir, "gpurent.db"), Listen: "127.0.0.1:0",
		BcryptCost: 4, PollWait: 5 * time.Second, BillingInterval: 300 * time.Millisecond, OperationsInterval: 300 * time.Millisecond,
		SSHListen: "127.0.0.1:0", KeyDir: filepath.Join(dir, "keys"),
		Certification: app.CertificationConfig{AcceptSynthetic: true, Interval: 300 * time.Millisecond, MaxOpenJobs: 1}}
	s, err := app.StartServer(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	scope := "web-" + strings.ToLower(dockertest.NewInstanceID()[2:8])
	// Runs after the agents stopped: the instances the tests rented go.
	dockertest.CleanupScopes(t, scope+"-a", scope+"-b", scope+"-c")
	as, err := app.StartAgents(context.Background(), app.AgentsConfig{InitBinary: dockertest.InitBinary(t), ServerURL: s.URL, Join: s,
		DataDir: filepath.Join(dir, "agents"), Catalog: c, Runtime: app.RuntimeDocker,
		Hosts: []app.DemoHost{
			{Name: scope + "-a", Zone: "cd-tianfu-a", TypeID: "h100-80g-sxm", GPUs: 4, GroupSize: 4},
			{Name: scope + "-b", Zone: "cd-gaoxin-b", TypeID: "a100-80g-sxm", GPUs: 4, GroupSize: 4},
		},
		HeartbeatInterval: 300 * time.Millisecond, RetryMax: time.Second, HealthInterval: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Stop)
	s.Incidents.SetInjector(as)
	ops, err := s.Auth.CreateAccount(context.Background(), opsEmail, "Ops", opsPassword, gpurent.RoleOperator, 0)
	if err != nil {
		t.Fatal(err)
	}
	st := &site{t: t, s: s, url: s.URL, agents: as, image: image, ops: ops}
	st.waitHosts(2)
	st.waitCertified()
	return st
}

// waitCertified waits until the onboarding benchmarks have run on every
// GPU and released it, so that a test's rentals never meet a benchmark
// holding the GPUs they want.
func (st *site) waitCertified() {
	st.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		certs, err := st.s.Certification.Certs(context.Background(), st.ops)
		if err != nil {
			st.t.Fatal(err)
		}
		open, err := st.s.Store.ListBenchJobs(context.Background(), gpurent.BenchJobFilter{OpenOnly: true})
		if err != nil {
			st.t.Fatal(err)
		}
		done := len(certs) > 0 && len(open) == 0
		for _, c := range certs {
			done = done && c.State == string(gpurent.CertPassed)
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			st.t.Fatalf("gave up waiting for the onboarding benchmarks: %+v", certs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitHosts waits until n hosts have reported.
func (st *site) waitHosts(n int) {
	st.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		hosts, err := st.s.Store.ListHosts(context.Background())
		if err != nil {
			st.t.Fatal(err)
		}
		if len(hosts) >= n {
			return
		}
		if time.Now().After(deadline) {
			st.t.Fatalf("gave up waiting for %d hosts", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// chromium finds the browser the tests drive.
func chromium(t testing.TB) string {
	t.Helper()
	testtier.Require(t, "Chromium")
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("Chromium is required for the console's browser tests: `make test` installs it (Debian: apt-get install chromium)")
	return ""
}

// browser is a fresh headless Chromium (its own profile, so its own
// cookies) for one user; actions on it time out after five minutes, a
// bound on a hung browser far above what a loaded machine needs.
func browser(t testing.TB) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	// The first call starts the browser: never under a timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	tctx, cancelT := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(cancelT)
	return tctx
}

// run runs browser actions, failing the test with what was being done.
func run(t testing.TB, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		if len(body) > 2000 {
			body = body[:2000]
		}
		t.Fatalf("%s: %v\nat %s\n%s", what, err, loc, body)
	}
}

// text is the visible text of the first element matching the CSS selector.
func text(t testing.TB, ctx context.Context, sel string) string {
	t.Helper()
	run(t, ctx, "wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("read %s: %v", sel, err)
	}
	return s
}

// nav loads url in the tab. A live page reloads itself when what it shows
// changes; a load that such a reload aborts (net::ERR_ABORTED) is simply
// made again, as a user's click would be.
func nav(url string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		var err error
		for range 5 {
			if _, err = chromedp.Navigate(url)(ctx, t); err == nil || !strings.Contains(err.Error(), "ERR_ABORTED") {
				return chromedp.Void{}, err
			}
		}
		return chromedp.Void{}, err
	}
}

// shot saves a full-page screenshot as name.png in $GPURENT_SCREENSHOTS,
// when set.
func shot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("GPURENT_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(80))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".jpg"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// login signs in through the form.
func login(t testing.TB, ctx context.Context, base, email, password, lang string) {
	t.Helper()
	run(t, ctx, "sign in as "+email,
		nav(base+"/login?lang="+lang),
		chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.SendKeys(chromedp.CSS(`#login-form input[name=email]`), email),
		chromedp.SendKeys(chromedp.CSS(`#login-form input[name=password]`), password),
		chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitNotPresent(chromedp.CSS("#login-form")),
	)
}

// signup creates an account through the form.
func signup(t testing.TB, ctx context.Context, base, email, name, password, lang string) {
	t.Helper()
	run(t, ctx, "sign up as "+email,
		nav(base+"/signup?lang="+lang),
		chromedp.WaitVisible(chromedp.CSS("#signup-form")),
		chromedp.SendKeys(chromedp.CSS(`#signup-form input[name=email]`), email),
		chromedp.SendKeys(chromedp.CSS(`#signup-form input[name=name]`), name),
		chromedp.SendKeys(chromedp.CSS(`#signup-form input[name=password]`), password),
		chromedp.SendKeys(chromedp.CSS(`#signup-form input[name=password2]`), password),
		chromedp.Click(chromedp.CSS("#signup-submit")),
		chromedp.WaitNotPresent(chromedp.CSS("#signup-form")),
	)
}
