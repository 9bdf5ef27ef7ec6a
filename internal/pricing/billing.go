// Package pricing turns the pure rating engine into the product's prices: it
// keeps the versioned price book in the store (seeded from the catalog's list
// prices on first use), lets operators add versions that take effect at a
// future instant, and quotes planned rentals exactly as usage will be rated.
//
// Metering, live debits and statements build on it (see docs/billing.md for
// what is built and what is not yet).
package pricing

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rating"
)

// Store is what the billing service reads and writes: the catalog's GPU
// types and the price versions.
type Store interface {
	gpurent.CatalogStore
	gpurent.PriceStore
}

// Config configures the service.
type Config struct {
	Store  Store
	Now    func() time.Time
	Logger *slog.Logger
	// MaxQuote bounds a quote's duration (default 366 days).
	MaxQuote time.Duration
}

// Service is the billing service. It is safe for concurrent use.
type Service struct {
	cfg Config

	mu   sync.Mutex
	book *rating.Book // nil: read it from the store
}

// New makes the service.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxQuote <= 0 {
		cfg.MaxQuote = 366 * 24 * time.Hour
	}
	return &Service{cfg: cfg}
}

// Book returns the price book. The first call on an empty store seeds it
// with the default version (the catalog's list prices, off-peak 70% and
// academic 80% of them), effective from the Unix epoch so every past and
// future instant has a price.
func (s *Service) Book(ctx context.Context) (*rating.Book, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.book != nil {
		return s.book, nil
	}
	vs, err := s.cfg.Store.PriceVersions(ctx)
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		if err := s.seed(ctx); err != nil {
			return nil, err
		}
		if vs, err = s.cfg.Store.PriceVersions(ctx); err != nil {
			return nil, err
		}
	}
	versions := make([]rating.Version, 0, len(vs))
	for _, pv := range vs {
		v, err := DecodeVersion(pv.Document)
		if err != nil {
			return nil, gpurent.WrapError(gpurent.CodeInternal, err, "stored price version %s is unreadable", pv.ID)
		}
		versions = append(versions, v)
	}
	loc, err := rating.LoadBillingZone()
	if err != nil {
		return nil, err
	}
	b, err := rating.NewBook(loc, versions...)
	if err != nil {
		return nil, err
	}
	s.book = b
	return b, nil
}

// seed stores the default version; a concurrent seed by another replica
// (same effective instant) is fine.
func (s *Service) seed(ctx context.Context) error {
	types, err := s.cfg.Store.GPUTypes(ctx)
	if err != nil {
		return err
	}
	b, err := rating.DefaultBook(types, time.Unix(0, 0).UTC())
	if err != nil {
		return err
	}
	vs := b.Versions()
	doc, err := EncodeVersion(vs[0])
	if err != nil {
		return err
	}
	err = s.cfg.Store.AddPriceVersion(ctx, &gpurent.PriceVersion{EffectiveAt: vs[0].Effective, Document: doc,
		Note: "defaults: catalog list prices, off-peak 70%, academic 80%", CreatedAt: s.cfg.Now()})
	if gpurent.IsCode(err, gpurent.CodeConflict) {
		return nil
	}
	return err
}

// Versions lists the price versions, oldest first.
func (s *Service) Versions(ctx context.Context) ([]rating.Version, error) {
	b, err := s.Book(ctx)
	if err != nil {
		return nil, err
	}
	return b.Versions(), nil
}

