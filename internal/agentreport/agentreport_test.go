package agentreport_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/agentreport"
)

// steps records the services a report went through, in order, and fails
// the one named.
type steps struct {
	done []string
	fail string
}

func (s *steps) step(name string) error {
	s.done = append(s.done, name)
	if s.fail == name {
		return errors.New(name + " failed")
	}
	return nil
}

type fleetStep struct{ *steps }

func (f fleetStep) Report(context.Context, *gpurent.Host, agentproto.Report) error {
	return f.step("fleet")
}

type rentalStep struct{ *steps }

func (r rentalStep) ApplyReport(context.Context, *gpurent.Host, agentproto.Report) (agentproto.ReportResponse, error) {
	return agentproto.ReportResponse{}, r.step("rental")
}

type runsStep struct{ *steps }

func (r runsStep) Ingest(context.Context, *gpurent.Host, []agentproto.RunEvent, []agentproto.ActualInstance) ([]string, error) {
	return []string{"run-1"}, r.step("runs")
}

type healthStep struct{ *steps }

func (h healthStep) Ingest(context.Context, *gpurent.Host, agentproto.Report) ([]string, error) {
	return []string{"health-1"}, h.step("health")
}

// TestApply: a report goes through the fleet, the instances, the runs and
// the health events in that order; a failure of the first two fails the
// report, one of the last two only leaves the rest to come (what the
// service answered acknowledged is kept).
func TestApply(t *testing.T) {
	for _, tc := range []struct {
		fail      string
		wantErr   bool
		wantSteps int
	}{
		{"", false, 4},
		{"fleet", true, 1},
		{"rental", true, 2},
		{"runs", false, 4},
		{"health", false, 4},
	} {
		s := &steps{fail: tc.fail}
		svc := agentreport.New(agentreport.Config{Fleet: fleetStep{s}, Instances: rentalStep{s}, Runs: runsStep{s}, Health: healthStep{s}})
		resp, err := svc.Apply(context.Background(), &gpurent.Host{ID: "h"}, agentproto.Report{})
		if (err != nil) != tc.wantErr || len(s.done) != tc.wantSteps {
			t.Errorf("failing %q: err %v after %v", tc.fail, err, s.done)
		}
		if !tc.wantErr && (len(resp.RunsAcked) != 1 || len(resp.HealthAcked) != 1) {
			t.Errorf("failing %q: answer %+v", tc.fail, resp)
		}
	}
	s := &steps{}
	resp, err := agentreport.New(agentreport.Config{Fleet: fleetStep{s}, Instances: rentalStep{s}}).
		Apply(context.Background(), &gpurent.Host{ID: "h"}, agentproto.Report{})
	if err != nil || resp.RunsAcked != nil || resp.HealthAcked != nil || len(s.done) != 2 {
		t.Errorf("without runs and health: %+v %v after %v", resp, err, s.done)
	}
}
