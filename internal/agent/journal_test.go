package agent

import (
	"os"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agentproto"
)

func TestRunJournal(t *testing.T) {
	dir := t.TempDir()
	j, err := openJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 123456789, time.UTC)
	running := []runtime.Status{
		{InstanceID: "i-a", AllocationID: "alloc-a", State: runtime.Running, StartedAt: t0},
		{InstanceID: "i-b", AllocationID: "alloc-b", State: runtime.Stopped, StartedAt: t0},
		{InstanceID: "i-c", AllocationID: "", State: runtime.Running, StartedAt: t0}, // no allocation: not billable
	}
	if changed, _ := j.observe(running, t0.Add(time.Second)); !changed {
		t.Fatal("a new run was not recorded")
	}
	if changed, _ := j.observe(running, t0.Add(2*time.Second)); changed {
		t.Fatal("the same run was recorded twice")
	}
	if err := j.save(); err != nil {
		t.Fatal(err)
	}
	first := j.pending(10)
	if len(first) != 1 || first[0].Kind != agentproto.RunStarted || first[0].AllocationID != "alloc-a" ||
		!first[0].StartedAt.Equal(t0.Truncate(time.Microsecond)) {
		t.Fatalf("pending: %+v", first)
	}
	if info, err := os.Stat(journalPath(dir)); err != nil || info.Size() == 0 {
		t.Fatalf("journal on disk: %v %v", info, err)
	}

	// A restarted agent reads the same events, with the same ids, and
	// does not see the still-running container as a new run.
	j2, err := openJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again := j2.pending(10); len(again) != 1 || again[0].ID != first[0].ID {
		t.Fatalf("after a restart: %+v, want %+v", again, first)
	}
	if changed, _ := j2.observe(running, t0.Add(3*time.Second)); changed {
		t.Error("a restart re-recorded a running run")
	}

	// The container restarts (a new start time): the old run ends, a new
	// one starts. Then it stops.
	restarted := []runtime.Status{{InstanceID: "i-a", AllocationID: "alloc-a", State: runtime.Running, StartedAt: t0.Add(time.Minute)}}
	j2.observe(restarted, t0.Add(61*time.Second))
	j2.observe(nil, t0.Add(2*time.Minute))
	evs := j2.pending(10)
	if len(evs) != 4 || evs[1].Kind != agentproto.RunEnded || !evs[1].EndedAt.Equal(t0.Add(time.Minute).Truncate(time.Microsecond)) ||
		evs[2].Kind != agentproto.RunStarted || evs[3].Kind != agentproto.RunEnded || !evs[3].EndedAt.Equal(t0.Add(2*time.Minute).Truncate(time.Microsecond)) {
		t.Fatalf("events: %+v", evs)
	}
	if !j2.ack([]string{evs[0].ID, evs[1].ID, "unknown"}) {
		t.Fatal("ack dropped nothing")
	}
	if left := j2.pending(10); len(left) != 2 || left[0].ID != evs[2].ID {
		t.Errorf("after the ack: %+v", left)
	}
	if j2.ack(nil) {
		t.Error("an empty ack changed the journal")
	}
	if p := j2.pending(1); len(p) != 1 {
		t.Errorf("pending(1) gave %d", len(p))
	}
	if err := os.WriteFile(journalPath(dir), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := openJournal(dir); err == nil {
		t.Error("a corrupt journal was accepted")
	}
}