// AddVersion adds a price version (operators only). It takes effect at
// v.Effective, which must not be in the past: prices never change backwards.
func (s *Service) AddVersion(ctx context.Context, acc *gpurent.Account, v rating.Version, note string) (rating.Version, error) {
	if acc == nil {
		return rating.Version{}, gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	if acc.Role != gpurent.RoleOperator {
		return rating.Version{}, gpurent.Errorf(gpurent.CodeForbidden, "only operators set prices")
	}
	b, err := s.Book(ctx)
	if err != nil {
		return rating.Version{}, err
	}
	types, err := s.cfg.Store.GPUTypes(ctx)
	if err != nil {
		return rating.Version{}, err
	}
	for _, t := range types {
		if _, ok := v.Types[t.ID]; !ok {
			return rating.Version{}, gpurent.Errorf(gpurent.CodeInvalid, "the price list must price every GPU type; %s is missing", t.ID)
		}
	}
	now := s.cfg.Now()
	nb, err := b.Amend(v, now)
	if err != nil {
		return rating.Version{}, err
	}
	added := nb.Versions()[len(nb.Versions())-1] // Amend appends: versions go in effective order
	doc, err := EncodeVersion(added)
	if err != nil {
		return rating.Version{}, err
	}
	if err := s.cfg.Store.AddPriceVersion(ctx, &gpurent.PriceVersion{EffectiveAt: added.Effective, Document: doc,
		Note: note, CreatedBy: acc.ID, CreatedAt: now}); err != nil {
		return rating.Version{}, err
	}
	s.mu.Lock()
	s.book = nil // re-read: another replica may have added one too
	s.mu.Unlock()
	s.cfg.Logger.Info("price version added", "effective", added.Effective, "by", acc.ID, "note", note)
	return added, nil
}

// QuoteRequest asks what a planned rental costs.
type QuoteRequest struct {
	TypeID   string
	Count    int
	Start    time.Time // zero: now
	Duration time.Duration
	// PricePermille prices GPUs listed as degraded at this share of the
	// list price (permille; 0 or 1000: the full price).
	PricePermille int
}

// Quotes are a quote at list prices and, beside it, at academic prices.
type Quotes struct {
	List     rating.Quotation
	Academic rating.Quotation
	// AcademicApplies says the account is verified academic, so Academic
	// is the price it pays.
	AcademicApplies bool
	Rule            rating.Rule
}

// HourlyFen is the list price of count GPUs of typeID for an hour from at
// (what the incident service computes SLA credits from).
func (s *Service) HourlyFen(ctx context.Context, typeID string, count int, at time.Time) (int64, error) {
	q, err := s.Quote(ctx, nil, QuoteRequest{TypeID: typeID, Count: count, Start: at, Duration: time.Hour})
	if err != nil {
		return 0, err
	}
	return q.List.HourlyFen, nil
}

// Quote prices a planned rental on every plan, at list and academic prices.
func (s *Service) Quote(ctx context.Context, acc *gpurent.Account, r QuoteRequest) (*Quotes, error) {
	if r.Duration <= 0 || r.Duration > s.cfg.MaxQuote {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "duration must be between 1 s and %d days", int(s.cfg.MaxQuote/(24*time.Hour)))
	}
	if r.Duration%time.Second != 0 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "duration must be whole seconds")
	}
	if r.Start.IsZero() {
		r.Start = s.cfg.Now()
	}
	r.Start = r.Start.UTC().Truncate(time.Second)
	if _, err := s.cfg.Store.GPUType(ctx, r.TypeID); gpurent.IsCode(err, gpurent.CodeNotFound) {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "unknown GPU type %q (see `gpurent gpus`)", r.TypeID)
	} else if err != nil {
		return nil, err
	}
	if r.Count < 0 || r.Count > 8 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "gpu_count must be 0 (no-GPU mode) to 8, got %d", r.Count)
	}
	b, err := s.Book(ctx)
	if err != nil {
		return nil, err
	}
	if r.PricePermille < 0 || r.PricePermille > 1000 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "price_permille must be 0 (full price) to 1000, got %d", r.PricePermille)
	}
	list, err := rating.QuoteShare(b, r.TypeID, r.Count, r.Start, r.Duration, false, r.PricePermille)
	if err != nil {
		return nil, err
	}
	academic, err := rating.QuoteShare(b, r.TypeID, r.Count, r.Start, r.Duration, true, r.PricePermille)
	if err != nil {
		return nil, err
	}
	q := &Quotes{List: list, Academic: academic, AcademicApplies: acc != nil && acc.Academic(r.Start)}
	for _, v := range b.Versions() {
		if !v.Effective.After(r.Start) {
			q.Rule = v.Rule
		}
	}
	return q, nil
}
