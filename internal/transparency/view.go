package transparency

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// This file turns the report into the page's view: every figure formatted
// and every label looked up, so that the template only places strings. The
// card rows, whose number grows with the fleet, are written by rows.go when
// the template reaches them.

// Default verdict bands, for a report that leaves them out.
const (
	defaultPassRatio = 0.95
	defaultWarnRatio = 0.90
)

type pageView struct {
	M                 *messages
	JSONPath, CSVPath string
	Synthetic         bool
	Generated         string
	Method2           string
	Notes             []string
	Types             []*typeView
	Delisted          []briefView
}

type typeView struct {
	Anchor   string
	ID, Name string
	Counts   []countView
	Probes   []probeView
	Sources  []sourceView
	Columns  []columnView
	PriceCol bool
	Hosts    []hostView

	cols  map[probeKey]int  // a column's index by probe and setup
	units map[string]string // a probe's unit (its first column's)
	order []string          // the order of the probes in a card's history
}

type countView struct {
	Label string
	N     int
}

type probeView struct {
	Label, Setup, PerMeasure, Unit string
	Spec, SpecSource               string
	SpecNote                       int // footnote number, 0 without a source
	SpecNoteID                     string
	Healthy, HealthySource         string
	HealthyNote                    int
	HealthyNoteID                  string
	Median, Range, Band, SpecRatio string
	Cards                          int
}

type sourceView struct {
	ID, Text string
}

type columnView struct {
	Label, Setup, Unit string
	ShowSetup          bool // another column has the same label
}

// hostView is one host: its heading's fields, and its card rows, which
// Rows writes straight from the report when the template reaches them.
type hostView struct {
	ID, Name, Zone string
	host           *apiv1.TransparencyHost
	typ            *typeView
	b              *builder
}

type briefView struct {
	Hash, Type, Host, State, StateClass, Price, Since, Reason string
}

// probeKey names a probe measured in one setup: the report's columns.
type probeKey struct{ probe, setup string }

// builder holds what every part of one page's view shares.
type builder struct {
	m   *messages
	loc *time.Location
}

func newPageView(t *apiv1.Transparency, lang string) *pageView {
	b := &builder{m: messagesFor(lang), loc: shanghai()}
	pass, warn := t.PassRatio, t.WarnRatio
	if pass == 0 {
		pass = defaultPassRatio
	}
	if warn == 0 {
		warn = defaultWarnRatio
	}
	p, w := share(pass), share(warn)
	v := &pageView{
		M:         b.m,
		JSONPath:  JSONPath,
		CSVPath:   CSVPath,
		Synthetic: t.Synthetic,
		Generated: fmt.Sprintf(b.m.Generated, b.dateTime(t.GeneratedAt)),
		Method2:   fmt.Sprintf(b.m.Method2, p, w, p, w),
		Notes:     t.Notes,
		Types:     make([]*typeView, len(t.Types)),
	}
	names := make(map[string]string, len(t.Types))
	for i := range t.Types {
		v.Types[i] = b.typeView(&t.Types[i], i)
		names[t.Types[i].ID] = t.Types[i].Name
	}
	for _, d := range t.Delisted {
		v.Delisted = append(v.Delisted, b.briefView(d, names))
	}
	return v
}

// share is a ratio as a percentage with as few decimals as it needs
// (0.95 is 95%, 0.925 is 92.5%).
func share(r float64) string {
	p := percent(r)
	if strings.HasSuffix(p, ".0%") {
		return strings.TrimSuffix(p, ".0%") + "%"
	}
	return p
}

func (b *builder) dateTime(t time.Time) string {
	if t.IsZero() {
		return dash
	}
	return t.In(b.loc).Format("2006-01-02 15:04")
}

