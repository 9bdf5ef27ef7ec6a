package transparency

import (
	"bytes"
	"errors"
	"html/template"
	"io"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
)

func render(t *testing.T, lang string, mutate func(r *apiv1.Transparency)) string {
	t.Helper()
	r := sampleReport()
	if mutate != nil {
		mutate(r)
	}
	var b bytes.Buffer
	if err := Page(&b, r, lang); err != nil {
		t.Fatalf("Page(%s): %v", lang, err)
	}
	return b.String()
}

func TestPageBothLanguages(t *testing.T) {
	for _, lang := range []string{LangEN, LangZH} {
		t.Run(lang, func(t *testing.T) {
			page := render(t, lang, nil)
			m := messagesFor(lang)
			other := LangZH
			if lang == LangZH {
				other = LangEN
			}
			want := []string{
				"<!DOCTYPE html>", `<html lang="` + m.HTMLLang + `">`, "<title>" + m.Title + "</title>",
				`href="?lang=` + other + `"`, `href="/api/v1/transparency"`, `href="/api/v1/transparency.csv"`,
				template.HTMLEscapeString(m.Method1), m.DelistedHead, m.ColSpec, m.ColMedian,
				"NVIDIA H100 80GB SXM", "NVIDIA GeForce RTX 4090", m.NoProbes, m.NoHosts,
				ProbeLabel("gemm_bf16", lang), ProbeLabel("nccl_allreduce", lang), ProbeLabel("resnet50_amp", lang),
				HashUUID("GPU-aaaa-0"), HashUUID("GPU-cccc-9"),
				// Figures: TFLOPS one decimal, GB/s none above 100, img/s none.
				">780.2<", ">2950<", ">2651<", "690.5 – 791.8", "365<", "470<",
				// Spec and healthy figures with their sources as footnotes.
				`title="NVIDIA H100 datasheet, BF16 dense"`, ">989.0<", "460 – 480", "NVIDIA/nccl-tests#212</li>",
				// Ratios truncated: 0.94996 is 94.9%, never 95.0%.
				"94.9%", "88.4%", "78.8%",
				// Dates in Beijing time.
				"2026-03-14", "2026-03-14 01:30",
				// The band from the report's ratios.
				"95%", "90%",
				// Throttle reasons, the provisional mark, the price share.
				"hw_slowdown, sw_thermal_slowdown", "<small>algo=ring</small><br><small>GB/s</small></th>", "690.5*", permille(875),
				m.Provisional, m.StateDegraded, m.StateDelisted, m.StateRerun, m.StateUncertified,
				m.ReasonWeekly, m.ReasonOnboarding, "odd_probe</th>", ">1.23<", m.HistTrigger, ">781.0<",
				"confirmed FAIL: device memory copy at 0.71", "gone-type",
				m.NoResults,
			}
			for _, s := range want {
				if !strings.Contains(page, s) {
					t.Errorf("page lacks %q", s)
				}
			}
			if strings.Contains(page, m.Synthetic) {
				t.Error("page of measured data carries the synthetic banner")
			}
			for _, tag := range []string{"table", "tr", "section", "details", "ul", "ol", "main"} {
				open := len(regexp.MustCompile(`<`+tag+`[ >]`).FindAllString(page, -1))
				if closed := strings.Count(page, "</"+tag+">"); open != closed {
					t.Errorf("<%s> opened %d times, closed %d", tag, open, closed)
				}
			}
			for _, banned := range []string{"<script", "<link", "<img", "http://", "https://", "src="} {
				if strings.Contains(page, banned) {
					t.Errorf("page is not self-contained: has %q", banned)
				}
			}
		})
	}
}

// TestPageOneLanguage holds the page to one language: the English page has
// no Chinese but the switch link's label, and the Chinese page none of the
// English table's words.
func TestPageOneLanguage(t *testing.T) {
	// Free text from the report (reasons) is the operator's, in whatever
	// language it was written: keep it out of the way.
	neutral := func(r *apiv1.Transparency) {
		for hi := range r.Types[0].Hosts {
			for gi := range r.Types[0].Hosts[hi].GPUs {
				r.Types[0].Hosts[hi].GPUs[gi].Reason = "r0"
			}
		}
		for i := range r.Delisted {
			r.Delisted[i].Reason = "r1"
		}
	}
	en, zh := render(t, LangEN, neutral), render(t, LangZH, neutral)
	withoutSwitch := strings.Replace(en, ">"+messagesEN().OtherLabel+"<", "><", 1)
	for _, r := range withoutSwitch {
		if unicode.Is(unicode.Han, r) {
			t.Fatalf("English page has Chinese text %q", string(r))
		}
	}
	zhValues := messageValues(messagesZH())
	for field, v := range messageValues(messagesEN()) {
		frag := longestLiteral(v)
		if len(frag) < 4 || field == "OtherLabel" {
			continue
		}
		inZH := false // the same words can be part of a Chinese string ("NCCL all-reduce")
		for _, z := range zhValues {
			inZH = inZH || strings.Contains(z, frag)
		}
		if !inZH && strings.Contains(zh, frag) {
			t.Errorf("Chinese page has the English %s: %q", field, frag)
		}
	}
}

