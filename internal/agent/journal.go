package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// maxPendingRuns bounds the run events kept while the control plane is
// unreachable; past it the oldest are dropped (and logged).
const maxPendingRuns = 100_000

// runJournal records what metering bills: when each run (power-on) of an
// allocation's container starts and ends. Every event gets its id and is
// written to disk before it is sent, and stays until the control plane
// acknowledges it, so a crash or a lost answer resends the same ids and the
// control plane counts each once.
type runJournal struct {
	path string
	// stoppedAt, when set, says when the runtime stopped the container
	// of an allocation it replaced (runtime.StopClock).
	stoppedAt func(allocationID string) (time.Time, bool)

	mu    sync.Mutex
	state journalState
}

type journalState struct {
	// Open are the runs seen running, by allocation.
	Open map[string]openRun `json:"open"`
	// Pending are the events not yet acknowledged, oldest first.
	Pending []agentproto.RunEvent `json:"pending"`
}

type openRun struct {
	InstanceID string    `json:"instance_id"`
	StartedAt  time.Time `json:"started_at"`
}

func journalPath(stateDir string) string { return filepath.Join(stateDir, "runs.json") }

// openJournal loads the journal, or starts an empty one.
func openJournal(stateDir string) (*runJournal, error) {
	j := &runJournal{path: journalPath(stateDir), state: journalState{Open: map[string]openRun{}}}
	b, err := os.ReadFile(j.path)
	if errors.Is(err, os.ErrNotExist) {
		return j, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &j.state); err != nil {
		return nil, fmt.Errorf("run journal %s is unreadable: %w", j.path, err)
	}
	if j.state.Open == nil {
		j.state.Open = map[string]openRun{}
	}
	return j, nil
}

// observe compares what runs now with the open runs and records the
// starts and ends it sees; it reports whether anything changed. A run's
// end is observed no later than the next report, so it is placed at now.
func (j *runJournal) observe(statuses []runtime.Status, now time.Time) (changed bool, dropped int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	running := map[string]runtime.Status{}
	byInstance := map[string]runtime.Status{}
	for _, st := range statuses {
		if st.State == runtime.Running && st.AllocationID != "" && !st.StartedAt.IsZero() {
			running[st.AllocationID] = st
			byInstance[st.InstanceID] = st
		}
	}
	now = now.UTC().Truncate(time.Microsecond)
	for alloc, open := range j.state.Open {
		st, ok := running[alloc]
		if ok && st.StartedAt.UTC().Truncate(time.Microsecond).Equal(open.StartedAt) {
			continue
		}
		end := now
		if !ok { // another allocation of the instance runs: this one ended before it began
			st, ok = byInstance[open.InstanceID]
		}
		if ok { // restarted: the old run ended no later than the new one began
			if next := st.StartedAt.UTC().Truncate(time.Microsecond); next.Before(end) {
				end = next
			}
		}
		if j.stoppedAt != nil { // the runtime knows when it stopped it
			if t, known := j.stoppedAt(alloc); known {
				if t = t.UTC().Truncate(time.Microsecond); t.Before(end) {
					end = t
				}
			}
		}
		if end.Before(open.StartedAt) {
			end = open.StartedAt
		}
		j.state.Pending = append(j.state.Pending, agentproto.RunEvent{ID: gpurent.NewID("run"), Kind: agentproto.RunEnded,
			InstanceID: open.InstanceID, AllocationID: alloc, StartedAt: open.StartedAt, EndedAt: &end})
		delete(j.state.Open, alloc)
		changed = true
	}
	for alloc, st := range running {
		if _, ok := j.state.Open[alloc]; ok {
			continue
		}
		started := st.StartedAt.UTC().Truncate(time.Microsecond)
		j.state.Open[alloc] = openRun{InstanceID: st.InstanceID, StartedAt: started}
		j.state.Pending = append(j.state.Pending, agentproto.RunEvent{ID: gpurent.NewID("run"), Kind: agentproto.RunStarted,
			InstanceID: st.InstanceID, AllocationID: alloc, StartedAt: started})
		changed = true
	}
	if n := len(j.state.Pending) - maxPendingRuns; n > 0 {
		j.state.Pending = append([]agentproto.RunEvent(nil), j.state.Pending[n:]...)
		dropped = n
	}
	return changed, dropped
}

// pending returns a copy of the unacknowledged events, at most n.
func (j *runJournal) pending(n int) []agentproto.RunEvent {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.state.Pending) < n {
		n = len(j.state.Pending)
	}
	return append([]agentproto.RunEvent(nil), j.state.Pending[:n]...)
}

// ack drops the acknowledged events; it reports whether any was dropped.
func (j *runJournal) ack(ids []string) bool {
	if len(ids) == 0 {
		return false
	}
	done := make(map[string]bool, len(ids))
	for _, id := range ids {
		done[id] = true
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	kept := j.state.Pending[:0]
	for _, e := range j.state.Pending {
		if !done[e.ID] {
			kept = append(kept, e)
		}
	}
	changed := len(kept) != len(j.state.Pending)
	j.state.Pending = kept
	return changed
}

// save writes the journal atomically and durably (writeDurably).
func (j *runJournal) save() error {
	j.mu.Lock()
	b, err := json.Marshal(j.state)
	j.mu.Unlock()
	if err != nil {
		return err
	}
	return writeDurably(j.path, b)
}
