package api

import (
	"bytes"
	"html"
	"html/template"
	"net/http"
	"reflect"
	"strings"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/sla"
)

// This file serves the public SLA: the terms as JSON and as an HTML page
// in English or Simplified Chinese, both from the one sla.Terms value the
// credit engine applies. The page is sla.Terms.Markdown rendered by a
// small Markdown subset renderer that escapes all text first.

// slaLanguages are the page's languages, the default first.
const (
	slaLangEN = "en"
	slaLangZH = "zh"
)

// termsOrDefault is t, or sla.DefaultTerms for the zero Terms (a server
// configured without terms).
func termsOrDefault(t sla.Terms) sla.Terms {
	if reflect.ValueOf(t).IsZero() {
		return sla.DefaultTerms()
	}
	return t
}

// handleSLATerms answers GET /api/v1/sla: the terms, public.
func (s *Server) handleSLATerms(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.sla)
}

// slaPageData fills the page template.
type slaPageData struct {
	Lang, Title       string
	Body              template.HTML
	OtherLang         string
	OtherLabel        string
	JSONLabel         string
	RenderedFromTerms string
}

// handleSLAPage answers GET /sla?lang=en|zh: the terms as a page, public.
// Without lang the first language of Accept-Language that the page has
// is used, else English.
func (s *Server) handleSLAPage(w http.ResponseWriter, r *http.Request) {
	lang, err := slaLang(r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	body, title := renderMarkdown(s.sla.Markdown(lang))
	d := slaPageData{Lang: lang, Title: title, Body: template.HTML(body)} // renderMarkdown escapes all text
	if lang == slaLangZH {
		d.OtherLang, d.OtherLabel, d.JSONLabel = slaLangEN, "English", "机器可读的条款（JSON）"
		if d.Title == "" {
			d.Title = "服务等级协议"
		}
	} else {
		d.OtherLang, d.OtherLabel, d.JSONLabel = slaLangZH, "中文", "The terms, machine-readable (JSON)"
		if d.Title == "" {
			d.Title = "Service level agreement"
		}
	}
	var buf bytes.Buffer
	if err := s.slaPage.Execute(&buf, d); err != nil {
		s.writeProblem(w, r, gpurent.WrapError(gpurent.CodeInternal, err, "rendering the SLA page failed"))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Language", lang)
	h.Set("Vary", "Accept-Language")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("Cache-Control", "public, max-age=300")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// slaLang picks the page's language: the lang query parameter (en, zh, or
// a regional form such as zh-CN), else Accept-Language, else English.
func slaLang(r *http.Request) (string, error) {
	if q := r.URL.Query(); q.Has("lang") {
		if l, ok := slaLangOf(q.Get("lang")); ok {
			return l, nil
		}
		return "", gpurent.Errorf(gpurent.CodeInvalid, "lang must be %s or %s, got %q", slaLangEN, slaLangZH, q.Get("lang"))
	}
	for _, part := range strings.Split(r.Header.Get("Accept-Language"), ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.ReplaceAll(strings.TrimSpace(params), " ", "") == "q=0" {
			continue
		}
		if l, ok := slaLangOf(tag); ok {
			return l, nil
		}
	}
	return slaLangEN, nil
}

// slaLangOf maps a language tag to a page language.
func slaLangOf(tag string) (string, bool) {
	primary, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(tag)), "-")
	switch primary {
	case slaLangEN, slaLangZH:
		return primary, true
	}
	return "", false
}

// newSLAPage parses the page template.
func newSLAPage() *template.Template {
	return template.Must(template.New("sla").Parse(`<!DOCTYPE html>
<html lang="{{.Lang}}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font:16px/1.6 system-ui,-apple-system,"PingFang SC","Microsoft YaHei",sans-serif;color:#1d2330;background:#fff;margin:0}
main{max-width:52rem;margin:0 auto;padding:1.5rem}
nav{text-align:right;font-size:.9rem}
table{border-collapse:collapse;margin:1rem 0}
th,td{border:1px solid #c9ced8;padding:.35rem .7rem;text-align:left}
th{background:#f2f4f8}
td.r,th.r{text-align:right}
td.c,th.c{text-align:center}
code{background:#f2f4f8;padding:0 .2rem;border-radius:3px}
footer{margin-top:2rem;font-size:.9rem;color:#596275}
</style>
</head>
<body>
<main>
<nav><a href="/sla?lang={{.OtherLang}}" hreflang="{{.OtherLang}}">{{.OtherLabel}}</a></nav>
{{.Body}}
<footer><a href="/api/v1/sla">{{.JSONLabel}}</a></footer>
</main>
</body>
</html>
`))
}

// renderMarkdown renders the subset of Markdown the SLA terms use as
// HTML, and returns the text of the first level-1 heading as the title.
// All text is escaped; the only markup in the output is the renderer's
// own. Blocks: ATX headings, paragraphs, bullet and numbered lists (an
// indented line continues an item), pipe tables (a header row when a
// delimiter row follows it, with :--: alignment), block quotes, fenced
// and indented code, and thematic breaks. Inline: **bold**, *emphasis*, `code`, backslash escapes and
// links to http(s), mailto or site-relative URLs.
func renderMarkdown(md string) (string, string) {
	var (
		b     strings.Builder
		title string
		para  []string
		list  string // "ul", "ol" or ""
		items []string
		quote []string
	)
	flushPara := func() {
		if len(para) > 0 {
			b.WriteString("<p>" + inlineMarkdown(strings.Join(para, " ")) + "</p>\n")
			para = nil
		}
	}
	flushList := func() {
		if list != "" {
			b.WriteString("<" + list + ">\n")
			for _, it := range items {
				b.WriteString("<li>" + inlineMarkdown(it) + "</li>\n")
			}
			b.WriteString("</" + list + ">\n")
			list, items = "", nil
		}
	}
	flushQuote := func() {
		if len(quote) > 0 {
			b.WriteString("<blockquote><p>" + inlineMarkdown(strings.Join(quote, " ")) + "</p></blockquote>\n")
			quote = nil
		}
	}
	flush := func() { flushPara(); flushList(); flushQuote() }

	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimRight(lines[i], " \t\r")
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			flush()
		case list == "" && len(para) == 0 && len(quote) == 0 && (strings.HasPrefix(line, "    ") || line[0] == '\t'):
			var code []string // an indented code block
			for ; i < len(lines) && (strings.HasPrefix(lines[i], "    ") || strings.HasPrefix(lines[i], "\t")); i++ {
				l := strings.TrimRight(lines[i], " \t\r")
				if strings.HasPrefix(l, "\t") {
					code = append(code, l[1:])
				} else {
					code = append(code, strings.TrimPrefix(l, "    "))
				}
			}
			i--
			b.WriteString("<pre><code>" + html.EscapeString(strings.Join(code, "\n")) + "</code></pre>\n")
		case strings.HasPrefix(trimmed, "```"):
			flush()
			var code []string
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
				code = append(code, strings.TrimRight(lines[i], "\r"))
			}
			b.WriteString("<pre><code>" + html.EscapeString(strings.Join(code, "\n")) + "</code></pre>\n")
		case headingLevel(trimmed) > 0:
			flush()
			n := headingLevel(trimmed)
			text := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(trimmed[n:]), "#"))
			if n == 1 && title == "" {
				title = plainInline(text)
			}
			tag := "h" + string(rune('0'+n))
			b.WriteString("<" + tag + ">" + inlineMarkdown(text) + "</" + tag + ">\n")
		case isThematicBreak(trimmed):
			flush()
			b.WriteString("<hr>\n")
		case strings.HasPrefix(trimmed, "|"):
			flush()
			var rows []string
			for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
				rows = append(rows, strings.TrimSpace(lines[i]))
			}
			i--
			b.WriteString(renderTable(rows))
		case strings.HasPrefix(trimmed, ">"):
			flushPara()
			flushList()
			quote = append(quote, strings.TrimSpace(strings.TrimPrefix(trimmed, ">")))
		case listItem(line) != "":
			flushPara()
			flushQuote()
			kind, text := listItem(line), listText(line)
			if list != kind {
				flushList()
				list = kind
			}
			items = append(items, text)
		case list != "" && (line[0] == ' ' || line[0] == '\t'):
			items[len(items)-1] += " " + trimmed // an indented line continues the item
		default:
			flushList()
			flushQuote()
			para = append(para, trimmed)
		}
	}
	flush()
	return b.String(), title
}

