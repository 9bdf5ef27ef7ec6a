// Package agentreport applies an agent's report to the control plane: the
// one use case an agent's POST /agent/v1/report stands for. It runs the
// services a report concerns in their order (the fleet's heartbeat and
// inventory, the instances' lifecycle, the run events, the GPU health
// events) and decides what a failure of each means: the first two fail
// the report (the agent sends it again), the last two only leave their
// events unacknowledged (the agent resends them with its next report).
// The HTTP adapter decodes the report and encodes the answer; nothing
// else.
package agentreport

import (
	"context"
	"log/slog"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// Fleet records a report's heartbeat and inventory (internal/fleet).
type Fleet interface {
	Report(ctx context.Context, host *gpurent.Host, rep agentproto.Report) error
}

// Instances moves the host's instances along by the report and answers
// what the agent is told (internal/rental).
type Instances interface {
	ApplyReport(ctx context.Context, host *gpurent.Host, rep agentproto.Report) (agentproto.ReportResponse, error)
}

// Runs stores the report's run events exactly once and answers the ids
// the agent may drop (internal/metering).
type Runs interface {
	Ingest(ctx context.Context, host *gpurent.Host, events []agentproto.RunEvent, running []agentproto.ActualInstance) ([]string, error)
}

// Health stores the report's GPU health events and answers the ids the
// agent may drop (internal/incident).
type Health interface {
	Ingest(ctx context.Context, host *gpurent.Host, rep agentproto.Report) ([]string, error)
}

// Config configures the service. Fleet and Instances are required; a nil
// Runs or Health leaves those events unacknowledged.
type Config struct {
	Fleet     Fleet
	Instances Instances
	Runs      Runs
	Health    Health
	// Logger receives the failures that do not fail the report; nil
	// discards them.
	Logger *slog.Logger
}

// Service applies agents' reports. It is safe for concurrent use.
type Service struct{ cfg Config }

// New makes the service.
func New(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg}
}

// Apply applies host's report and answers what its agent is told. An
// error fails the whole report: nothing of it is acknowledged.
func (s *Service) Apply(ctx context.Context, host *gpurent.Host, rep agentproto.Report) (agentproto.ReportResponse, error) {
	if err := s.cfg.Fleet.Report(ctx, host, rep); err != nil {
		return agentproto.ReportResponse{}, err
	}
	resp, err := s.cfg.Instances.ApplyReport(ctx, host, rep)
	if err != nil {
		return agentproto.ReportResponse{}, err
	}
	if s.cfg.Runs != nil {
		// Acknowledged run events are dropped by the agent; after a failure
		// the rest are resent with the next report.
		acked, err := s.cfg.Runs.Ingest(ctx, host, rep.Runs, rep.Instances)
		resp.RunsAcked = acked
		if err != nil {
			s.cfg.Logger.LogAttrs(ctx, slog.LevelError, "metering: run events not stored; the agent resends them",
				slog.String("host", host.ID), slog.String("error", err.Error()))
		}
	}
	if s.cfg.Health != nil {
		// Acknowledged health events are dropped by the agent; the rest
		// come again with the next report.
		acked, err := s.cfg.Health.Ingest(ctx, host, rep)
		resp.HealthAcked = acked
		if err != nil {
			s.cfg.Logger.LogAttrs(ctx, slog.LevelError, "health: events not stored; the agent resends them",
				slog.String("host", host.ID), slog.String("error", err.Error()))
		}
	}
	return resp, nil
}
