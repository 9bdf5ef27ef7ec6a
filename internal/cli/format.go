package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// formatTFLOPS renders a spec figure; zero means the card lacks it.
func formatTFLOPS(v float64) string {
	if v == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// writeJSON prints v as indented JSON, the API's field names unchanged.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// table writes aligned columns. Call row for each line, then flush.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		// A tab or newline in a value (a name, an event message) would
		// break the columns; show it as a space.
		cells[i] = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return ' '
			}
			return r
		}, c)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// orDash shows an empty value as "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// formatTime shows t in loc to the minute, or "-" for the zero time.
func formatTime(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(loc).Format("2006-01-02 15:04:05 MST")
}

// formatAgo renders how long before now t was: "42s ago", "5m ago",
// "3h ago", "2d ago"; "never" for nil.
func formatAgo(t *time.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "never"
	}
	d := now.Sub(*t)
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	default:
		return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
	}
}

// runtimeLabel names an instance's or host's runtime, marking the demo-only
// process runtime so nobody mistakes it for an isolated container.
func runtimeLabel(rt string) string {
	if rt == "process" {
		return "process (DEMO ONLY, no isolation)"
	}
	return orDash(rt)
}

// pairs writes "Key:  value" lines with aligned values.
type pairs struct {
	t *table
}

func newPairs(w io.Writer) *pairs {
	return &pairs{t: &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}}
}

// pair writes one line; an empty key continues the value above.
func (p *pairs) pair(key, value string) {
	if key != "" {
		key += ":"
	}
	p.t.row(key, value)
}

func (p *pairs) flush() error { return p.t.flush() }
