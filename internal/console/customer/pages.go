// Package customer is the console's customer room: the pages a customer
// uses (the market, renting, the dashboard and the instance pages,
// billing, the account, the rent-or-buy calculator) and the doors every
// visitor passes (sign in, sign up, sign out, the password reset). Each
// page calls the same services the API calls, with the viewer's account;
// the plumbing (rendering, sessions, CSRF, messages) is package web's.
package customer

import (
	"context"
	"embed"
	"io/fs"
	"log/slog"
	"time"

	"github.com/gpurent/gpurent/internal/academic"
	"github.com/gpurent/gpurent/internal/auth"
	"github.com/gpurent/gpurent/internal/certification"
	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/fleet"
	"github.com/gpurent/gpurent/internal/imagecatalog"
	"github.com/gpurent/gpurent/internal/incident"
	"github.com/gpurent/gpurent/internal/metering"
	"github.com/gpurent/gpurent/internal/pricing"
	"github.com/gpurent/gpurent/internal/ratelimit"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/sshkeys"
	"github.com/gpurent/gpurent/internal/wallet"
)

// templateFS holds this room's page templates, one per page.
//
//go:embed templates/*.html
var templateFS embed.FS

// Config holds the services the customer pages call and their settings
// (the console's Config says what each is). A nil optional service hides
// its pages.
type Config struct {
	Auth          *auth.Service
	Rental        *rental.Service
	Fleet         *fleet.Service
	Billing       *pricing.Service
	Wallet        *wallet.Service
	Metering      *metering.Service
	Academic      *academic.Service
	SSHKeys       *sshkeys.Service
	Incidents     incident.API
	Certification *certification.Service
	// Images is the operator's base image catalog, offered in the rent
	// form (nil: none offered).
	Images *imagecatalog.Service
	// Logs reads instances' logs for the logs panel (nil: the panel is off).
	Logs                  InstanceLogs
	SSHAddr               string
	SSHHostKeyFingerprint string
	PortLink              func(instanceID string, port int, accountID string, ttl time.Duration) string
	PortsOrigin           string
	PublicURL             string
	Mailer                Mailer
	SecureCookies         bool
	SessionTTL            time.Duration
	// Limiter counts credential checks (required).
	Limiter *ratelimit.Limiter
	Logger  *slog.Logger
	Now     func() time.Time
}

// Mailer sends one plain-text e-mail (mail.Sender is one).
type Mailer interface {
	Send(ctx context.Context, to, subject, body string) error
}

// Pages are the customer room's handlers. Make them with New.
type Pages struct {
	cfg  Config
	site *web.Site
	log  *slog.Logger
	// limit counts credential checks per client address and e-mail.
	limit *ratelimit.Limiter
	// streams counts the open live pages per account.
	streams streamCounter
}

// New makes the customer pages over site, whose pages and messages
// include Templates and Messages. cfg comes filled (the console fills the
// logger, the clock, the session lifetime and the limiter).
func New(cfg Config, site *web.Site) *Pages {
	return &Pages{cfg: cfg, site: site, log: cfg.Logger, limit: cfg.Limiter}
}

// Templates are the room's page templates: templates/NAME.html, one per
// page.
func Templates() fs.FS { return templateFS }

// Messages are the room's message groups.
func Messages() []map[string]web.Pair {
	return []map[string]web.Pair{authMessages(), accountMessages(), marketMessages(), instanceMessages()}
}

// Routes are the room's pages and form actions.
func (s *Pages) Routes() []web.Route {
	var out []web.Route
	for _, g := range [][]web.Route{s.authRoutes(), s.accountRoutes(), s.marketRoutes(), s.instanceRoutes()} {
		out = append(out, g...)
	}
	return out
}
