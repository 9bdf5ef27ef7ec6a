package transparency

import (
	"fmt"
	"html/template"
	"sort"
	"strconv"
	"strings"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// This file writes the card rows of a host's table: the one part of the
// page whose size grows with the fleet (8,000 cards, each with its probes
// and up to 12 earlier runs). It is written by hand rather than by the
// template, for speed, under one rule: every string that is not a literal
// of this file goes through rowWriter.text, which escapes it the way
// html/template does for text and quoted attribute values.

// rowWriter builds HTML.
type rowWriter struct{ strings.Builder }

// raw writes markup; only ever a literal of this file.
func (w *rowWriter) raw(markup string) { w.WriteString(markup) }

// text writes s escaped for HTML text or a double-quoted attribute value.
func (w *rowWriter) text(s string) {
	last := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch s[i] {
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '&':
			esc = "&amp;"
		case '"':
			esc = "&#34;"
		case '\'':
			esc = "&#39;"
		case 0:
			esc = "\uFFFD"
		default:
			continue
		}
		w.WriteString(s[last:i])
		w.WriteString(esc)
		last = i + 1
	}
	w.WriteString(s[last:])
}

// Rows is the host's card rows, for its table's body.
func (h hostView) Rows() template.HTML {
	var w rowWriter
	w.Grow(len(h.host.GPUs) * 3072)
	for i := range h.host.GPUs {
		h.b.gpuRow(&w, h.typ, &h.host.GPUs[i])
	}
	return template.HTML(w.String()) // every string in it went through text
}

// gpuRow writes one card's row.
func (b *builder) gpuRow(w *rowWriter, t *typeView, g *apiv1.TransparencyGPU) {
	m := b.m
	w.raw(`<tr><td><code>`)
	w.text(g.Hash)
	w.raw(`</code></td><td class="r">`)
	w.raw(strconv.Itoa(g.Index))
	label, class := m.state(g.State)
	w.raw(`</td><td><span class="b `)
	w.raw(class)
	w.raw(`"`)
	if g.Reason != "" {
		w.raw(` title="`)
		w.text(g.Reason)
		w.raw(`"`)
	}
	w.raw(`>`)
	w.text(label)
	w.raw(`</span></td>`)
	if t.PriceCol {
		w.raw(`<td class="nw">`)
		if g.PricePermille > 0 && g.PricePermille < 1000 {
			w.text(fmt.Sprintf(m.PriceOfList, permille(g.PricePermille)))
		}
		w.raw(`</td>`)
	}
	w.raw(`<td class="nw">`)
	if g.LastRunAt != nil {
		local := g.LastRunAt.In(b.loc)
		w.raw(`<span title="`)
		w.raw(local.Format("2006-01-02 15:04"))
		w.raw(`">`)
		w.raw(local.Format("2006-01-02"))
		w.raw(`</span>`)
	} else {
		w.text(m.NotRun)
	}
	w.raw(`</td>`)

	// One cell per column: the median and its share of the fleet median.
	byCol := make([]*apiv1.TransparencyResult, len(t.Columns))
	for i := range g.Results {
		r := &g.Results[i]
		byCol[t.cols[probeKey{r.Probe, r.Setup}]] = r
	}
	for _, r := range byCol {
		if r == nil {
			w.raw(`<td class="r muted"`)
			if len(g.Results) == 0 {
				w.raw(` title="`)
				w.text(m.NoResults)
				w.raw(`"`)
			}
			w.raw(`>` + dash + `</td>`)
			continue
		}
		label, class := m.outcome(r.Outcome)
		title := fmt.Sprintf(m.CellTitle, label, r.Runs, figure(r.Min, r.Unit), figure(r.Max, r.Unit))
		if r.Provisional {
			title += " · " + m.Provisional
		}
		w.raw(`<td class="r `)
		w.raw(class)
		w.raw(`" title="`)
		w.text(title)
		w.raw(`">`)
		w.raw(figure(r.Median, r.Unit))
		if r.Provisional {
			w.raw(`*`)
		}
		if p := percent(r.FleetRatio); p != dash {
			w.raw(`<br><small>`)
			w.raw(p)
			w.raw(`</small>`)
		}
		w.raw(`</td>`)
	}

	w.raw(`<td>`)
	w.text(throttleReasons(g.Results))
	w.raw(`</td><td>`)
	if len(g.History) > 0 {
		b.history(w, t, g.History)
	}
	w.raw("</td></tr>\n")
}

// throttleReasons is every throttle reason of the results, sorted, once.
func throttleReasons(results []apiv1.TransparencyResult) string {
	var all []string
	for i := range results {
		for _, t := range results[i].Throttle {
			if !contains(all, t) {
				all = append(all, t)
			}
		}
	}
	sort.Strings(all)
	return strings.Join(all, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// history writes a card's earlier runs, folded: a small table of each
// run's date, trigger, verdict and medians by probe.
func (b *builder) history(w *rowWriter, t *typeView, hist []apiv1.TransparencyHistory) {
	m := b.m
	// The probes any run measured: the type's order, then others by name.
	var probes, extra []string
	for _, p := range t.order {
		for i := range hist {
			if _, ok := hist[i].Medians[p]; ok {
				probes = append(probes, p)
				break
			}
		}
	}
	for i := range hist {
		for p := range hist[i].Medians {
			if !contains(t.order, p) && !contains(extra, p) {
				extra = append(extra, p)
			}
		}
	}
	sort.Strings(extra)
	probes = append(probes, extra...)

	w.raw(`<details><summary>`)
	w.text(fmt.Sprintf(m.Runs, len(hist)))
	w.raw(`</summary><table class="hist"><tr><th>`)
	w.text(m.HistDate)
	w.raw(`</th><th>`)
	w.text(m.HistTrigger)
	w.raw(`</th><th>`)
	w.text(m.HistVerdict)
	w.raw(`</th>`)
	for _, p := range probes {
		w.raw(`<th>`)
		w.text(m.probe(p))
		if u := t.units[p]; u != "" {
			w.raw(`<br><small>`)
			w.text(u)
			w.raw(`</small>`)
		}
		w.raw(`</th>`)
	}
	w.raw(`</tr>`)
	for i := range hist {
		h := &hist[i]
		local := h.At.In(b.loc)
		label, class := m.outcome(h.Outcome)
		w.raw(`<tr><td>`)
		w.raw(local.Format("2006-01-02"))
		w.raw(`</td><td>`)
		w.text(m.reason(h.Reason))
		w.raw(`</td><td class="`)
		w.raw(class)
		w.raw(`">`)
		w.text(label)
		w.raw(`</td>`)
		for _, p := range probes {
			w.raw(`<td>`)
			if v, ok := h.Medians[p]; ok {
				w.raw(figure(v, t.units[p]))
			} else {
				w.raw(dash)
			}
			w.raw(`</td>`)
		}
		w.raw(`</tr>`)
	}
	w.raw(`</table></details>`)
}
