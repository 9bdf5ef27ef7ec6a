package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/gpu"
	"github.com/gpurent/gpurent/internal/gpu/fake"
)

// healthConfig is the host's agent configuration with a fast telemetry
// poll. The heartbeat stays at an hour unless a test needs reports that
// no event asks for: a report that carries an event was asked for by it.
func (h *host) healthConfig() Config {
	cfg := h.config(h.runtime())
	cfg.HealthInterval = 20 * time.Millisecond
	return cfg
}

// withHeartbeat sets a short heartbeat, for reports without events.
func withHeartbeat(cfg Config) Config {
	cfg.HeartbeatInterval = 20 * time.Millisecond
	return cfg
}

// events returns the report's health events that pass keep.
func events(rep agentproto.Report, keep func(agentproto.HealthEvent) bool) []agentproto.HealthEvent {
	var out []agentproto.HealthEvent
	for _, ev := range rep.Health {
		if keep(ev) {
			out = append(out, ev)
		}
	}
	return out
}

func ofKind(kind string) func(agentproto.HealthEvent) bool {
	return func(ev agentproto.HealthEvent) bool { return ev.Kind == kind }
}

func sampleOf(rep agentproto.Report, uuid string) (agentproto.GPUSample, bool) {
	for _, s := range rep.Samples {
		if s.UUID == uuid {
			return s, true
		}
	}
	return agentproto.GPUSample{}, false
}

func TestInjectedGPUFaultsReachTheReport(t *testing.T) {
	cp := newControlPlane(t)
	h := newHost(t, cp)
	h.startWith(withHeartbeat(h.healthConfig()))
	first := cp.waitReport("samples of all 8 GPUs", 0, func(rep agentproto.Report) bool { return len(rep.Samples) == 8 })
	if len(first.Health) != 0 {
		t.Fatalf("a healthy host reported %+v", first.Health)
	}
	for i, s := range first.Samples {
		if s.TemperatureC < 35 || s.TemperatureC > 45 || s.DefaultPowerW != 450 || s.PCIeGen != 4 || s.PCIeWidth != 16 || s.At.IsZero() {
			t.Errorf("sample %d of an idle RTX 4090 = %+v", i, s)
		}
	}

	u1, u3, u5 := fake.UUID(hostName, 1), fake.UUID(hostName, 3), fake.UUID(hostName, 5)
	waitWatching(t, h.gpus)
	h.gpus.InjectXid(u1, 13, "pid=4242, name=python3, Graphics SM Warp Exception")
	h.gpus.InjectECC(u3, true)
	h.gpus.InjectRecoveryAction(u3, "Drain and Reset")
	h.gpus.InjectRemapFailure(u3)
	h.gpus.Lose(u5)
	rep := cp.waitReport("every injected event, and a poll after them", 0, func(rep agentproto.Report) bool {
		s, ok := sampleOf(rep, u3)
		return len(events(rep, ofKind(gpu.EventGPULost))) > 0 && ok && s.RemapFailure && s.ECCDoubleBit == 1
	})
	want := []agentproto.HealthEvent{
		{UUID: u1, Kind: gpu.EventXid, Xid: 13, Detail: "pid=4242, name=python3, Graphics SM Warp Exception"},
		{UUID: u3, Kind: gpu.EventECCDoubleBit, Detail: "1"},
		{UUID: u3, Kind: gpu.EventRecoveryAction, Detail: "Drain and Reset"},
		{UUID: u3, Kind: gpu.EventRemapFailure, Detail: "row remapping failed"},
		{UUID: u5, Kind: gpu.EventGPULost, Detail: "GPU is lost"},
	}
	// Each is reported once, the remap failure too, which the samples
	// show as well (a poll may see it before the provider's event arrives,
	// so it may come before the events injected ahead of it).
	if len(rep.Health) != len(want) {
		t.Fatalf("report carries %d health events, want %d: %+v", len(rep.Health), len(want), rep.Health)
	}
	key := func(ev agentproto.HealthEvent) string {
		return ev.UUID + "|" + ev.Kind + "|" + strconv.Itoa(ev.Xid) + "|" + ev.Detail
	}
	var gotKeys, wantKeys []string
	for i := range want {
		gotKeys, wantKeys = append(gotKeys, key(rep.Health[i])), append(wantKeys, key(want[i]))
	}
	slices.Sort(gotKeys)
	slices.Sort(wantKeys)
	if !slices.Equal(gotKeys, wantKeys) {
		t.Errorf("events %q, want %q", gotKeys, wantKeys)
	}
	ids := map[string]bool{}
	for i, got := range rep.Health {
		if got.ID == "" || ids[got.ID] || got.At.IsZero() || got.At.Location() != time.UTC {
			t.Errorf("event %d: id %q (repeated %v), at %v", i, got.ID, ids[got.ID], got.At)
		}
		ids[got.ID] = true
	}
	// Nothing acknowledges them: a later report resends all, in the same
	// order, with the same ids.
	cp.mu.Lock()
	since := len(cp.reports)
	cp.mu.Unlock()
	again := cp.waitReport("a later report", since, func(agentproto.Report) bool { return true })
	idsOf := func(evs []agentproto.HealthEvent) []string {
		var out []string
		for _, ev := range evs {
			out = append(out, ev.ID)
		}
		return out
	}
	if !slices.Equal(idsOf(again.Health), idsOf(rep.Health)) {
		t.Errorf("a later report resent %v, want %v", idsOf(again.Health), idsOf(rep.Health))
	}
	if len(rep.GPUs) != 7 || len(rep.Samples) != 7 {
		t.Errorf("after a GPU was lost: %d GPUs and %d samples reported, want 7", len(rep.GPUs), len(rep.Samples))
	}
	if s, _ := sampleOf(rep, u1); s.XidTotal != 1 {
		t.Errorf("Xid total of GPU 1 = %d, want 1", s.XidTotal)
	}
}

