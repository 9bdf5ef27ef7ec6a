package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/transparency"
)

// Page is what every template sees: the viewer, the language, the CSRF
// token, and the page's own data.
type Page struct {
	s       *Server
	r       *http.Request
	Lang    string
	Path    string
	Account *gpurent.Account
	CSRF    string
	// Title is the page's title (already in the page's language); Nav the
	// menu entry to mark.
	Title string
	Nav   string
	// Flash is a one-line notice (success); Error a form error, both in the
	// page's language.
	Flash string
	Error string
	// Scripts are extra script files under /assets/ the page needs.
	Scripts []string
	Data    any
}

// T is the message key in the page's language.
func (p *Page) T(key string, args ...any) string { return p.s.msgs.text(p.Lang, key, args...) }

// Other is the language the switch offers.
func (p *Page) Other() string {
	if p.Lang == LangEN {
		return LangZH
	}
	return LangEN
}

// HTMLLang is the html element's lang attribute.
func (p *Page) HTMLLang() string {
	if p.Lang == LangEN {
		return "en"
	}
	return "zh-CN"
}

// Word is a service's word (an operation's kind or step, a state) in the
// page's language: the message prefix+word when there is one, else the
// word as the service said it.
func (p *Page) Word(prefix, word string) string {
	if key := prefix + word; p.s.msgs.has(key) {
		return p.T(key)
	}
	return word
}

// Probe is a benchmark probe's name in the page's language.
func (p *Page) Probe(probe string) string { return transparency.ProbeLabel(probe, p.Lang) }

// IsOperator reports whether the viewer is an operator (templates).
func (p *Page) IsOperator() bool { return p.isOperator() }

// errorData is the error page's data.
type errorData struct {
	Title  string
	Detail string
}

// location is where times are shown: the billing time zone.
func location() *time.Location {
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		return time.FixedZone("CST", 8*3600)
	}
	return loc
}

func (s *Server) funcs() template.FuncMap {
	loc := location()
	return template.FuncMap{
		// cny shows fen as yuan: ¥1,234.56.
		"cny": func(fen int64) string { return formatCNY(fen) },
		// when shows a time in Beijing time to the minute; "-" for none.
		"when": func(t any) string {
			switch v := t.(type) {
			case time.Time:
				if v.IsZero() {
					return "-"
				}
				return v.In(loc).Format("2006-01-02 15:04")
			case *time.Time:
				if v == nil || v.IsZero() {
					return "-"
				}
				return v.In(loc).Format("2006-01-02 15:04")
			}
			return "-"
		},
		"pct":      func(r float64) string { return strconv.FormatFloat(r*100, 'f', 1, 64) + "%" },
		"permille": func(p int) string { return strconv.Itoa(p/10) + "." + strconv.Itoa(p%10) + "%" },
		"num": func(v float64, decimals int) string {
			return strconv.FormatFloat(v, 'f', decimals, 64)
		},
		"join": strings.Join,
		"add":  func(a, b int) int { return a + b },
	}
}

// formatCNY shows fen as yuan with thousands separators: ¥1,234.56,
// -¥3.00.
func formatCNY(fen int64) string {
	sign := ""
	if fen < 0 {
		sign, fen = "-", -fen
	}
	yuan := strconv.FormatInt(fen/100, 10)
	var b strings.Builder
	for i, c := range yuan {
		if i > 0 && (len(yuan)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return fmt.Sprintf("%s¥%s.%02d", sign, b.String(), fen%100)
}

// parsePages parses every page template with the layout.
func (s *Server) parsePages() (map[string]*template.Template, error) {
	layout, err := template.New("layout.html").Funcs(s.funcs()).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("console: layout: %w", err)
	}
	files, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if name == "layout" {
			continue
		}
		t, err := layout.Clone()
		if err != nil {
			return nil, err
		}
		if _, err := t.ParseFS(templateFS, f); err != nil {
			return nil, fmt.Errorf("console: page %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// render writes page name with data, status 200.
func (s *Server) render(w http.ResponseWriter, r *http.Request, p *Page, name string, data any) {
	s.renderStatus(w, r, p, http.StatusOK, name, data)
}

// renderStatus renders into a buffer first, so that a template error never
// sends half a page.
func (s *Server) renderStatus(w http.ResponseWriter, r *http.Request, p *Page, status int, name string, data any) {
	t, ok := s.pages[name]
	if !ok {
		s.log.Error("console: no such page template", "page", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	p.Data = data
	if ed, ok := data.(errorData); ok && p.Title == "" {
		p.Title = ed.Title
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		s.log.Error("console: render", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Language", p.HTMLLang())
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// notFound is the 404 page; another account's instance gets it too.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request, p *Page) {
	s.renderStatus(w, r, p, http.StatusNotFound, "error", errorData{Title: p.T("err.not_found")})
}

// fail answers a service error with the page of its code, in the page's
// language, with the service's detail beneath.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, p *Page, err error) {
	status := statusOf(err)
	if status == 0 {
		status = http.StatusInternalServerError
		s.log.Error("console: request failed", "path", r.URL.Path, "err", err)
	}
	if status == 404 {
		s.notFound(w, r, p)
		return
	}
	s.renderStatus(w, r, p, status, "error", errorData{Title: p.ErrText(err), Detail: detailOf(err)})
}

// statusOf is the HTTP status a page answers a service error with: 404
// for forbidden too (another account's things are not found); 0 for an
// internal error.
func statusOf(err error) int {
	return map[gpurent.Code]int{gpurent.CodeInvalid: 400, gpurent.CodeNotFound: 404, gpurent.CodeConflict: 409,
		gpurent.CodeUnauthorized: 401, gpurent.CodeForbidden: 404, gpurent.CodePaymentRequired: 402,
		gpurent.CodeUnavailable: 503}[gpurent.ErrorCode(err)]
}

// ErrText is a service error's code in the page's language: what a form
// shows above the service's own words.
func (p *Page) ErrText(err error) string {
	switch gpurent.ErrorCode(err) {
	case gpurent.CodeInvalid:
		return p.T("err.invalid")
	case gpurent.CodeNotFound, gpurent.CodeForbidden:
		return p.T("err.not_found")
	case gpurent.CodeConflict:
		return p.T("err.conflict")
	case gpurent.CodePaymentRequired:
		return p.T("err.payment")
	case gpurent.CodeUnavailable:
		return p.T("err.unavailable")
	case gpurent.CodeUnauthorized:
		return p.T("err.login_first")
	}
	return p.T("err.internal")
}

// detailOf is the service's own message of err, for the line under the
// localized one; internal errors show none.
func detailOf(err error) string {
	if gpurent.ErrorCode(err) == gpurent.CodeInternal {
		return ""
	}
	return gpurent.ErrorMessage(err)
}

// formError sets the page's error from a service error: the localized
// code and the service's detail.
func (p *Page) formError(err error) {
	p.Error = p.ErrText(err)
	if d := detailOf(err); d != "" {
		p.Error += " " + d
	}
}
