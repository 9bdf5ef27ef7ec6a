package web

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/transparency"
)

// Page is what every template sees: the viewer, the language, the CSRF
// token, and the page's own data.
type Page struct {
	site    *Site
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
func (p *Page) T(key string, args ...any) string { return p.site.msgs.text(p.Lang, key, args...) }

// Has reports whether key is a message (a page looks up a service's
// word that may have none).
func (p *Page) Has(key string) bool { return p.site.msgs.has(key) }

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
	if key := prefix + word; p.site.msgs.has(key) {
		return p.T(key)
	}
	return word
}

// Probe is a benchmark probe's name in the page's language.
func (p *Page) Probe(probe string) string { return transparency.ProbeLabel(probe, p.Lang) }

// IsOperator reports whether the viewer is an operator.
func (p *Page) IsOperator() bool { return p.Account != nil && p.Account.Role == gpurent.RoleOperator }

// Context is the request's context.
func (p *Page) Context() context.Context { return p.r.Context() }

// ErrorData is the error page's data.
type ErrorData struct {
	Title  string
	Detail string
}

// Location is where times are shown: the billing time zone.
func Location() *time.Location {
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		return time.FixedZone("CST", 8*3600)
	}
	return loc
}

// funcs are the templates' functions.
func funcs() template.FuncMap {
	loc := Location()
	return template.FuncMap{
		// cny shows fen as yuan: ¥1,234.56.
		"cny": func(fen int64) string { return money.Format(fen) },
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

// parsePages parses every room's page template (templates/NAME.html in
// each of rooms) with the layout; two rooms naming the same page is a bug.
func parsePages(rooms []fs.FS) (map[string]*template.Template, error) {
	layout, err := template.New("layout.html").Funcs(funcs()).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("console: layout: %w", err)
	}
	pages := map[string]*template.Template{}
	own := fs.FS(templateFS)
	for _, room := range append([]fs.FS{own}, rooms...) {
		files, err := fs.Glob(room, "templates/*.html")
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			name := strings.TrimSuffix(path.Base(f), ".html")
			if room == own && name == "layout" {
				continue
			}
			if _, dup := pages[name]; dup {
				return nil, fmt.Errorf("console: page %s is defined twice", name)
			}
			t, err := layout.Clone()
			if err != nil {
				return nil, err
			}
			if _, err := t.ParseFS(room, f); err != nil {
				return nil, fmt.Errorf("console: page %s: %w", name, err)
			}
			pages[name] = t
		}
	}
	return pages, nil
}

// Render writes page name with data, status 200.
func (s *Site) Render(w http.ResponseWriter, r *http.Request, p *Page, name string, data any) {
	s.RenderStatus(w, r, p, http.StatusOK, name, data)
}

// RenderStatus renders into a buffer first, so that a template error never
// sends half a page.
func (s *Site) RenderStatus(w http.ResponseWriter, r *http.Request, p *Page, status int, name string, data any) {
	t, ok := s.pages[name]
	if !ok {
		s.log.Error("console: no such page template", "page", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	p.Data = data
	if ed, ok := data.(ErrorData); ok && p.Title == "" {
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

// NotFound is the 404 page; another account's instance gets it too.
func (s *Site) NotFound(w http.ResponseWriter, r *http.Request, p *Page) {
	s.RenderStatus(w, r, p, http.StatusNotFound, "error", ErrorData{Title: p.T("err.not_found")})
}

// Fail answers a service error with the page of its code, in the page's
// language, with the service's detail beneath.
func (s *Site) Fail(w http.ResponseWriter, r *http.Request, p *Page, err error) {
	status := StatusOf(err)
	if status == 0 {
		status = http.StatusInternalServerError
		s.log.Error("console: request failed", "path", r.URL.Path, "err", err)
	}
	if status == 404 {
		s.NotFound(w, r, p)
		return
	}
	s.RenderStatus(w, r, p, status, "error", ErrorData{Title: p.ErrText(err), Detail: DetailOf(err)})
}

// StatusOf is the HTTP status a page answers a service error with: 404
// for forbidden too (another account's things are not found); 0 for an
// internal error.
func StatusOf(err error) int {
	switch code := gpurent.ErrorCode(err); code {
	case "", gpurent.CodeInternal, gpurent.CodeTooManyRequests:
		return 0
	case gpurent.CodeForbidden:
		// The console's one rule on top of the table: another account's
		// things look as if they were not there.
		return gpurent.HTTPStatus(gpurent.CodeNotFound)
	default:
		return gpurent.HTTPStatus(code)
	}
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

// DetailOf is the service's own message of err, for the line under the
// localized one; internal errors show none.
func DetailOf(err error) string {
	if gpurent.ErrorCode(err) == gpurent.CodeInternal {
		return ""
	}
	return gpurent.ErrorMessage(err)
}

// FormError sets the page's error from a service error: the localized
// code and the service's detail.
func (p *Page) FormError(err error) {
	p.Error = p.ErrText(err)
	if d := DetailOf(err); d != "" {
		p.Error += " " + d
	}
}
