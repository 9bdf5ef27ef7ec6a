package app

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime/docker/dockertest"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/incident"
	"github.com/gpurent/gpurent/internal/pricing"
)

// injectors tries each host's agents in turn (incident.Injector).
type injectors []*Agents

func (is injectors) Inject(ctx context.Context, f incident.Fault) error {
	var err error
	for _, a := range is {
		if err = a.Inject(ctx, f); err == nil || !gpurent.IsCode(err, gpurent.CodeNotFound) {
			return err
		}
	}
	return err
}

// healthFleet is two hosts of 4 H100 each (NVLink groups of 2), with fault
// injection into their fake GPUs.
func startHealthFleet(t *testing.T, name string, hostDown time.Duration) *moveFleet {
	t.Helper()
	f := startFleetOf(t, name, fleetOptions{typeA: moveH100, typeB: moveH100, hostDown: hostDown, gpus: 8})
	f.wireInjector()
	return f
}

func (f *moveFleet) wireInjector() {
	f.s.Incidents.SetInjector(injectors{f.agents["a"], f.agents["b"]})
}

// inject puts a fault on a GPU as the operator's fault injection does.
func (f *moveFleet) inject(fault incident.Fault) {
	f.t.Helper()
	if err := f.s.Incidents.InjectFault(context.Background(), f.ops, fault); err != nil {
		f.t.Fatalf("inject %+v: %v", fault, err)
	}
}

