package web

import (
	"context"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"

	"github.com/gpurent/gpurent"
)

// templateFS holds the layout and the pages every room shares (the error
// page).
//
//go:embed templates/*.html
var templateFS embed.FS

// Authenticator resolves a session cookie's login secret to its account
// (the auth service is one).
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (*gpurent.Account, error)
}

// SiteConfig is what NewSite builds the plumbing from.
type SiteConfig struct {
	// Pages are the rooms' page templates: each a file system with one
	// templates/NAME.html per page, rendered by that NAME.
	Pages []fs.FS
	// Messages are the rooms' message groups (web adds the layout's and
	// the error pages').
	Messages []map[string]Pair
	// Auth resolves sessions (only Wrap needs it).
	Auth Authenticator
	// SecureCookies marks the cookies Secure (behind TLS); TrustProxy
	// takes the client address from X-Forwarded-For.
	SecureCookies bool
	TrustProxy    bool
	Logger        *slog.Logger
}

// Site is the plumbing the rooms share: the parsed pages, the messages and
// the cookies' settings. Make it with NewSite.
type Site struct {
	log        *slog.Logger
	msgs       *catalog
	pages      map[string]*template.Template
	auth       Authenticator
	secure     bool
	trustProxy bool
}

// NewSite parses every page with the layout and merges the messages; a
// page or a message defined twice is an error.
func NewSite(cfg SiteConfig) (*Site, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	msgs, err := newCatalog(append([]map[string]Pair{coreMessages()}, cfg.Messages...)...)
	if err != nil {
		return nil, err
	}
	pages, err := parsePages(cfg.Pages)
	if err != nil {
		return nil, err
	}
	return &Site{log: cfg.Logger, msgs: msgs, pages: pages, auth: cfg.Auth, secure: cfg.SecureCookies,
		trustProxy: cfg.TrustProxy}, nil
}

// Page is a new page for request r in lang, as Wrap makes one (tests make
// their own with it).
func (s *Site) Page(r *http.Request, lang string) *Page {
	p := &Page{site: s, Lang: lang, r: r}
	if r != nil {
		p.Path = r.URL.Path
	}
	return p
}

// HasMessage reports whether key is a message.
func (s *Site) HasMessage(key string) bool { return s.msgs.has(key) }