func (b *builder) typeView(ty *apiv1.TransparencyType, i int) *typeView {
	m := b.m
	v := &typeView{
		Anchor: "type-" + strconv.Itoa(i+1),
		ID:     ty.ID,
		Name:   ty.Name,
		Counts: []countView{
			{m.CountGPUs, ty.GPUs}, {m.Certified, ty.Certified}, {m.Warn, ty.Warn},
			{m.Pending, ty.Pending}, {m.Degraded, ty.Degraded}, {m.Delisted, ty.Delisted},
			{m.Uncertified, ty.Uncertified},
		},
	}
	if v.Name == "" {
		v.Name = ty.ID
	}

	// Sources are numbered footnotes; one source cited twice is one note.
	notes := map[string]int{}
	cite := func(source string) (int, string) {
		if source == "" {
			return 0, ""
		}
		n, ok := notes[source]
		if !ok {
			n = len(v.Sources) + 1
			notes[source] = n
			v.Sources = append(v.Sources, sourceView{ID: v.Anchor + "-src-" + strconv.Itoa(n), Text: source})
		}
		return n, v.Anchor + "-src-" + strconv.Itoa(n)
	}

	// Columns of the card tables: the type's probes, then any probe and
	// setup a card reports that the type's statistics lack.
	cols := map[probeKey]int{}
	units := map[string]string{}
	addCol := func(probe, setup, unit string) {
		k := probeKey{probe, setup}
		if _, ok := cols[k]; ok {
			return
		}
		cols[k] = len(v.Columns)
		v.Columns = append(v.Columns, columnView{Label: m.probe(probe), Setup: setup, Unit: unit})
		if _, ok := units[probe]; !ok {
			units[probe] = unit
		}
	}

	for _, p := range ty.Probes {
		pv := probeView{
			Label:     m.probe(p.Probe),
			Setup:     p.Setup,
			Unit:      p.Unit,
			Spec:      dash,
			Healthy:   dash,
			Median:    figure(p.FleetMedian, p.Unit),
			Range:     figure(p.FleetMin, p.Unit) + " – " + figure(p.FleetMax, p.Unit),
			Band:      fmt.Sprintf(m.Band, figure(p.BandPass, p.Unit), figure(p.BandWarn, p.Unit)),
			SpecRatio: percent(p.SpecRatio),
			Cards:     p.Cards,
		}
		if p.GPUs > 1 {
			pv.PerMeasure = fmt.Sprintf(m.PerMeasure, p.GPUs)
		}
		if s := p.Spec; s != nil && s.Value != 0 {
			pv.Spec = referenceFigure(s, p.Unit)
			pv.SpecSource = s.Source
			pv.SpecNote, pv.SpecNoteID = cite(s.Source)
		}
		if h := p.Healthy; h != nil && h.Value != 0 {
			pv.Healthy = referenceFigure(h, p.Unit)
			pv.HealthySource = h.Source
			pv.HealthyNote, pv.HealthyNoteID = cite(h.Source)
		}
		if p.Cards == 0 {
			pv.Median, pv.Range, pv.Band = dash, dash, dash
		}
		v.Probes = append(v.Probes, pv)
		addCol(p.Probe, p.Setup, p.Unit)
	}
	for hi := range ty.Hosts {
		for gi := range ty.Hosts[hi].GPUs {
			g := &ty.Hosts[hi].GPUs[gi]
			for _, r := range g.Results {
				addCol(r.Probe, r.Setup, r.Unit)
			}
			if g.PricePermille > 0 && g.PricePermille < 1000 {
				v.PriceCol = true
			}
		}
	}

	labels := map[string]int{}
	for _, c := range v.Columns {
		labels[c.Label]++
	}
	for i := range v.Columns {
		v.Columns[i].ShowSetup = labels[v.Columns[i].Label] > 1 && v.Columns[i].Setup != ""
	}
	v.cols, v.units, v.order = cols, units, historyOrder(units)
	v.Hosts = make([]hostView, len(ty.Hosts))
	for hi := range ty.Hosts {
		h := &ty.Hosts[hi]
		v.Hosts[hi] = hostView{ID: h.ID, Name: h.Name, Zone: h.Zone, host: h, typ: v, b: b}
		if h.Name == "" {
			v.Hosts[hi].Name = h.ID
		}
	}
	return v
}

// referenceFigure is a spec or healthy figure: its value, or its range
// when it has one, in the probe's unit.
func referenceFigure(f *apiv1.TransparencyFigure, unit string) string {
	if f.Unit != "" {
		unit = f.Unit
	}
	low, high := f.Value, f.Value
	if f.Low != 0 {
		low = f.Low
	}
	if f.High != 0 {
		high = f.High
	}
	if low != high {
		return figure(low, unit) + " – " + figure(high, unit)
	}
	return figure(f.Value, unit)
}

// historyOrder is the order the medians of an earlier run are listed in:
// the known probes in report order, then the type's others by name.
func historyOrder(units map[string]string) []string {
	order := []string{probeGEMMBF16, probeGEMMFP8, probeCopyD2D, probeCopyH2D, probeCopyD2H,
		probeP2P, probeResNet50, probeNCCLAllReduce}
	known := make(map[string]bool, len(order))
	for _, p := range order {
		known[p] = true
	}
	var other []string
	for p := range units {
		if !known[p] {
			other = append(other, p)
		}
	}
	sort.Strings(other)
	return append(order, other...)
}

func (b *builder) briefView(d apiv1.TransparencyGPUBrief, names map[string]string) briefView {
	v := briefView{Hash: d.Hash, Type: d.Type, Host: d.Host, Reason: d.Reason, Since: b.dateTime(d.Since)}
	if n, ok := names[d.Type]; ok && n != "" {
		v.Type = n
	}
	v.State, v.StateClass = b.m.state(d.State)
	if d.PricePermille > 0 && d.PricePermille < 1000 {
		v.Price = fmt.Sprintf(b.m.PriceOfList, permille(d.PricePermille))
	}
	return v
}
