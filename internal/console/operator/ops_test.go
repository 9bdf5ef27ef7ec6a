package operator

import (
	"fmt"
	"io/fs"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/rating"
)

func TestOpsParseYuan(t *testing.T) {
	const max = 1_000_000_000
	for _, c := range []struct {
		in      string
		fen     int64
		problem string
	}{
		{"12", 1200, ""}, {"12.3", 1230, ""}, {"12.34", 1234, ""}, {" 1,234.56 ", 123456, ""}, {"¥8", 800, ""},
		{"￥0.01", 1, ""}, {".5", 50, ""}, {"5.", 500, ""}, {"+3", 300, ""}, {"0", 0, ""}, {"10000000", max, ""},
		{"", 0, opsProblemRequired}, {"  ", 0, opsProblemRequired}, {"¥", 0, opsProblemRequired},
		{"-1", 0, opsProblemNegative}, {"-0.01", 0, opsProblemNegative},
		{"1.234", 0, opsProblemFormat}, {"abc", 0, opsProblemFormat}, {"1e3", 0, opsProblemFormat}, {".", 0, opsProblemFormat},
		{"1.2.3", 0, opsProblemFormat}, {"１２", 0, opsProblemFormat}, {"10000000.01", 0, opsProblemRange},
		{"9999999999999999999999", 0, opsProblemRange},
	} {
		fen, problem := opsParseYuan(c.in, max)
		if fen != c.fen || problem != c.problem {
			t.Errorf("opsParseYuan(%q) = %d, %q; want %d, %q", c.in, fen, problem, c.fen, c.problem)
		}
	}
}

func TestOpsYuanValue(t *testing.T) {
	for fen, want := range map[int64]string{0: "0.00", 5: "0.05", 700: "7.00", 123456: "1234.56", -250: "-2.50"} {
		if got := money.Value(fen); got != want {
			t.Errorf("money.Value(%d) = %q, want %q", fen, got, want)
		}
		if fen >= 0 {
			if back, problem := opsParseYuan(money.Value(fen), 1<<40); back != fen || problem != "" {
				t.Errorf("round trip of %d: %d, %q", fen, back, problem)
			}
		}
	}
}

// FuzzOpsParseYuan: whatever is typed, an accepted amount lies within
// the bound and shows back as the same fen.
func FuzzOpsParseYuan(f *testing.F) {
	for _, s := range []string{"12.34", "-1", "1,000", "¥0.5", "", "1e9", ".", "99999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		const max = 1_000_000_000
		fen, problem := opsParseYuan(s, max)
		if problem != "" {
			if fen != 0 {
				t.Fatalf("%q: problem %q with fen %d", s, problem, fen)
			}
			return
		}
		if fen < 0 || fen > max {
			t.Fatalf("%q: fen %d out of [0, %d]", s, fen, max)
		}
		if back, p := opsParseYuan(money.Value(fen), max); back != fen || p != "" {
			t.Fatalf("%q: %d shows as %q, which reads %d, %q", s, fen, money.Value(fen), back, p)
		}
	})
}