func TestTelemetryFindingsAreReportedOnce(t *testing.T) {
	cp := newControlPlane(t)
	h := newHost(t, cp)
	u := fake.UUID(hostName, 6)
	h.gpus.SetSample(u, func(s *gpu.Sample) { s.PowerLimitW = 300 })
	h.startWith(withHeartbeat(h.healthConfig()))
	rep := cp.waitReport("a power limit finding", 0, func(rep agentproto.Report) bool {
		return len(events(rep, ofKind("power_limit"))) > 0
	})
	found := events(rep, ofKind("power_limit"))
	if found[0].UUID != u || !strings.Contains(found[0].Detail, "300 W") {
		t.Fatalf("finding = %+v", found[0])
	}
	if s, ok := sampleOf(rep, u); !ok || s.PowerLimitW != 300 || s.DefaultPowerW != 450 {
		t.Fatalf("sample = %+v", s)
	}
	// Many polls later, the standing condition is still one event.
	h.gpus.SetSample(u, func(s *gpu.Sample) { s.TemperatureC = 71 })
	rep = cp.waitReport("a later sample", 0, func(rep agentproto.Report) bool {
		s, _ := sampleOf(rep, u)
		return s.TemperatureC == 71
	})
	if n := len(events(rep, ofKind("power_limit"))); n != 1 {
		t.Fatalf("the power limit finding was reported %d times", n)
	}
}