// headingLevel is n for a line "#…# text" with n (1–6) hashes, else 0.
func headingLevel(s string) int {
	n := 0
	for n < len(s) && s[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(s) && s[n] != ' ' && s[n] != '\t') {
		return 0
	}
	return n
}

// isThematicBreak says s is ---, *** or ___ (three or more).
func isThematicBreak(s string) bool {
	s = strings.ReplaceAll(s, " ", "")
	if len(s) < 3 {
		return false
	}
	return strings.Count(s, s[:1]) == len(s) && (s[0] == '-' || s[0] == '*' || s[0] == '_')
}

// listItem is "ul" or "ol" when line starts a list item, else "".
func listItem(line string) string {
	s := strings.TrimLeft(line, " \t")
	if len(s) >= 2 && (s[0] == '-' || s[0] == '*' || s[0] == '+') && (s[1] == ' ' || s[1] == '\t') {
		return "ul"
	}
	n := 0
	for n < len(s) && n < 9 && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n > 0 && n+1 < len(s) && (s[n] == '.' || s[n] == ')') && (s[n+1] == ' ' || s[n+1] == '\t') {
		return "ol"
	}
	return ""
}

// listText is a list item's text without its marker.
func listText(line string) string {
	s := strings.TrimLeft(line, " \t")
	if s[0] == '-' || s[0] == '*' || s[0] == '+' {
		return strings.TrimSpace(s[1:])
	}
	i := strings.IndexAny(s, ".)") // listItem found the digits and one of these
	return strings.TrimSpace(s[i+1:])
}