func TestOpsParseLocalTime(t *testing.T) {
	loc := web.Location()
	want := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	for _, in := range []string{"2026-11-30T13:00", "2026-11-30 13:00", "2026-11-30T13:00:00", " 2026-11-30 13:00:00 "} {
		got, ok := opsParseLocalTime(in, loc)
		if !ok || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("opsParseLocalTime(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	if got, ok := opsParseLocalTime("2026-12-01", loc); !ok || !got.Equal(time.Date(2026, 11, 30, 16, 0, 0, 0, time.UTC)) {
		t.Errorf("a bare date is Beijing midnight: %v %v", got, ok)
	}
	for _, in := range []string{"", "tomorrow", "2026-13-01T00:00", "30/11/2026 13:00"} {
		if _, ok := opsParseLocalTime(in, loc); ok {
			t.Errorf("opsParseLocalTime(%q) accepted", in)
		}
	}
	if got := opsLocalValue(want, loc); got != "2026-11-30T13:00" {
		t.Errorf("opsLocalValue = %q", got)
	}
}

func TestOpsParseClock(t *testing.T) {
	for in, want := range map[string]rating.ClockTime{"22:00": rating.Clock(22, 0, 0), "08:00": rating.Clock(8, 0, 0),
		"00:00": 0, "23:59:59": rating.Clock(23, 59, 59)} {
		if got, ok := opsParseClock(in); !ok || got != want {
			t.Errorf("opsParseClock(%q) = %v, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "24:00", "7:00", "12:60", "12", "12:00:00:00", "ab:cd", "-1:00"} {
		if _, ok := opsParseClock(in); ok {
			t.Errorf("opsParseClock(%q) accepted", in)
		}
	}
}

func TestOpsOneLine(t *testing.T) {
	for _, c := range []struct {
		in       string
		max      int
		required bool
		out      string
		problem  string
	}{
		{"  Xid 79 twice ", 500, true, "Xid 79 twice", ""},
		{"", 500, true, "", opsProblemRequired},
		{"   ", 500, false, "", ""},
		{"a\nb", 500, false, "", opsProblemControl},
		{"\xff", 500, false, "", opsProblemControl},
		{"风扇故障", 4, true, "风扇故障", ""},
		{"风扇故障了", 4, true, "", opsProblemTooLong},
	} {
		out, problem := opsOneLine(c.in, c.max, c.required)
		if out != c.out || problem != c.problem {
			t.Errorf("opsOneLine(%q) = %q, %q; want %q, %q", c.in, out, problem, c.out, c.problem)
		}
	}
}

func TestOpsParseCount(t *testing.T) {
	for _, c := range []struct {
		in      string
		n       int
		problem string
	}{{"1", 1, ""}, {" 20 ", 20, ""}, {"", 0, opsProblemRequired}, {"0", 0, opsProblemRange}, {"-3", 0, opsProblemNegative},
		{"x", 0, opsProblemFormat}, {"1000001", 0, opsProblemRange}} {
		n, problem := opsParseCount(c.in, 1, 1_000_000)
		if n != c.n || problem != c.problem {
			t.Errorf("opsParseCount(%q) = %d, %q", c.in, n, problem)
		}
	}
}

func TestOpsFigures(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{opsPercent(1, 3), "33.3%"}, {opsPercent(0, 8), "0.0%"}, {opsPercent(8, 8), "100.0%"}, {opsPercent(1, 0), "-"},
		{opsShare(3600, 7200), "50.0%"}, {opsShare(1, 0), "-"}, {opsShareNumber(2, 3), "66.7"},
		{opsHours(5400), "1.5"}, {opsHours(0), "0.0"}, {opsGiB(81920), "80.0"}, {opsGiB(1536), "1.5"}, {opsGiB(0), "0"},
		{string(opsYuanNumber(123456)), "1234.56"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestOpsShellWord(t *testing.T) {
	for in, want := range map[string]string{
		"https://gpu.example.com:8443": "https://gpu.example.com:8443",
		"cd-tianfu-a":                  "cd-tianfu-a",
		"":                             "''",
		"tok en":                       "'tok en'",
		"it's":                         `'it'\''s'`,
		"$(reboot)":                    "'$(reboot)'",
	} {
		if got := opsShellWord(in); got != want {
			t.Errorf("opsShellWord(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOpsUtilization: runs are cut at each day's midnight (Beijing time)
// and at now; an open run runs until now; capacity is the type's GPUs ×
// the day's elapsed seconds.
func TestOpsUtilization(t *testing.T) {
	loc := web.Location()
	day1 := time.Date(2026, 11, 1, 0, 0, 0, 0, loc)
	now := day1.Add(36 * time.Hour) // noon of day 2
	days := opsDays(day1, day1.AddDate(0, 1, 0), now, loc)
	if len(days) != 2 {
		t.Fatalf("%d days begun by now, want 2", len(days))
	}
	ended := day1.Add(26 * time.Hour)
	runs := []gpurent.UsageRun{
		// 2 GPUs from 22:00 on day 1 to 02:00 on day 2.
		{TypeID: "h100", GPUCount: 2, StartedAt: day1.Add(22 * time.Hour), EndedAt: &ended},
		// 1 GPU since 06:00 on day 2, still running.
		{TypeID: "h100", GPUCount: 1, StartedAt: day1.Add(30 * time.Hour)},
		// Before the month: not counted.
		{TypeID: "h100", GPUCount: 4, StartedAt: day1.Add(-10 * time.Hour), EndedAt: &day1},
		// A type the fleet no longer has.
		{TypeID: "v100", GPUCount: 1, StartedAt: day1, EndedAt: &ended},
	}
	u := opsUtilization(runs, map[string]int{"h100": 4, "a100": 2}, days, now)
	h := int64(3600)
	if got := u.DayUsed[0]["h100"]; got != 2*2*h {
		t.Errorf("day 1 h100 used %d s, want %d", got, 4*h)
	}
	if got := u.DayUsed[1]["h100"]; got != 2*2*h+6*h {
		t.Errorf("day 2 h100 used %d s, want %d", got, 10*h)
	}
	if got := u.DayCapacity[1]["h100"]; got != 4*12*h {
		t.Errorf("day 2 capacity %d s, want %d (12 hours so far)", got, 48*h)
	}
	if got := u.Capacity["h100"]; got != 4*36*h {
		t.Errorf("capacity %d", got)
	}
	if got := u.Used["v100"]; got != 26*h {
		t.Errorf("v100 used %d", got)
	}
	if strings.Join(u.Types, ",") != "a100,h100,v100" {
		t.Errorf("types %v", u.Types)
	}
	if got := opsShare(u.Used["h100"], u.Capacity["h100"]); got != "9.7%" { // 14 of 144 GPU-hours
		t.Errorf("h100 utilization %s", got)
	}
}

// opsTestServer is a console with its templates and messages but no
// services: enough to render pages from data.
func opsTestServer(t testing.TB) *Pages {
	t.Helper()
	site, err := web.NewSite(web.SiteConfig{Pages: []fs.FS{Templates()}, Messages: Messages()})
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Now: time.Now, Logger: slog.New(slog.DiscardHandler)}, site)
}

// TestOpsMessages: every message key the operator templates name exists,
// and so does every state label the pages look up.
func TestOpsMessages(t *testing.T) {
	s := opsTestServer(t)
	files, err := fs.Glob(templateFS, "templates/ops*.html")
	if err != nil || len(files) < 7 {
		t.Fatalf("operator templates: %v, %v", files, err)
	}
	key := regexp.MustCompile(`\.T "([a-z0-9_.]+)"`)
	for _, f := range files {
		b, err := fs.ReadFile(templateFS, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range key.FindAllStringSubmatch(string(b), -1) {
			if !s.site.HasMessage(m[1]) {
				t.Errorf("%s names message %q, which does not exist", f, m[1])
			}
		}
	}
	var want []string
	add := func(prefix string, values ...string) {
		for _, v := range values {
			want = append(want, prefix+v)
		}
	}
	add("ops.tab.", "overview", "fleet", "prices", "academic", "accounts", "incidents", "revenue")
	add("ops.ok.", "host_cordon", "host_uncordon", "host_drain", "gpu_cordon", "gpu_repair", "prices", "voucher",
		"academic_approve", "academic_reject", "credit", "transfer", "zone_probe", "zone_probe_cleared")
	add("ops.err.", opsProblemRequired, opsProblemNegative, opsProblemFormat, opsProblemRange, opsProblemTooLong,
		opsProblemControl, opsProblemPast)
	add("ops.host.", string(gpurent.HostReady), string(gpurent.HostCordoned), string(gpurent.HostDraining), string(gpurent.HostDown))
	add("ops.health.", string(gpurent.GPUHealthy), string(gpurent.GPUDegraded), string(gpurent.GPUCordoned),
		string(gpurent.GPUFailed), string(gpurent.GPURetired), string(gpurent.GPUMissing))
	add("ops.cert.", string(gpurent.CertNone), string(gpurent.CertPassed), string(gpurent.CertWarn),
		string(gpurent.CertPending), string(gpurent.CertDelisted), string(gpurent.CertDegraded))
	add("ops.class.", string(gpurent.FaultApp), string(gpurent.FaultInfo), string(gpurent.FaultReset),
		string(gpurent.FaultDrainReset), string(gpurent.FaultNode), string(gpurent.FaultRMA), string(gpurent.FaultDegraded),
		string(gpurent.FaultHost), string(gpurent.FaultHostDown), string(gpurent.FaultUnknown))
	add("ops.attr.", string(gpurent.AttrHost), string(gpurent.AttrTenant), string(gpurent.AttrNone))
	add("ops.incstate.", string(gpurent.IncidentOpen), string(gpurent.IncidentResolved))
	add("ops.app.", string(gpurent.AcademicPending), string(gpurent.AcademicApproved), string(gpurent.AcademicRejected))
	add("ops.method.", string(gpurent.AcademicEmailDomain), string(gpurent.AcademicProof))
	add("ops.prices.", "current", "scheduled", "past")
	add("ops.voucher.kind_", string(gpurent.VoucherCash), string(gpurent.VoucherPromo))
	add("ops.accounts.academic_", "none", "pending", "verified")
	for _, f := range opsPriceFields() {
		want = append(want, "ops.price."+f.key)
	}
	for _, k := range want {
		if !s.site.HasMessage(k) {
			t.Errorf("message %q is missing", k)
		}
	}
}

// opsSampleData fills every operator page with rows of every kind.
func opsSampleData(s *Pages, p *web.Page) map[string]any {
	now := time.Now().UTC()
	ended := now.Add(-time.Hour)
	inc := gpurent.Incident{ID: "inc-1", HostID: "host-1", GPUID: "GPU-1", InstanceID: "i-1", AccountID: "acc-1",
		Class: gpurent.FaultReset, Attribution: gpurent.AttrHost, Cause: "Xid 79: GPU has fallen off the bus",
		State: gpurent.IncidentResolved, StartedAt: now.Add(-3 * time.Hour), EndedAt: &ended, CreditFen: 1234}
	open := inc
	open.ID, open.State, open.EndedAt, open.CreditFen = "inc-2", gpurent.IncidentOpen, nil, 0
	gpu := opsGPURow{UUID: "GPU-1", Type: "h100-80g-sxm", Host: "host-a", Health: "failed", HealthLabel: opsLabel(p, "health", "failed"),
		HealthClass: "bad", Reason: "Xid 79", Cert: "degraded", CertLabel: "degraded", CertOf: "measured 91.2%", Util: "97%",
		Mem: "70.0 / 80.0 GiB", Holder: "i-1", RMA: true, CanRepair: true}
	idle := gpu
	idle.UUID, idle.Holder, idle.BenchJob = "GPU-2", "", "bench-1"
	until := now.AddDate(1, 0, 0)
	app := opsAppRow{ID: "aca-1", Email: "s@scu.edu.cn", Institution: "四川大学", Method: "proof", MethodLabel: "proof",
		Proof: "student card", State: "pending", StateLabel: "pending", Class: "warn", Created: now}
	link, file := app, app
	link.ID, link.Proof, link.ProofURL = "aca-2", "", "https://drive.example/proof.pdf"
	file.ID, file.Proof, file.ProofFile, file.ProofBytes = "aca-3", "", true, 2048
	host := opsHostRow{ID: "host-1", Name: "gpu-01", Zone: "cd-tianfu-a", Runtime: "process", State: "cordoned",
		StateLabel: "cordoned", Class: "warn", LastSeen: &now, Free: 1, Total: 2, CanUncordon: true, CanDrain: true,
		Unhealthy: opsCounts(p, "health", map[string]int{"failed": 1}), GPUs: []opsGPURow{gpu, idle}}
	readyHost := host
	readyHost.ID, readyHost.State, readyHost.CanCordon, readyHost.CanUncordon, readyHost.Unhealthy, readyHost.Online =
		"host-2", "ready", true, false, nil, true
	decided := app
	decided.ID, decided.State, decided.Decided, decided.Until, decided.Reason = "aca-4", "approved", &now, &until, "welcome"
	return map[string]any{
		"ops": opsOverviewData{Tabs: s.opsTabs(p, "overview"), HostsTotal: 2, HostsOnline: 1, GPUsTotal: 8,
			HostStates: opsCounts(p, "host", map[string]int{"ready": 1, "down": 1}, "ready"), AllocatedPct: "25.0%",
			HasCerts: true, CertStates: opsCounts(p, "cert", map[string]int{"certified": 8}), UtilAvg: "40%",
			OpenIncidents: []opsIncidentRow{opsIncidentRowOf(p, &open, now)}, HasIncidents: true, HasAcademic: true,
			PendingAcademic: 3, HasRevenue: true, RevenueTodayFen: 123456, RevenueMonth: 9876543},
		"ops_fleet": opsFleetData{Tabs: s.opsTabs(p, "fleet"), Zone: "cd-tianfu-a", State: "cordoned", Query: "gpu",
			States: opsCounts(p, "host", map[string]int{"cordoned": 1}, "ready"),
			Zones:  []opsZoneRow{{ID: "cd-tianfu-a", Name: "Tianfu A", Hosts: 1, GPUs: 8, FreeGPUs: 6}},
			Hosts:  []opsHostRow{host, readyHost}, Matched: 201, Page: 2, Pages: 3, PrevURL: "/ops/fleet?page=1", NextURL: "/ops/fleet?page=3",
			Join: []opsJoinRow{{Zone: "cd-tianfu-a", Command: "gpurent agent --server https://x --join-token t --zone cd-tianfu-a"}}},
		"ops_host": opsHostData{Tabs: s.opsTabs(p, "fleet"), Host: host, HasCerts: true, HasUtil: true, GPUError: "GPU-1", Reason: "fan"},
		"ops_prices": opsPricesData{Tabs: s.opsTabs(p, "prices"), Fields: []string{"peak"}, HasVouchers: true,
			Versions: []opsVersionView{{ID: "v1", Anchor: "version-1", Effective: now, Status: "current", Label: "in force",
				Class: "ok", Rule: "daily 22:00–08:00", Types: []opsPriceRow{{TypeID: "h100", Fen: []int64{3473}, AcademicShare: "80.0%"}}}},
			Form: opsPriceForm{Effective: "2026-11-30T13:00", OffStart: "22:00", OffEnd: "08:00", Weekends: true,
				Types: []opsPriceInputRow{{TypeID: "h100", Inputs: []opsPriceInput{{Name: "p.h100.peak", ID: "price-h100-peak", Value: "34.73"}}}}},
			Voucher: opsVoucherForm{Amount: "88", Expires: "2026-12-30T10:00", Max: "1", Promo: true},
			Shown:   &opsVoucherView{Code: "ABCD-EFGH-JKLM", Kind: "promo", AmountFen: 8800, Expires: now, Created: now, Max: 5, Redemptions: 2},
			Lookup:  "ABCD-EFGH-JKLM"},
		"ops_academic": opsAcademicData{Tabs: s.opsTabs(p, "academic"), Pending: []opsAppRow{app, link, file},
			Decided: []opsAppRow{decided}, ErrorID: "aca-1", Note: "blurry"},
		"ops_accounts": opsAccountsData{Tabs: s.opsTabs(p, "accounts"), Query: "scu", More: 3,
			Accounts: []opsAccountRow{{ID: "acc-1", Email: "s@scu.edu.cn", Name: "S", Created: now, SpendableFen: 10000,
				CashFen: 8000, CreditFen: 2000, ArrearsFen: 500, Academic: "verified", AcademicLabel: "verified", Class: "ok",
				AcademicUntil: &until}},
			Credit:   opsCreditForm{Account: "s@scu.edu.cn", Amount: "100", Reason: "goodwill", Key: "ccr-1"},
			Transfer: opsTransferForm{Provider: "bank-transfer", Reference: "BT123", Amount: "500"}},
		"ops_incidents": opsIncidentsData{Tabs: s.opsTabs(p, "incidents"), Open: []opsIncidentRow{opsIncidentRowOf(p, &open, now)},
			Recent: []opsIncidentRow{opsIncidentRowOf(p, &inc, now)}, Credits: []opsIncidentRow{opsIncidentRowOf(p, &inc, now)},
			CreditTotalFen: 1234, RMA: []opsGPURow{gpu}},
		"ops_revenue": opsRevenueData{Tabs: s.opsTabs(p, "revenue"), Month: "2026-11", Prev: "2026-10", Next: "2026-12",
			From: "2026-11-01", To: "2026-11-30", Types: []string{"h100"}, ByType: []int64{5000}, TotalFen: 5000,
			Days:         []opsRevenueDay{{Day: "2026-11-29", TotalFen: 5000, ByType: []int64{5000}}},
			RevenueChart: opsChart{Labels: []string{"11-29"}, Series: []opsChartSeries{{Name: "h100", Values: nil}}}.String(),
			HasUtil:      true, Util: []opsUtilRow{{Type: "h100", GPUs: 4, UsedHours: "1.0", Pct: "1.0%"}}, UtilChart: "{}"},
	}
}

// TestOpsPagesRender renders every operator page, filled with rows of
// every kind, in both languages: no template error, no missing message,
// no inline script or style, every POST form with its CSRF field.
func TestOpsPagesRender(t *testing.T) {
	s := opsTestServer(t)
	for _, lang := range []string{web.LangZH, web.LangEN} {
		r := httptest.NewRequest("GET", "/ops", nil)
		p := s.site.Page(r, lang)
		p.CSRF, p.Nav = "csrf-token-value", "ops"
		p.Account = &gpurent.Account{Email: "ops@x", Role: gpurent.RoleOperator}
		for name, data := range opsSampleData(s, p) {
			w := httptest.NewRecorder()
			p.Title = name
			s.site.Render(w, r, p, name, data)
			body := w.Body.String()
			if w.Code != 200 {
				t.Fatalf("%s (%s): status %d\n%s", name, lang, w.Code, body)
			}
			if strings.Contains(body, "«") {
				i := strings.Index(body, "«")
				t.Errorf("%s (%s): a missing message: %s", name, lang, body[i:min(len(body), i+60)])
			}
			for _, bad := range []string{"<script>", " style=", " onclick=", "<style"} {
				if strings.Contains(body, bad) {
					t.Errorf("%s (%s): %q breaks the content security policy", name, lang, bad)
				}
			}
			if posts, csrf := strings.Count(body, `method="post"`), strings.Count(body, `name="_csrf"`); csrf < posts {
				t.Errorf("%s (%s): %d POST forms, %d CSRF fields", name, lang, posts, csrf)
			}
		}
	}
}

// BenchmarkOpsFleetRender renders a page of the fleet (100 hosts, the
// page's size) and a host's page of 8 GPUs (templates only; the services'
// time is theirs).
func BenchmarkOpsFleetRender(b *testing.B) {
	s := opsTestServer(b)
	r := httptest.NewRequest("GET", "/ops/fleet", nil)
	p := s.site.Page(r, web.LangZH)
	p.CSRF, p.Account = "csrf", &gpurent.Account{Role: gpurent.RoleOperator}
	now := time.Now()
	d := opsFleetData{Tabs: s.opsTabs(p, "fleet"), Matched: 1000, Page: 1, Pages: 10, NextURL: "/ops/fleet?page=2"}
	var host opsHostData
	for i := range opsHostsPerPage {
		h := opsHostRow{ID: fmt.Sprintf("host-%d", i), Name: fmt.Sprintf("gpu-%04d", i), Zone: "cd-tianfu-a", Runtime: "docker",
			State: "ready", StateLabel: "ready", Class: "ok", Online: true, LastSeen: &now, Free: 8, Total: 8, CanCordon: true, CanDrain: true}
		d.Hosts = append(d.Hosts, h)
		if i == 0 {
			for j := range 8 {
				h.GPUs = append(h.GPUs, opsGPURow{UUID: fmt.Sprintf("GPU-%d-%d", i, j), Type: "h100-80g-sxm", Index: j,
					Health: "healthy", HealthLabel: "healthy", HealthClass: "ok", Cert: "certified", CertLabel: "certified",
					CertClass: "ok", Util: "50%", Mem: "40.0 / 80.0 GiB"})
			}
			host = opsHostData{Tabs: d.Tabs, Host: h, HasCerts: true, HasUtil: true}
		}
	}
	for _, c := range []struct {
		name string
		data any
	}{{"ops_fleet", d}, {"ops_host", host}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				s.site.Render(w, r, p, c.name, c.data)
				if w.Code != 200 {
					b.Fatal(w.Code)
				}
			}
		})
	}
}
