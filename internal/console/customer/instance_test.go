package customer

import (
	"encoding/json"
	"io/fs"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/incident"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/rental"
)

// testSite is the plumbing with this room's pages and messages.
func testSite(t testing.TB) *web.Site {
	t.Helper()
	site, err := web.NewSite(web.SiteConfig{Pages: []fs.FS{Templates()}, Messages: Messages()})
	if err != nil {
		t.Fatal(err)
	}
	return site
}

// testPage is a page in lang with the room's messages.
func testPage(t *testing.T, lang string) *web.Page {
	t.Helper()
	return testSite(t).Page(nil, lang)
}

func TestSSHFor(t *testing.T) {
	for _, c := range []struct {
		addr, cmd, scp string
		ok             bool
	}{
		{"gw.example:2222", "ssh -p 2222 i-1@gw.example", "scp -P 2222 -r ./data i-1@gw.example:/root/data/", true},
		{"gw.example:22", "ssh i-1@gw.example", "scp -r ./data i-1@gw.example:/root/data/", true},
		{"[::1]:2200", "ssh -p 2200 i-1@[::1]", "scp -P 2200 -r ./data i-1@[::1]:/root/data/", true},
		{"", "", "", false},
		{"gw.example", "", "", false},
	} {
		a, ok := sshFor(c.addr, "SHA256:abc", "i-1")
		if ok != c.ok || a.Command != c.cmd || a.SCP != c.scp {
			t.Errorf("sshFor(%q) = %+v, %v; want %q, %q, %v", c.addr, a, ok, c.cmd, c.scp, c.ok)
		}
		if ok && a.Fingerprint != "SHA256:abc" {
			t.Errorf("sshFor(%q) lost the fingerprint", c.addr)
		}
	}
}

func TestDurationText(t *testing.T) {
	zh, en := testPage(t, web.LangZH), testPage(t, web.LangEN)
	for _, c := range []struct {
		s      int64
		zh, en string
	}{
		{3*86400 + 4*3600 + 59, "3 天 4 小时", "3 d 4 h"},
		{2*3600 + 5*60, "2 小时 5 分钟", "2 h 5 min"},
		{12*60 + 30, "12 分钟", "12 min"},
		{40, "40 秒", "40 s"},
		{-5, "0 秒", "0 s"},
	} {
		if got := durationText(zh, c.s); got != c.zh {
			t.Errorf("zh %d s: %q, want %q", c.s, got, c.zh)
		}
		if got := durationText(en, c.s); got != c.en {
			t.Errorf("en %d s: %q, want %q", c.s, got, c.en)
		}
	}
}

