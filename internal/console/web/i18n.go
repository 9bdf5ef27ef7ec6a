package web

import (
	"fmt"
	"net/http"
	"strings"
)

// The console's languages; Chinese is the default.
const (
	LangZH = "zh"
	LangEN = "en"
)

// langCookie keeps the visitor's choice of language.
const langCookie = "gpurent_lang"

// Pair is one message in Chinese and English.
type Pair [2]string

// catalog is every message by key, per language.
type catalog struct {
	zh, en map[string]string
}

// newCatalog merges the message groups; a key defined twice is a bug.
func newCatalog(groups ...map[string]Pair) (*catalog, error) {
	c := &catalog{zh: map[string]string{}, en: map[string]string{}}
	for _, g := range groups {
		for k, p := range g {
			if _, dup := c.zh[k]; dup {
				return nil, fmt.Errorf("console: message %q is defined twice", k)
			}
			if p[0] == "" || p[1] == "" {
				return nil, fmt.Errorf("console: message %q lacks a language", k)
			}
			c.zh[k], c.en[k] = p[0], p[1]
		}
	}
	return c, nil
}

// text is the message key in lang, formatted with args; a missing key shows
// itself (tests catch it), never an empty page element.
func (c *catalog) text(lang, key string, args ...any) string {
	m := c.zh
	if lang == LangEN {
		m = c.en
	}
	s, ok := m[key]
	if !ok {
		return "«" + key + "»"
	}
	if len(args) > 0 {
		return fmt.Sprintf(s, args...)
	}
	return s
}

// has reports whether key is a message.
func (c *catalog) has(key string) bool { _, ok := c.zh[key]; return ok }

// pickLang chooses the page's language: ?lang= (remembered in a cookie),
// else the cookie, else Chinese.
func pickLang(w http.ResponseWriter, r *http.Request, secure bool) string {
	if q := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("lang"))); q == LangZH || q == LangEN {
		http.SetCookie(w, &http.Cookie{Name: langCookie, Value: q, Path: "/", MaxAge: 365 * 24 * 3600,
			HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode})
		return q
	}
	if c, err := r.Cookie(langCookie); err == nil && (c.Value == LangZH || c.Value == LangEN) {
		return c.Value
	}
	return LangZH
}
