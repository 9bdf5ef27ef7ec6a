// Package operator is the console's operator room: the /ops pages (the
// overview, the fleet, prices, academic applications, accounts and
// vouchers, incidents, revenue), seen by operators only. Each page calls
// the same services the API's operator routes call; the plumbing
// (rendering, sessions, CSRF, messages) is package web's.
package operator

import (
	"context"
	"embed"
	"io/fs"
	"log/slog"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/academic"
	"github.com/gpurent/gpurent/internal/auth"
	"github.com/gpurent/gpurent/internal/certification"
	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/fleet"
	"github.com/gpurent/gpurent/internal/imagecatalog"
	"github.com/gpurent/gpurent/internal/incident"
	"github.com/gpurent/gpurent/internal/metering"
	"github.com/gpurent/gpurent/internal/pricing"
	"github.com/gpurent/gpurent/internal/wallet"
)

// templateFS holds this room's page templates, one per page.
//
//go:embed templates/*.html
var templateFS embed.FS

// Config holds the services the operator pages call (the console's
// Config says what each is). A nil optional service hides its pages.
type Config struct {
	Auth          *auth.Service
	Fleet         *fleet.Service
	Billing       *pricing.Service
	Wallet        *wallet.Service
	Metering      *metering.Service
	Academic      *academic.Service
	Incidents     incident.API
	Certification *certification.Service
	// Images is the base image catalog (nil: no /ops/images page).
	Images    *imagecatalog.Service
	Store     Store
	PublicURL string
	Logger    *slog.Logger
	Now       func() time.Time
}

// Store is the little the operator pages read beside their services: a
// payment's account and a voucher by its code.
type Store interface {
	AccountByID(ctx context.Context, id string) (*gpurent.Account, error)
	VoucherByCode(ctx context.Context, code string) (*gpurent.Voucher, error)
}

// Pages are the operator room's handlers. Make them with New.
type Pages struct {
	cfg  Config
	site *web.Site
	log  *slog.Logger
}

// New makes the operator pages over site, whose pages and messages
// include Templates and Messages. cfg comes filled (the console fills the
// logger and the clock).
func New(cfg Config, site *web.Site) *Pages {
	return &Pages{cfg: cfg, site: site, log: cfg.Logger}
}

// Templates are the room's page templates: templates/NAME.html, one per
// page.
func Templates() fs.FS { return templateFS }

// Messages are the room's message groups.
func Messages() []map[string]web.Pair {
	return []map[string]web.Pair{opsMessages()}
}

// Routes are the room's pages and form actions.
func (s *Pages) Routes() []web.Route { return s.opsRoutes() }