func TestSmallFormats(t *testing.T) {
	for bp, want := range map[int]string{10000: "100.00%", 9995: "99.95%", 9905: "99.05%", 0: "0.00%"} {
		if got := permilleText(bp); got != want {
			t.Errorf("permilleText(%d) = %q, want %q", bp, got, want)
		}
	}
	for fen, want := range map[int64]string{300: "+¥3.00", -150: "-¥1.50", 0: "¥0.00", 123456789: "+¥1,234,567.89"} {
		if got := money.Signed(fen); got != want {
			t.Errorf("money.Signed(%d) = %q, want %q", fen, got, want)
		}
	}
	for in, want := range map[string]int{"8888": 8888, " 6006 ": 6006, "1": 1, "65535": 65535, "0": 0, "65536": 0, "x": 0, "": 0, "-1": 0} {
		got, ok := parsePort(in)
		if got != want || ok != (want != 0) {
			t.Errorf("parsePort(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	if flashKey("instance", "stopped") != "instance.done.stopped" || flashKey("instance", "<script>") != "" {
		t.Error("flashKey shows a key off its list, or not one on it")
	}
	p := testPage(t, web.LangEN)
	if got := stateText(p, gpurent.StateRunning); got != "Running" {
		t.Errorf("state text %q", got)
	}
	if got := stateText(p, "weird"); got != "weird" {
		t.Errorf("unknown state text %q", got)
	}
	if got := gpusText(p, "h100-80g-sxm", 0); got != "No-GPU mode" {
		t.Errorf("no-GPU text %q", got)
	}
	a := []rental.Detail{{Instance: gpurent.Instance{ID: "i-1"}}, {Instance: gpurent.Instance{ID: "i-2"}}}
	b := []rental.Detail{a[1], a[0]}
	if instanceSetKey(a) != instanceSetKey(b) || instanceSetKey(a) == instanceSetKey(a[:1]) {
		t.Error("the set key depends on the order, or not on the set")
	}
}

// TestUpgradeFormMessages: the upgrade form's count is checked, and what
// is wrong is said in the page's language.
func TestUpgradeFormMessages(t *testing.T) {
	for _, c := range []struct {
		typ, count, zh, en string
	}{
		{"", "2", "请选择 GPU 型号", "Choose a GPU type"},
		{"h100-80g-sxm", "", "GPU 数量 为必填项", "GPU count is required"},
		{"h100-80g-sxm", "two", "GPU 数量 必须是数字", "GPU count must be a number"},
		{"h100-80g-sxm", "9", "GPU 数量 必须在 0 到 8 之间", "GPU count must be from 0 to 8"},
		{"h100-80g-sxm", "-1", "GPU 数量 必须在 0 到 8 之间", "GPU count must be from 0 to 8"},
	} {
		if _, msg := readUpgradeForm(testPage(t, web.LangZH), c.typ, c.count); msg != c.zh {
			t.Errorf("zh %q/%q: %q, want %q", c.typ, c.count, msg, c.zh)
		}
		if _, msg := readUpgradeForm(testPage(t, web.LangEN), c.typ, c.count); msg != c.en {
			t.Errorf("en %q/%q: %q, want %q", c.typ, c.count, msg, c.en)
		}
	}
	f, msg := readUpgradeForm(testPage(t, web.LangEN), " h100-80g-sxm ", "0")
	if msg != "" || f.TypeID != "h100-80g-sxm" || f.Count != 0 {
		t.Errorf("no-GPU mode refused: %+v %q", f, msg)
	}
}

// TestGPUCharts: GPUs in index order, a shorter series aligned on the
// newest sample, memory in GiB up to the largest GPU's memory.
func TestGPUCharts(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 4, 0, 0, 0, time.UTC) // 12:00 in Beijing
	pts := func(n int, util int, mem int64) []incident.SamplePoint {
		out := make([]incident.SamplePoint, n)
		for i := range out {
			out[i] = incident.SamplePoint{At: t0.Add(time.Duration(i) * time.Second), UtilPercent: util, MemUsedMiB: mem}
		}
		return out
	}
	util, mem, n := gpuCharts(map[string]incident.GPUSeries{
		"GPU-b": {Index: 1, MemoryMiB: 81920, Points: pts(2, 50, 2048)},
		"GPU-a": {Index: 0, MemoryMiB: 81920, Points: pts(3, 90, 40960)},
		"GPU-c": {Index: 2, Points: nil},
	})
	if n != 3 || len(util.Labels) != 3 || util.Labels[0] != "12:00:00" || util.Max != 100 || util.Unit != "%" {
		t.Fatalf("util chart %+v (n %d)", util, n)
	}
	if len(util.Series) != 2 || util.Series[0].Name != "GPU 0" || util.Series[1].Name != "GPU 1" {
		t.Fatalf("series %+v", util.Series)
	}
	if got := util.Series[1].Values; got[0] != 0 || got[1] != 50 || got[2] != 50 {
		t.Errorf("the shorter series is not aligned on the newest: %v", got)
	}
	if mem.Max != 80 || mem.Series[0].Values[0] != 40 || mem.Series[1].Values[2] != 2 {
		t.Errorf("memory chart %+v", mem)
	}
	b, err := json.Marshal(util)
	if err != nil || string(b)[:10] != `{"labels":` {
		t.Errorf("chart JSON %s %v", b, err)
	}
	if _, _, n := gpuCharts(nil); n != 0 {
		t.Error("no samples, yet a chart")
	}
}

func TestStreamCounter(t *testing.T) {
	var c streamCounter
	for i := range maxStreamsPerAccount {
		if !c.acquire("acc-a") {
			t.Fatalf("stream %d refused", i+1)
		}
	}
	if c.acquire("acc-a") {
		t.Fatal("one stream too many was let open")
	}
	if !c.acquire("acc-b") {
		t.Fatal("another account's stream was refused")
	}
	c.release("acc-a")
	if !c.acquire("acc-a") {
		t.Fatal("a released stream's place was not given back")
	}
	for range maxStreamsPerAccount {
		c.release("acc-a")
	}
	c.release("acc-b")
	if len(c.open) != 0 {
		t.Fatalf("counts left: %v", c.open)
	}
}
