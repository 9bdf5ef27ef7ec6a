// Package fleet keeps the picture of zones, hosts and GPUs: agent
// registration with a join token, inventory and heartbeats from reports,
// operator actions on hosts, and what is free per GPU type and zone.
package fleet

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
	Store     gpurent.Store
	Now       func() time.Time
	Logger    *slog.Logger
	JoinToken string // agents present it to register
	// OnChange is called after hosts or GPUs change (placement caches drop).
	OnChange func()
}

// Service is the fleet service.
type Service struct{ cfg Config }

// New makes the service.
func New(cfg Config) *Service { return &Service{cfg: cfg} }

var errTODO = errors.New("not implemented yet")

// Availability is a GPU type with how many of its GPUs exist and are free.
type Availability struct {
	Type  gpurent.GPUType
	Total int
	Free  int
	Zones []ZoneAvailability
}

// ZoneAvailability is one zone's share of a GPU type.
type ZoneAvailability struct {
	ZoneID     string
	Total      int
	Free       int
	MaxPerHost int
}

// Register adds or re-registers a host whose agent presents the join token.
func (s *Service) Register(ctx context.Context, req agentproto.RegisterRequest) (agentproto.RegisterResponse, error) {
	return agentproto.RegisterResponse{}, errTODO
}

// AuthenticateAgent returns the host whose agent holds token.
func (s *Service) AuthenticateAgent(ctx context.Context, token string) (*gpurent.Host, error) {
	return nil, errTODO
}

// Report records an agent's heartbeat and GPU inventory.
func (s *Service) Report(ctx context.Context, host *gpurent.Host, rep agentproto.Report) error {
	return errTODO
}

// Hosts lists every host with its GPUs (operators only).
func (s *Service) Hosts(ctx context.Context, acc *gpurent.Account) ([]gpurent.Host, error) {
	return nil, errTODO
}

// SetHostState cordons, uncordons (ready) or drains a host (operators only).
func (s *Service) SetHostState(ctx context.Context, acc *gpurent.Account, hostID string, state gpurent.HostState) (*gpurent.Host, error) {
	return nil, errTODO
}

// GPUTypes lists every GPU type with its availability now.
func (s *Service) GPUTypes(ctx context.Context) ([]Availability, error) {
	return nil, errTODO
}

// Zones lists the zones.
func (s *Service) Zones(ctx context.Context) ([]gpurent.Zone, error) {
	return nil, errTODO
}
