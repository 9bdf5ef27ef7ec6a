package sla_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/sla"
)

// docsPage is docs/sla.md: the English page, then the Chinese one.
func docsPage() string {
	t := sla.DefaultTerms()
	return "<!-- Generated from sla.DefaultTerms().Markdown by internal/sla/docs_test.go; do not edit.\n" +
		"     Regenerate: GPURENT_UPDATE_DOCS=1 go test ./internal/sla -run TestDocsSLAIsRenderedFromTerms -->\n\n" +
		t.Markdown("en") + "\n---\n\n" + t.Markdown("zh")
}

// TestDocsSLAIsRenderedFromTerms fails when docs/sla.md differs from what
// the default terms render, so the published page cannot drift from the
// code. With GPURENT_UPDATE_DOCS=1 it rewrites the file instead.
func TestDocsSLAIsRenderedFromTerms(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "sla.md")
	want := docsPage()
	if os.Getenv("GPURENT_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v (generate it with GPURENT_UPDATE_DOCS=1 go test ./internal/sla)", path, err)
	}
	if string(got) != want {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(want, "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("docs/sla.md differs from sla.DefaultTerms().Markdown at line %d:\n file: %q\n want: %q\nRegenerate with GPURENT_UPDATE_DOCS=1 go test ./internal/sla", i+1, g, w)
			}
		}
	}
}

// TestMarkdownStatesTheTerms checks that every number of the terms reaches
// both pages, and that changed terms change the page.
func TestMarkdownStatesTheTerms(t *testing.T) {
	terms := sla.DefaultTerms()
	for _, lang := range []string{"en", "zh"} {
		md := terms.Markdown(lang)
		for _, want := range []string{"99.5%", "99.0%", "95.0%", "10%", "30%", "100%", "Asia/Shanghai",
			"90", "60", "72", "24", "6 ", "3,000.00", "300.00", "900.00", "34.73", "250.08", "10.42", "14:00", "14:07", "15:00"} {
			if !strings.Contains(md, want) {
				t.Errorf("%s page lacks %q", lang, want)
			}
		}
	}
	for _, lang := range []string{"en", "zh"} {
		if md := terms.Markdown(lang); strings.Contains(md, "%!") || strings.Contains(md, "MISSING") {
			t.Errorf("%s page has a formatting error:\n%s", lang, md)
		}
	}
	if !strings.Contains(terms.Markdown("zh"), "服务等级协议") || strings.Contains(terms.Markdown("en"), "服务") {
		t.Error("the zh page must be Chinese and the en page English")
	}
	if terms.Markdown("zh-CN") != terms.Markdown("zh") || terms.Markdown("fr") != terms.Markdown("en") {
		t.Error("zh-* must render Chinese; unknown languages English")
	}

	changed := terms
	changed.HourRuleMinutes = 10
	changed.ExpiryDays = 180
	changed.Tiers = []sla.Tier{{BelowBasisPoints: 9990, CreditPercent: 25}}
	changed.Exclusions = []string{sla.ExclusionTenantFault}
	changed.MaintenanceNoticeHours = 0
	changed.DegradedCountsAsDown = false
	if err := changed.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, lang := range []string{"en", "zh"} {
		md := changed.Markdown(lang)
		for _, want := range []string{"99.9%", "25%", "180", "14:11"} {
			if !strings.Contains(md, want) {
				t.Errorf("%s page of changed terms lacks %q", lang, want)
			}
		}
		for _, gone := range []string{"99.5%", "72", "NVLink"} {
			if strings.Contains(md, gone) {
				t.Errorf("%s page of changed terms still says %q", lang, gone)
			}
		}
	}
	none := terms
	none.Tiers = nil
	if md := none.Markdown("en"); !strings.Contains(md, "no monthly availability credit") {
		t.Errorf("terms without tiers must say there is no availability credit:\n%s", md)
	}
}