// incidentsOf lists an instance's incidents (newest first) as its owner sees them.
func (f *moveFleet) incidentsOf(id string) []incident.Detail {
	f.t.Helper()
	rep, err := f.s.Incidents.InstanceReport(context.Background(), f.acc, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return rep.Incidents
}

// gpuHealth reads a GPU's health.
func (f *moveFleet) gpuHealth(uuid string) gpurent.GPUHealth {
	f.t.Helper()
	hosts, err := f.s.Store.ListHosts(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	for _, h := range hosts {
		for _, g := range h.GPUs {
			if g.ID == uuid {
				return g.Health
			}
		}
	}
	f.t.Fatalf("GPU %s not found", uuid)
	return ""
}

// repairAll puts every GPU back in service but those in keep (the ones
// faults were injected on: reused, the rules would escalate a second
// fault on them) and both hosts ready.
func (f *moveFleet) repairAll(keep map[string]bool) {
	f.t.Helper()
	ctx := context.Background()
	hosts, err := f.s.Store.ListHosts(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, h := range hosts {
		for _, g := range h.GPUs {
			if g.Health != gpurent.GPUHealthy && g.Health != gpurent.GPUMissing && !keep[g.ID] {
				if _, err := f.s.Incidents.RepairGPU(ctx, f.ops, g.ID, "test"); err != nil {
					f.t.Fatal(err)
				}
			}
		}
		if err := f.s.Store.SetHostState(ctx, h.ID, gpurent.HostReady); err != nil {
			f.t.Fatal(err)
		}
	}
	f.s.Rental.Invalidate()
}

// creditEntries counts the incident's "credit" timeline entries.
func creditPosted(d incident.Detail) bool {
	for _, e := range d.Entries {
		if e.Kind == "credit" {
			return true
		}
	}
	return false
}

// TestGPUFaultClasses injects each fault class of the reference on a fake
// GPU under a running container and checks the action, the attribution and
// the credit: a tenant's fault is told and left alone; informational and
// unknown ones take nothing; reset, drain-and-reset, RMA, degraded, node
// and host faults take the GPU (or more) out of service and fail the
// instance over with its files, and the incident ends with a credit posted.
func TestGPUFaultClasses(t *testing.T) {
	f := startHealthFleet(t, "faults6", 0)
	cases := []struct {
		name     string
		faults   []incident.Fault // UUID filled with the instance's GPU
		class    gpurent.FaultClass
		attr     gpurent.Attribution
		gpu      gpurent.GPUHealth // the faulty GPU afterwards
		moves    bool              // the instance fails over
		leave    bool              // must go to another host
		incident bool              // an incident is opened on the instance
	}{
		// Host-wide faults first, while each host has room for the other's instance.
		{"node Xid 79", []incident.Fault{{Kind: "xid", Xid: 79, Detail: "GPU has fallen off the bus"}}, gpurent.FaultNode, gpurent.AttrHost, gpurent.GPUFailed, true, true, true},
		{"host Xid 54", []incident.Fault{{Kind: "xid", Xid: 54, Detail: "auxiliary power is not connected"}}, gpurent.FaultHost, gpurent.AttrHost, gpurent.GPUFailed, true, true, true},
		{"app Xid 13", []incident.Fault{{Kind: "xid", Xid: 13, Detail: "Graphics Engine Exception"}}, gpurent.FaultApp, gpurent.AttrTenant, gpurent.GPUHealthy, false, false, true},
		{"info Xid 63", []incident.Fault{{Kind: "xid", Xid: 63, Detail: "row remapping event"}}, gpurent.FaultInfo, "", gpurent.GPUHealthy, false, false, false},
		{"unknown Xid 999", []incident.Fault{{Kind: "xid", Xid: 999}}, gpurent.FaultUnknown, gpurent.AttrNone, gpurent.GPUHealthy, false, false, true},
		{"reset Xid 62", []incident.Fault{{Kind: "xid", Xid: 62, Detail: "internal micro-controller halt"}}, gpurent.FaultReset, gpurent.AttrHost, gpurent.GPUCordoned, true, false, true},
		{"reset double-bit ECC", []incident.Fault{{Kind: "ecc_dbe"}}, gpurent.FaultReset, gpurent.AttrHost, gpurent.GPUCordoned, true, false, true},
		{"drain+reset Xid 48 with 63", []incident.Fault{{Kind: "xid", Xid: 48}, {Kind: "xid", Xid: 63}}, gpurent.FaultDrainReset, gpurent.AttrHost, gpurent.GPUCordoned, true, false, true},
		{"rma remap failure", []incident.Fault{{Kind: "remap_failure"}}, gpurent.FaultRMA, gpurent.AttrHost, gpurent.GPUFailed, true, false, true},
		{"degraded throttling", []incident.Fault{{Kind: "throttle"}}, gpurent.FaultDegraded, gpurent.AttrHost, gpurent.GPUDegraded, true, false, true},
	}
	used := map[string]bool{}
	for _, c := range cases {
		f.sub(t, c.name, func(t *testing.T) {
			in := f.alice.instance("rent", "--gpu", moveH100, "--count", "1", "--image", f.image, "--wait")
			defer dockertest.Cleanup(t, in.ID)
			defer f.alice.run("", "rm", in.ID, "--wait", "--yes")
			gpuID := in.GPUs[0]
			if used[gpuID] {
				t.Fatalf("placed on GPU %s, which a fault was injected on before", gpuID)
			}
			used[gpuID] = true
			// Every GPU a fault was injected on stays out of service
			// afterwards, so that the next case gets a GPU with no
			// history (a later event on the same GPU would join the
			// burst, or escalate).
			defer f.repairAll(used)
			defer func() {
				if f.gpuHealth(gpuID) == gpurent.GPUHealthy {
					if _, err := f.s.Incidents.CordonGPU(context.Background(), f.ops, gpuID, "test: used"); err != nil {
						t.Fatal(err)
					}
				}
			}()
			f.sshRun(in.ID, "echo kept-"+in.ID+" > /root/data/mark && echo layer > /etc/mark")
			time.Sleep(3 * time.Second) // a power-on worth some charge, which caps the credit
			for _, fault := range c.faults {
				fault.UUID = gpuID
				f.inject(fault)
			}
			if !c.incident {
				// Recorded only: wait for the event, then check nothing moved.
				eventually(t, "the event stored", func() bool {
					evs, err := f.s.Store.ListGPUEvents(context.Background(), gpurent.GPUEventFilter{GPUID: gpuID})
					return err == nil && len(evs) > 0
				})
				time.Sleep(time.Second)
				if incs := f.incidentsOf(in.ID); len(incs) != 0 {
					t.Fatalf("incidents %+v for an informational event", incs)
				}
			} else {
				// The faults may reach the control plane in two reports: the
				// first opens the incident, the second escalates it in place.
				var inc gpurent.Incident
				eventually(t, "the instance's incident of class "+string(c.class), func() bool {
					incs := f.incidentsOf(in.ID)
					if len(incs) == 0 {
						return false
					}
					inc = incs[0].Incident
					return inc.Class == c.class
				})
				if incs := f.incidentsOf(in.ID); len(incs) != 1 || inc.Attribution != c.attr {
					t.Fatalf("incidents %d, %s/%s, want one %s/%s: %s", len(incs), inc.Class, inc.Attribution, c.class, c.attr, inc.Cause)
				}
			}
			if h := f.gpuHealth(gpuID); h != c.gpu {
				t.Errorf("GPU health %s, want %s", h, c.gpu)
			}
			if !c.moves {
				got := f.alice.instance("show", in.ID)
				if got.State != "running" || !slices.Equal(got.GPUs, in.GPUs) {
					t.Fatalf("instance moved or stopped for a %s fault: %s on %v", c.class, got.State, got.GPUs)
				}
				if c.class == gpurent.FaultApp {
					if events := f.alice.must("wallet", "alerts"); !strings.Contains(events, "gpu_app_fault") {
						t.Errorf("the tenant was not told of its fault:\n%s", events)
					}
				}
				for _, d := range f.incidentsOf(in.ID) {
					if d.Incident.CreditFen != 0 || creditPosted(d) {
						t.Errorf("a %s incident produced a credit: %+v", c.class, d.Incident)
					}
				}
				return
			}
			var got apiv1.Instance
			deadline := time.Now().Add(60 * time.Second)
			for {
				got = f.alice.instance("show", in.ID)
				ops := f.operations(in.ID)
				if len(ops) > 0 && ops[0].Kind == "failover" && ops[0].Step == "done" &&
					got.State == "running" && len(got.GPUs) == 1 && got.GPUs[0] != gpuID {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the instance did not fail over: %s on %v; incidents %+v", got.State, got.GPUs, f.incidentsOf(in.ID))
				}
				time.Sleep(100 * time.Millisecond)
			}
			// A host's fault must leave the host; a GPU's prefers other
			// GPUs of the same host, and leaves when it has none free.
			if c.leave && got.HostID == in.HostID {
				t.Errorf("failed over on host %s, which the fault took", got.HostName)
			}
			if mark := strings.TrimSpace(f.sshRun(in.ID, "cat /root/data/mark /etc/mark")); mark != "kept-"+in.ID+"\nlayer" {
				t.Fatalf("files after the failover: %q", mark)
			}
			var d incident.Detail
			eventually(t, "the incident resolved and credited", func() bool {
				d = f.incidentsOf(in.ID)[0]
				return d.Incident.State == gpurent.IncidentResolved && creditPosted(d)
			})
			if c.class == gpurent.FaultDegraded {
				// Down time is credited by the hour rule and the month's
				// availability; a degradation interrupts nothing.
				if d.Incident.CreditFen != 0 {
					t.Errorf("a degraded GPU earned an incident credit of %d fen", d.Incident.CreditFen)
				}
			} else if d.Incident.CreditFen <= 0 {
				t.Errorf("no credit for a %s fault that interrupted the instance: %+v", c.class, d.Entries)
			}
			f.checkOneAllocation(in.ID)
			f.checkRuns(in.ID)
			t.Logf("%s: down %s, credit %d fen", c.name, d.Incident.EndedAt.Sub(d.Incident.StartedAt).Round(time.Millisecond), d.Incident.CreditFen)
		})
	}
}

// slaGrants counts the SLA credit grants posted for the incident.
func (f *moveFleet) slaGrants(incidentID string) int {
	f.t.Helper()
	txs, err := f.s.Store.LedgerTxs(context.Background(), f.acc.ID, 0, 1000)
	if err != nil {
		f.t.Fatal(err)
	}
	n := 0
	for _, tx := range txs {
		if tx.Op == "grant" && tx.Key == "sla:incident:"+incidentID {
			n++
		}
	}
	return n
}

// TestXid79FailoverOnceAcrossRestart: Xid 79 under a running instance with
// automatic failover: it runs again on the other host with its files, the
// time it was down is not billed, and exactly one credit is posted, also
// when the control plane is stopped and started again in the middle.
func TestXid79FailoverOnceAcrossRestart(t *testing.T) {
	f := startHealthFleet(t, "xid79", 0)
	in := f.alice.instance("rent", "--gpu", moveH100, "--count", "1", "--image", f.image, "--wait")
	defer dockertest.Cleanup(t, in.ID)
	f.sshRun(in.ID, setupScript)
	want := f.sshRun(in.ID, fingerprintScript)
	time.Sleep(3 * time.Second)
	f.inject(incident.Fault{UUID: in.GPUs[0], Kind: "xid", Xid: 79, Detail: "GPU has fallen off the bus"})
	f.waitStep(in.ID, "copying", "final", "starting")
	f.restartServer()
	f.wireInjector()
	op := f.waitStep(in.ID, "done")
	if op.Kind != "failover" {
		t.Fatalf("newest operation %+v, want a failover", op)
	}
	got := f.alice.instance("show", in.ID)
	if got.State != "running" || got.HostID == in.HostID {
		t.Fatalf("after the failover: %s on %s (was %s)", got.State, got.HostName, in.HostName)
	}
	if have := f.sshRun(in.ID, fingerprintScript); have != want {
		t.Fatalf("files after the failover:\n%s\nvs\n%s", have, want)
	}
	var d incident.Detail
	eventually(t, "the credit posted", func() bool {
		d = f.incidentsOf(in.ID)[0]
		return creditPosted(d)
	})
	// Ticks go on: still one credit.
	time.Sleep(2 * time.Second)
	if n := f.slaGrants(d.Incident.ID); n != 1 || d.Incident.CreditFen <= 0 {
		t.Fatalf("%d SLA grants of %d fen for the incident, want exactly one", n, d.Incident.CreditFen)
	}
	// The down time is not billed: no run is charged for a second of it.
	runs, err := f.s.Store.ListUsageRuns(context.Background(), gpurent.UsageRunFilter{InstanceID: in.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.EndedAt != nil && r.EndedAt.After(d.Incident.StartedAt) && r.StartedAt.Before(d.Incident.StartedAt) {
			// The run the fault interrupted: charged up to the fault only.
			charged, err := f.s.Billing.Quote(context.Background(), nil, billingQuote(r.TypeID, r.GPUCount, r.StartedAt, d.Incident.StartedAt))
			if err != nil {
				t.Fatal(err)
			}
			if r.DebitedFen > charged.List.HourlyFen+1 {
				t.Errorf("the interrupted run was debited %d fen; up to the fault it costs %d", r.DebitedFen, charged.List.HourlyFen)
			}
		}
	}
	f.checkOneAllocation(in.ID)
	f.checkRuns(in.ID)
}

// TestHostLossAndReturn: a host's agent goes silent; after HostDownAfter its
// running instances get host-down incidents and wait (their data is on that
// host: no failover, whatever they chose), unbilled; when the host comes
// back the incidents end and the credits are posted.
func TestHostLossAndReturn(t *testing.T) {
	f := startHealthFleet(t, "hostloss", 2*time.Second)
	// Both instances on host a: b takes no placements while they are rented.
	ctx := context.Background()
	role := "a"
	if err := f.s.Store.SetHostState(ctx, f.hostID("b"), gpurent.HostCordoned); err != nil {
		t.Fatal(err)
	}
	f.s.Rental.Invalidate()
	auto := f.alice.instance("rent", "--gpu", moveH100, "--count", "1", "--image", f.image, "--wait")
	defer dockertest.Cleanup(t, auto.ID)
	wait := f.alice.instance("rent", "--gpu", moveH100, "--count", "1", "--image", f.image, "--wait")
	defer dockertest.Cleanup(t, wait.ID)
	if err := f.s.Store.SetHostState(ctx, f.hostID("b"), gpurent.HostReady); err != nil {
		t.Fatal(err)
	}
	f.s.Rental.Invalidate()
	if auto.HostID != f.hostID("a") || wait.HostID != f.hostID("a") {
		t.Fatalf("instances placed on %s and %s with host b cordoned", auto.HostName, wait.HostName)
	}
	f.alice.must("failover", wait.ID, "--wait")
	time.Sleep(3 * time.Second)
	f.stopAgent(role)
	for _, id := range []string{auto.ID, wait.ID} {
		eventually(t, "a host-down incident on "+id, func() bool {
			incs := f.incidentsOf(id)
			return len(incs) > 0 && incs[0].Incident.Class == gpurent.FaultHostDown && incs[0].Incident.State == gpurent.IncidentOpen
		})
	}
	time.Sleep(2 * time.Second)
	for _, id := range []string{auto.ID, wait.ID} {
		if ops := f.operations(id); len(ops) > 0 && ops[0].Kind == "failover" {
			t.Fatalf("instance %s was failed over while its data was on a silent host: %+v", id, ops[0])
		}
	}
	if events := f.alice.must("wallet", "alerts"); !strings.Contains(events, "host_down") {
		t.Fatalf("the customer was not told the host is down:\n%s", events)
	}
	f.startAgent(role)
	for _, id := range []string{auto.ID, wait.ID} {
		var d incident.Detail
		eventually(t, "the host-down incident of "+id+" resolved and credited", func() bool {
			d = f.incidentsOf(id)[0]
			return d.Incident.State == gpurent.IncidentResolved && creditPosted(d)
		})
		if got := f.alice.instance("show", id); got.State != "running" || got.HostID != auto.HostID {
			t.Fatalf("instance %s after the host came back: %s on %s", id, got.State, got.HostName)
		}
		t.Logf("%s: down %s, credit %d fen", id, d.Incident.EndedAt.Sub(d.Incident.StartedAt).Round(time.Millisecond), d.Incident.CreditFen)
	}
}

// billingQuote asks the price of a run's GPUs from start to end, whole
// seconds.
func billingQuote(typeID string, count int, start, end time.Time) pricing.QuoteRequest {
	from := start.Truncate(time.Second)
	return pricing.QuoteRequest{TypeID: typeID, Count: count, Start: from, Duration: max(end.Truncate(time.Second).Sub(from), time.Second)}
}

// TestDrainHost: an operator drains a host for maintenance; its running
// instance moves to the other host with its files; no incident, no credit.
func TestDrainHost(t *testing.T) {
	f := startHealthFleet(t, "drain6", 0)
	in := f.alice.instance("rent", "--gpu", moveH100, "--count", "1", "--image", f.image, "--wait")
	defer dockertest.Cleanup(t, in.ID)
	f.sshRun(in.ID, setupScript)
	want := f.sshRun(in.ID, fingerprintScript)
	h, moving, err := f.s.Incidents.DrainHost(context.Background(), f.ops, in.HostID)
	if err != nil || h.State != gpurent.HostDraining || !slices.Equal(moving, []string{in.ID}) {
		t.Fatalf("drain: %+v, %v, %v", h, moving, err)
	}
	if _, _, err := f.s.Incidents.DrainHost(context.Background(), f.acc, in.HostID); !gpurent.IsCode(err, gpurent.CodeForbidden) {
		t.Fatalf("a customer drained a host: %v", err)
	}
	f.waitStep(in.ID, "done")
	got := f.alice.instance("show", in.ID)
	if got.State != "running" || got.HostID == in.HostID {
		t.Fatalf("after the drain: %s on %s", got.State, got.HostName)
	}
	if have := f.sshRun(in.ID, fingerprintScript); have != want {
		t.Fatalf("files after the drain:\n%s\nvs\n%s", have, want)
	}
	if incs := f.incidentsOf(in.ID); len(incs) != 0 {
		t.Fatalf("maintenance opened incidents: %+v", incs)
	}
}