// longestLiteral is the longest piece of a format string between verbs.
func longestLiteral(s string) string {
	best := ""
	for _, p := range regexp.MustCompile(`%[sd]`).Split(s, -1) {
		if p = strings.TrimSpace(p); len(p) > len(best) {
			best = p
		}
	}
	return best
}

func TestPageEscapesHostileText(t *testing.T) {
	hostile := `<script>alert("x")</script>`
	for _, lang := range []string{LangEN, LangZH} {
		page := render(t, lang, func(r *apiv1.Transparency) {
			r.Notes = []string{hostile}
			ty := &r.Types[0]
			ty.Name = hostile
			ty.ID = `"><img src=x onerror=alert(1)>`
			ty.Probes[0].Setup = hostile
			ty.Probes[0].Spec.Source = `" onmouseover="alert(1)`
			h := &ty.Hosts[0]
			h.Name, h.Zone, h.ID = hostile, `<iframe src="//evil">`, `javascript:alert(1)`
			h.GPUs[1].Reason = `"><svg onload=alert(1)>`
			h.GPUs[1].Results[0].Throttle = []string{hostile}
			r.Delisted[0].Reason = hostile
			r.Delisted[1].Host = hostile
		})
		for _, bad := range []string{"<script", "<img", "<iframe", "<svg", `" onmouseover="`} {
			if strings.Contains(page, bad) {
				t.Errorf("%s page: hostile %q got through unescaped", lang, bad)
			}
		}
		if !strings.Contains(page, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") {
			t.Errorf("%s page: hostile host name not shown escaped", lang)
		}
	}
}

func TestPageSyntheticBanner(t *testing.T) {
	for _, lang := range []string{LangEN, LangZH} {
		page := render(t, lang, func(r *apiv1.Transparency) { r.Synthetic = true })
		banner := `<div class="banner" role="alert">` + messagesFor(lang).Synthetic + "</div>"
		if !strings.Contains(page, banner) {
			t.Errorf("%s page of synthetic data lacks the banner %q", lang, banner)
		}
		if i, j := strings.Index(page, banner), strings.Index(page, "<h1>"); i > j {
			t.Errorf("%s page: the banner comes after the heading", lang)
		}
	}
}

func TestPageLanguageTags(t *testing.T) {
	for lang, want := range map[string]string{"zh-CN": "zh-CN", "ZH": "zh-CN", "en-US": "en", "en": "en"} {
		if page := render(t, lang, nil); !strings.Contains(page, `<html lang="`+want+`">`) {
			t.Errorf("lang %q: want page in %s", lang, want)
		}
	}
	for _, lang := range []string{"", "fr", "zh_TW<"} {
		err := Page(io.Discard, sampleReport(), lang)
		if gpurent.ErrorCode(err) != gpurent.CodeInvalid {
			t.Errorf("lang %q: got %v, want an invalid error", lang, err)
		}
	}
	if err := Page(io.Discard, nil, LangEN); gpurent.ErrorCode(err) != gpurent.CodeInternal {
		t.Errorf("nil report: got %v, want an internal error", err)
	}
}

// failingWriter fails every write.
type failingWriter struct{}

var errDiskFull = errors.New("disk full")

func (failingWriter) Write([]byte) (int, error) { return 0, errDiskFull }

func TestPageWriteError(t *testing.T) {
	err := Page(failingWriter{}, sampleReport(), LangZH)
	if !errors.Is(err, errDiskFull) || gpurent.ErrorCode(err) != gpurent.CodeInternal {
		t.Fatalf("got %v, want the write error wrapped as internal", err)
	}
}

func TestPageEmptyReport(t *testing.T) {
	for _, lang := range []string{LangEN, LangZH} {
		var b bytes.Buffer
		if err := Page(&b, &apiv1.Transparency{}, lang); err != nil {
			t.Fatal(err)
		}
		m := messagesFor(lang)
		if !strings.Contains(b.String(), m.NoneDelisted) || !strings.Contains(b.String(), "95%") {
			t.Errorf("%s: empty report lacks the no-delisted line or the default band", lang)
		}
	}
}

func BenchmarkPage(b *testing.B) {
	r := largeReport(1000)
	var buf bytes.Buffer
	if err := Page(&buf, r, LangZH); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := Page(io.Discard, r, LangZH); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRowEscaping holds the hand-written rows to html/template's escaping.
func TestRowEscaping(t *testing.T) {
	for _, s := range []string{"", "plain", `<a href="x">'&'</a>`, "nul\x00here", "中文 <b>", "&amp;", "\"'<>&"} {
		var w rowWriter
		w.text(s)
		if got, want := w.String(), template.HTMLEscapeString(s); got != want {
			t.Errorf("text(%q) = %q, want %q", s, got, want)
		}
	}
}

func FuzzRowEscaping(f *testing.F) {
	f.Add(`<script>"'&`)
	f.Fuzz(func(t *testing.T, s string) {
		var w rowWriter
		w.text(s)
		if got, want := w.String(), template.HTMLEscapeString(s); got != want {
			t.Errorf("text(%q) = %q, want %q", s, got, want)
		}
	})
}