func TestHealthEventsSurviveARestartUntilAcked(t *testing.T) {
	cp := newControlPlane(t)
	h := newHost(t, cp)
	u := fake.UUID(hostName, 0)
	// An hour's heartbeat: only the event itself can ask for the report
	// that carries it.
	ag := h.startWith(h.healthConfig())
	cp.waitReport("the first report", 0, func(agentproto.Report) bool { return true })
	waitWatching(t, h.gpus)
	h.gpus.InjectXid(u, 79, "GPU has fallen off the bus.")
	rep := cp.waitReport("the Xid", 0, func(rep agentproto.Report) bool { return len(rep.Health) > 0 })
	id := rep.Health[0].ID
	ag.stop(t)
	waitWatchers(t, h.gpus, 0)

	// The journal holds it; the next agent sends the same id, which the
	// control plane now acknowledges.
	cp.mu.Lock()
	cp.ackHealth = true
	since := len(cp.reports)
	cp.mu.Unlock()
	ag = h.startWith(withHeartbeat(h.healthConfig()))
	rep = cp.waitReport("the Xid again", since, func(rep agentproto.Report) bool { return len(rep.Health) > 0 })
	waitWatching(t, h.gpus) // the journal's resend comes before the subscription
	if len(rep.Health) != 1 || rep.Health[0].ID != id || rep.Health[0].Xid != 79 {
		t.Fatalf("after a restart: %+v, want the one event %s", rep.Health, id)
	}
	// A new event goes out alone: the acknowledged one is gone.
	cp.mu.Lock()
	since = len(cp.reports)
	cp.mu.Unlock()
	h.gpus.InjectECC(u, false)
	rep = cp.waitReport("the ECC event", since, func(rep agentproto.Report) bool { return len(rep.Health) > 0 })
	if len(rep.Health) != 1 || rep.Health[0].Kind != gpu.EventECCSingleBit {
		t.Fatalf("after the ack: %+v", rep.Health)
	}
	// A report with nothing pending shows the agent took the acks in.
	cp.mu.Lock()
	since = len(cp.reports)
	cp.mu.Unlock()
	cp.waitReport("a report after the acks", since, func(rep agentproto.Report) bool { return len(rep.Health) == 0 })
	ag.stop(t)

	// Both acknowledged: a third agent has nothing to resend.
	j, err := openHealth(h.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	if p := j.pendingEvents(10); len(p) != 0 {
		t.Fatalf("journal after the acks: %+v", p)
	}
}

func TestKernelLogXidsAreMappedAndDeduped(t *testing.T) {
	cp := newControlPlane(t)
	h := newHost(t, cp)
	klog := filepath.Join(t.TempDir(), "kern.log")
	if err := os.WriteFile(klog, []byte("NVRM: Xid (PCI:0000:02:00): 31, before the agent started\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := h.healthConfig()
	cfg.KernelLog = klog
	h.startWith(cfg)
	cp.waitReport("the first report", 0, func(agentproto.Report) bool { return true })

	// The fake's bus ids: GPU i sits at 00000000:<i+1>:00.0.
	u1, u2 := fake.UUID(hostName, 1), fake.UUID(hostName, 2)
	waitWatching(t, h.gpus)
	h.gpus.InjectXid(u1, 48, "DBE")
	cp.waitReport("the driver's Xid 48", 0, func(rep agentproto.Report) bool { return len(rep.Health) == 1 })
	f, err := os.OpenFile(klog, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The same Xid 48 from the kernel log, an Xid on a device that is no
	// GPU of the host, and last an Xid that marks the end.
	_, err = f.WriteString("[ 77.1] NVRM: Xid (PCI:0000:02:00): 48, pid=7, name=python3, An uncorrectable double bit error (DBE) has been detected\n" +
		"[ 77.2] NVRM: Xid (PCI:0000:99:00): 79, pid=1, name=x, GPU has fallen off the bus.\n" +
		"[ 77.3] NVRM: Xid (PCI:0000:03:00): 13, pid=9, name=y, Graphics Exception\n")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	rep := cp.waitReport("the kernel log's last Xid", 0, func(rep agentproto.Report) bool {
		return len(events(rep, func(ev agentproto.HealthEvent) bool { return ev.Xid == 13 })) > 0
	})
	xids := events(rep, ofKind(gpu.EventXid))
	if len(xids) != 3 {
		t.Fatalf("got %d Xid events, want 3 (48 once, 79, 13): %+v", len(xids), xids)
	}
	if x := xids[0]; x.UUID != u1 || x.Xid != 48 || x.Detail != "DBE" {
		t.Errorf("first = %+v", x)
	}
	if x := xids[1]; x.UUID != "" || x.Xid != 79 || !strings.HasPrefix(x.Detail, "PCI 0000:99:00: ") {
		t.Errorf("unknown device = %+v", x)
	}
	if x := xids[2]; x.UUID != u2 || x.Xid != 13 || x.Detail != "pid=9, name=y, Graphics Exception" {
		t.Errorf("mapped = %+v", x)
	}
}

func TestXidDedupe(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	d := xidDedupe{window: 5 * time.Second}
	steps := []struct {
		uuid   string
		xid    int
		source string
		after  time.Duration
		dup    bool
	}{
		{"A", 79, sourceDriver, 0, false},
		{"A", 79, sourceKernel, time.Second, true},         // the pair
		{"A", 79, sourceKernel, 2 * time.Second, false},    // a third report is another Xid
		{"A", 79, sourceDriver, 2 * time.Second, true},     // ... which NVML saw too
		{"A", 13, sourceDriver, 3 * time.Second, false},    // repeats of one source stay
		{"A", 13, sourceDriver, 3 * time.Second, false},    //
		{"B", 13, sourceKernel, 3 * time.Second, false},    // another GPU
		{"A", 13, sourceKernel, 4 * time.Second, true},     //
		{"A", 13, sourceKernel, 4 * time.Second, true},     // pairs with the second
		{"A", 31, sourceKernel, 10 * time.Second, false},   //
		{"A", 31, sourceDriver, 15*time.Second + 1, false}, // too far apart
	}
	for i, s := range steps {
		if got := d.duplicate(s.uuid, s.xid, s.source, t0.Add(s.after)); got != s.dup {
			t.Errorf("step %d (%s Xid %d from %s): duplicate = %v, want %v", i, s.uuid, s.xid, s.source, got, s.dup)
		}
	}
	if len(d.seen) > 2 {
		t.Errorf("old reports kept: %d", len(d.seen))
	}
}

func TestHealthJournalIsBounded(t *testing.T) {
	dir := t.TempDir()
	j, err := openHealth(dir)
	if err != nil {
		t.Fatal(err)
	}
	evs := make([]agentproto.HealthEvent, maxPendingHealth+3)
	for i := range evs {
		evs[i] = agentproto.HealthEvent{ID: "gev-" + strings.Repeat("x", i%7) + string(rune('a'+i%26)), Kind: gpu.EventECCSingleBit}
	}
	evs[3].ID = "gev-oldest-kept"
	dropped, err := j.add(evs...)
	if err != nil || dropped != 3 {
		t.Fatalf("add = %d, %v; want 3 dropped", dropped, err)
	}
	again, err := openHealth(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := again.pendingEvents(maxPendingHealth + 10)
	if len(p) != maxPendingHealth || p[0].ID != "gev-oldest-kept" {
		t.Fatalf("reloaded %d events, first %q", len(p), p[0].ID)
	}
	if err := os.WriteFile(healthPath(dir), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := openHealth(dir); err == nil {
		t.Fatal("a corrupt journal opened without an error")
	}
}

// waitWatching waits until the agent subscribes to the GPUs' events (as it
// starts): an event injected before that is seen by nobody.
func waitWatching(t *testing.T, p *fake.Provider) {
	t.Helper()
	waitWatchers(t, p, 1)
}

// waitWatchers waits until exactly n subscriptions watch the GPUs' events:
// a stopped agent's subscription ends a moment after its Run returns, and
// an event published before its successor subscribes reaches no one.
func waitWatchers(t *testing.T, p *fake.Provider, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); p.Watchers() != n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscriptions watch the GPUs' events, want %d", p.Watchers(), n)
		}
	}
}