// renderTable renders pipe-table rows; a delimiter row (|---|:--:|) after
// the first row makes it the header and sets the columns' alignment.
func renderTable(rows []string) string {
	var b strings.Builder
	b.WriteString("<table>\n")
	var aligns []string
	body := rows
	if len(rows) >= 2 && isDelimiterRow(splitRow(rows[1])) {
		for _, c := range splitRow(rows[1]) {
			c = strings.TrimSpace(c)
			switch {
			case strings.HasPrefix(c, ":") && strings.HasSuffix(c, ":"):
				aligns = append(aligns, "c")
			case strings.HasSuffix(c, ":"):
				aligns = append(aligns, "r")
			default:
				aligns = append(aligns, "")
			}
		}
		b.WriteString("<thead>\n" + tableRow(splitRow(rows[0]), "th", aligns) + "</thead>\n")
		body = rows[2:]
	}
	if len(body) > 0 {
		b.WriteString("<tbody>\n")
		for _, r := range body {
			b.WriteString(tableRow(splitRow(r), "td", aligns))
		}
		b.WriteString("</tbody>\n")
	}
	b.WriteString("</table>\n")
	return b.String()
}

// splitRow splits "| a | b |" into its cells; \| is a literal bar.
func splitRow(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	if strings.HasSuffix(row, "|") && !strings.HasSuffix(row, `\|`) {
		row = row[:len(row)-1]
	}
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			cur.WriteByte('|')
			i++
		case row[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(row[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// isDelimiterRow says the cells are all like ---, :--, --: or :-:.
func isDelimiterRow(cells []string) bool {
	for _, c := range cells {
		c = strings.Trim(strings.TrimSpace(c), ":")
		if c == "" || strings.Trim(c, "-") != "" {
			return false
		}
	}
	return len(cells) > 0
}

func tableRow(cells []string, tag string, aligns []string) string {
	var b strings.Builder
	b.WriteString("<tr>")
	for i, c := range cells {
		open := "<" + tag + ">"
		if i < len(aligns) && aligns[i] != "" {
			open = "<" + tag + ` class="` + aligns[i] + `">`
		}
		b.WriteString(open + inlineMarkdown(c) + "</" + tag + ">")
	}
	b.WriteString("</tr>\n")
	return b.String()
}

// inlineMarkdown renders inline spans of s, escaping all text.
func inlineMarkdown(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		rest := s[i:]
		switch {
		case rest[0] == '\\' && len(rest) > 1 && strings.IndexByte("\\`*_[]()#|-.!>", rest[1]) >= 0:
			b.WriteString(html.EscapeString(rest[1:2]))
			i += 2
			continue
		case rest[0] == '`':
			if end := strings.IndexByte(rest[1:], '`'); end >= 0 {
				b.WriteString("<code>" + html.EscapeString(rest[1:1+end]) + "</code>")
				i += end + 2
				continue
			}
		case strings.HasPrefix(rest, "**"):
			if end := strings.Index(rest[2:], "**"); end > 0 {
				b.WriteString("<strong>" + inlineMarkdown(rest[2:2+end]) + "</strong>")
				i += end + 4
				continue
			}
		case rest[0] == '*': // not _, which identifiers such as tenant_fault hold
			if end := strings.IndexByte(rest[1:], '*'); end > 0 && rest[1] != ' ' {
				b.WriteString("<em>" + inlineMarkdown(rest[1:1+end]) + "</em>")
				i += end + 2
				continue
			}
		case rest[0] == '[':
			if text, url, n, ok := markdownLink(rest); ok {
				b.WriteString(`<a href="` + html.EscapeString(url) + `">` + inlineMarkdown(text) + "</a>")
				i += n
				continue
			}
		}
		// One character (a whole UTF-8 sequence is copied byte by byte,
		// which escaping leaves alone).
		b.WriteString(html.EscapeString(rest[:1]))
		i++
	}
	return b.String()
}

// markdownLink parses "[text](url)" at the start of s, for a URL that is
// http(s), mailto, site-relative or a fragment; n is its length.
func markdownLink(s string) (text, url string, n int, ok bool) {
	closeText := strings.Index(s, "](")
	if closeText < 1 {
		return "", "", 0, false
	}
	closeURL := strings.IndexByte(s[closeText+2:], ')')
	if closeURL < 1 {
		return "", "", 0, false
	}
	text, url = s[1:closeText], strings.TrimSpace(s[closeText+2:closeText+2+closeURL])
	lower := strings.ToLower(url)
	safe := strings.HasPrefix(lower, "https://") || strings.HasPrefix(lower, "http://") ||
		strings.HasPrefix(lower, "mailto:") || strings.HasPrefix(url, "#") ||
		(strings.HasPrefix(url, "/") && !strings.HasPrefix(url, "//"))
	if !safe || strings.ContainsAny(url, " \t\"'<>") {
		return "", "", 0, false
	}
	return text, url, closeText + 2 + closeURL + 1, true
}

// plainInline is s without inline markup, for the page title.
func plainInline(s string) string {
	return strings.NewReplacer("**", "", "`", "", "\\", "").Replace(s)
}
