package app

import (
	"context"
	"time"

	"github.com/gpurent/gpurent/internal/billing"
	"github.com/gpurent/gpurent/internal/health"
	"github.com/gpurent/gpurent/internal/incident"
	"github.com/gpurent/gpurent/internal/sla"
)

// newIncidents wires the health and incident service: the Xid rules and the
// SLA terms built in, failover through the rental service, credits through
// the wallet, prices from the billing service's book.
func newIncidents(cfg ServerConfig, s *Server) (*incident.Service, error) {
	rules, err := health.DefaultRules()
	if err != nil {
		return nil, err
	}
	loc, err := sla.LoadZone()
	if err != nil {
		return nil, err
	}
	return incident.New(incident.Config{
		Store: s.Store, Rules: rules, Terms: sla.DefaultTerms(), Mover: s.Rental, Credits: s.Wallet,
		HourlyFen: func(ctx context.Context, typeID string, count int, at time.Time) (int64, error) {
			q, err := s.Billing.Quote(ctx, nil, billing.QuoteRequest{TypeID: typeID, Count: count, Start: at, Duration: time.Hour})
			if err != nil {
				return 0, err
			}
			return q.List.HourlyFen, nil
		},
		Notify: s.Wallet.Notice, Location: loc, HostDownAfter: cfg.HostDownAfter, Relist: s.Certification.Relist,
		Now: cfg.Now, Logger: cfg.Logger,
	}), nil
}
