// Package rental runs the instance lifecycle: rent (validate, place, claim),
// stop, start, delete, the desired state each host's agent converges to, and
// the transitions that agents' reports drive.
package rental

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// Config configures the service.
type Config struct {
	Store  gpurent.Store
	Now    func() time.Time // nil: time.Now
	Logger *slog.Logger
	// MaxGPUsPerInstance bounds a request's count (default 8).
	MaxGPUsPerInstance int
	// DefaultVolumeGiB is the volume size when a request names none (default 50).
	DefaultVolumeGiB int
	// PollWait is how long Desired waits for a change (default 25 s).
	PollWait time.Duration
}

// Service is the rental service. It is safe for concurrent use.
type Service struct {
	cfg Config
}

// New makes the service.
func New(cfg Config) *Service { return &Service{cfg: cfg} }

// RentRequest is a customer's request for an instance.
type RentRequest struct {
	Name           string
	Image          string
	TypeID         string
	Count          int
	ZoneID         string
	Plan           gpurent.Plan // "" is hourly
	VolumeGiB      int          // 0 is the default size
	IdempotencyKey string       // optional; same key + same request → same instance
}

// Detail is one instance with what a customer sees of it.
type Detail struct {
	Instance gpurent.Instance
	Host     *gpurent.Host // without GPUs; nil before placement
	Volume   *gpurent.Volume
	Events   []gpurent.Event
}

var errTODO = errors.New("not implemented yet")

// Rent validates, places and claims an instance. created is false when an
// earlier request with the same idempotency key made it.
func (s *Service) Rent(ctx context.Context, acc *gpurent.Account, r RentRequest) (d *Detail, created bool, err error) {
	return nil, false, errTODO
}

// Get returns an instance the account owns (operators see all); another
// account's instance is not found.
func (s *Service) Get(ctx context.Context, acc *gpurent.Account, id string) (*Detail, error) {
	return nil, errTODO
}

// List returns the account's instances, deleted ones left out; for an
// operator with all set, every account's.
func (s *Service) List(ctx context.Context, acc *gpurent.Account, all bool) ([]Detail, error) {
	return nil, errTODO
}

// Stop asks the instance's agent to stop it; GPUs are released (hourly plan)
// once the agent reports it stopped. Stopping a stopped instance is a no-op.
func (s *Service) Stop(ctx context.Context, acc *gpurent.Account, id string) (*Detail, error) {
	return nil, errTODO
}

// Start re-places a stopped instance on its host. If the host has no free
// GPUs of its type, it answers with a clear conflict.
func (s *Service) Start(ctx context.Context, acc *gpurent.Account, id string) (*Detail, error) {
	return nil, errTODO
}

// Delete removes the instance and its volume.
func (s *Service) Delete(ctx context.Context, acc *gpurent.Account, id string) (*Detail, error) {
	return nil, errTODO
}

// Desired returns the host's desired state, waiting up to PollWait for its
// generation to pass after.
func (s *Service) Desired(ctx context.Context, hostID string, after int64) (*agentproto.Desired, error) {
	return nil, errTODO
}

// ApplyReport moves instances along their lifecycle from an agent's report.
func (s *Service) ApplyReport(ctx context.Context, host *gpurent.Host, rep agentproto.Report) (agentproto.ReportResponse, error) {
	return agentproto.ReportResponse{}, errTODO
}

// Invalidate drops the cached fleet snapshot; the fleet service calls it when
// hosts or GPUs change.
func (s *Service) Invalidate() {}
