package rental_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/rental/rentaltest"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// TestLifecycle walks an hourly instance through its whole life, driven by
// agent reports, on both databases: provisioning → running → stopping →
// stopped (GPUs released) → provisioning (new allocation, same host) →
// running → deleting → deleted (volume gone, GPUs released).
func TestLifecycle(t *testing.T) {
	rentaltest.Backends(t, func(t *testing.T, st gpurent.Store) {
		e := newEnv(t, st)
		h := e.Register("node-1", zoneA, h100, 8)
		e.Register("node-2", zoneA, h100, 8) // a second host the restart must not move to
		r := rentaltest.Req(h100, 2)
		r.ZoneID = zoneA
		d := e.MustRent(e.Alice, r)
		in := d.Instance
		if in.HostID != h.ID {
			// Both hosts are empty; whichever was picked is "the" host.
			h = e.Host(in.HostID)
		}
		firstAlloc, firstGPUs := in.AllocationID, in.GPUIDs

		// A report of a container of another allocation, or one still
		// being created, changes nothing.
		gen := e.Host(h.ID).Generation
		e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, AllocationID: "alloc-stale", State: agentproto.StateRunning})
		e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, AllocationID: in.AllocationID, State: agentproto.StateCreating})
		e.Report(h.ID) // nothing there yet: the agent has not converged
		if got := e.Instance(in.ID); got.State != gpurent.StateProvisioning || got.AllocationID != firstAlloc {
			t.Fatalf("after unrelated reports: %s, allocation %s; want provisioning, %s", got.State, got.AllocationID, firstAlloc)
		}
		if g := e.Host(h.ID).Generation; g != gen {
			t.Errorf("reports that change nothing bumped the generation %d → %d", gen, g)
		}

		// The container of the current allocation runs.
		e.Report(h.ID, rentaltest.Running(&in))
		if got := e.Instance(in.ID); got.State != gpurent.StateRunning || got.StateReason != "" {
			t.Fatalf("after a running report: %s (%q), want running", got.State, got.StateReason)
		}
		if ev := e.LastEvent(in.ID); ev.Kind != "running" || !strings.Contains(ev.Message, h.Name) {
			t.Errorf("last event %+v, want running on %s", ev, h.Name)
		}
		e.Report(h.ID, rentaltest.Running(&in)) // again: nothing new
		if ev, _ := e.St.ListEvents(e.Ctx, in.ID); !slices.Equal(rentaltest.Kinds(ev), []string{"created", "placed", "running"}) {
			t.Errorf("events %v", rentaltest.Kinds(ev))
		}

		// Stop: stopping until the agent confirms; the GPUs stay held.
		sd, err := e.Rent.Stop(e.Ctx, e.Alice, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		if sd.Instance.State != gpurent.StateStopping {
			t.Fatalf("stop answered %s, want stopping", sd.Instance.State)
		}
		if di := rentaltest.DesiredOf(t, e.DesiredNow(h.ID), in.ID); di.State != agentproto.StateStopped {
			t.Errorf("desired state %q after stop, want stopped", di.State)
		}
		if got := rentaltest.HeldBy(e.Host(h.ID), in.ID); len(got) != 2 {
			t.Fatalf("GPUs released before the agent confirmed the stop: %v", got)
		}
		again, err := e.Rent.Stop(e.Ctx, e.Alice, in.ID)
		if err != nil || again.Instance.State != gpurent.StateStopping {
			t.Errorf("second stop: %v, %v; want a no-op", again, err)
		}
		// A report that still shows it running keeps it stopping.
		e.Report(h.ID, rentaltest.Running(&in))
		if got := e.Instance(in.ID); got.State != gpurent.StateStopping {
			t.Fatalf("a stale running report moved a stopping instance to %s", got.State)
		}
		e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, AllocationID: in.AllocationID, State: agentproto.StateStopped})
		stopped := e.Instance(in.ID)
		if stopped.State != gpurent.StateStopped || stopped.AllocationID != "" || len(stopped.GPUIDs) != 0 {
			t.Fatalf("after the stopped report: %s, allocation %q, GPUs %v; want stopped, none", stopped.State, stopped.AllocationID, stopped.GPUIDs)
		}
		if got := rentaltest.Held(e.Host(h.ID)); got != 0 {
			t.Errorf("%d GPUs still held after an hourly stop", got)
		}
		a, err := e.St.AllocationByID(e.Ctx, firstAlloc)
		if err != nil || a.EndedAt == nil || a.EndReason != "stop" {
			t.Errorf("first allocation %+v (%v): want ended for stop", a, err)
		}
		if v, err := e.St.VolumeByID(e.Ctx, stopped.VolumeID); err != nil || v.DeletedAt != nil {
			t.Errorf("volume after stop: %+v, %v; want kept", v, err)
		}
		if di := rentaltest.DesiredOf(t, e.DesiredNow(h.ID), in.ID); di.State != agentproto.StateStopped || di.AllocationID != "" || len(di.GPUUUIDs) != 0 {
			t.Errorf("desired for a stopped instance: %+v", di)
		}

		// Start: the same host, a new allocation.
		sd, err = e.Rent.Start(e.Ctx, e.Alice, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		re := sd.Instance
		if re.State != gpurent.StateProvisioning || re.HostID != h.ID {
			t.Fatalf("start: %s on %s, want provisioning on %s", re.State, re.HostID, h.ID)
		}
		if re.AllocationID == "" || re.AllocationID == firstAlloc || len(re.GPUIDs) != 2 {
			t.Fatalf("start: allocation %q (first was %s), GPUs %v", re.AllocationID, firstAlloc, re.GPUIDs)
		}
		if got := rentaltest.HeldBy(e.Host(h.ID), in.ID); !slices.Equal(got, slices.Sorted(slices.Values(re.GPUIDs))) {
			t.Errorf("database holds %v, start answered %v", got, re.GPUIDs)
		}
		_ = firstGPUs
		// The old allocation's container reporting in does not count.
		e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, AllocationID: firstAlloc, State: agentproto.StateRunning})
		if got := e.Instance(in.ID); got.State != gpurent.StateProvisioning {
			t.Fatalf("a report for the old allocation moved the instance to %s", got.State)
		}
		e.Report(h.ID, rentaltest.Running(&re))
		if got := e.Instance(in.ID); got.State != gpurent.StateRunning {
			t.Fatalf("after restart: %s, want running", got.State)
		}
		if sd, err := e.Rent.Start(e.Ctx, e.Alice, in.ID); err != nil || sd.Instance.State != gpurent.StateRunning {
			t.Errorf("start of a running instance: %v, %v; want a no-op", sd, err)
		}

		// Delete: deleting until the agent has removed container and volume.
		dd, err := e.Rent.Delete(e.Ctx, e.Alice, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		if dd.Instance.State != gpurent.StateDeleting {
			t.Fatalf("delete answered %s, want deleting", dd.Instance.State)
		}
		if di := rentaltest.DesiredOf(t, e.DesiredNow(h.ID), in.ID); di.State != agentproto.StateAbsent {
			t.Errorf("desired state %q after delete, want absent", di.State)
		}
		if got := rentaltest.HeldBy(e.Host(h.ID), in.ID); len(got) != 2 {
			t.Errorf("GPUs released before the agent confirmed the delete: %v", got)
		}
		_, err = e.Rent.Stop(e.Ctx, e.Alice, in.ID)
		rentaltest.WantCode(t, err, gpurent.CodeConflict, "stop while deleting")
		_, err = e.Rent.Start(e.Ctx, e.Alice, in.ID)
		rentaltest.WantCode(t, err, gpurent.CodeConflict, "start while deleting")
		// Still there (stopped) in the report: not yet deleted.
		e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, AllocationID: re.AllocationID, State: agentproto.StateStopped})
		if got := e.Instance(in.ID); got.State != gpurent.StateDeleting {
			t.Fatalf("deleting instance still on the host moved to %s", got.State)
		}
		e.Report(h.ID) // gone
		gone := e.Instance(in.ID)
		if gone.State != gpurent.StateDeleted || gone.AllocationID != "" {
			t.Fatalf("after the host reported it gone: %s, allocation %q; want deleted", gone.State, gone.AllocationID)
		}
		if got := rentaltest.Held(e.Host(h.ID)); got != 0 {
			t.Errorf("%d GPUs held after delete", got)
		}
		if v, err := e.St.VolumeByID(e.Ctx, gone.VolumeID); err != nil || v.DeletedAt == nil {
			t.Errorf("volume after delete: %+v, %v; want marked deleted", v, err)
		}
		a, err = e.St.AllocationByID(e.Ctx, re.AllocationID)
		if err != nil || a.EndedAt == nil || a.EndReason != "delete" {
			t.Errorf("second allocation %+v (%v): want ended for delete", a, err)
		}
		for _, di := range e.DesiredNow(h.ID).Instances {
			if di.InstanceID == in.ID {
				t.Errorf("a deleted instance is still desired: %+v", di)
			}
		}
		if list, err := e.Rent.List(e.Ctx, e.Alice, false); err != nil || len(list) != 0 {
			t.Errorf("list after delete: %d, %v; want none", len(list), err)
		}
		if g, err := e.Rent.Get(e.Ctx, e.Alice, in.ID); err != nil || g.Instance.State != gpurent.StateDeleted {
			t.Errorf("get after delete: %v, %v; want the deleted instance and its history", g, err)
		}
		if dd, err := e.Rent.Delete(e.Ctx, e.Alice, in.ID); err != nil || dd.Instance.State != gpurent.StateDeleted {
			t.Errorf("second delete: %v, %v; want a no-op", dd, err)
		}
		want := []string{"created", "placed", "running", "stopping", "stopped", "starting", "running", "deleting", "deleted"}
		if ev, _ := e.St.ListEvents(e.Ctx, in.ID); !slices.Equal(rentaltest.Kinds(ev), want) {
			t.Errorf("history %v\n want %v", rentaltest.Kinds(ev), want)
		}
	})
}

// TestFailedReport: a container that cannot run fails the instance with the
// runtime's message and releases its GPUs; the volume stays, and the
// instance can be started again or stopped.
func TestFailedReport(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, h100, 8)
	in := e.MustRent(e.Alice, rentaltest.Req(h100, 4)).Instance

	// A failure of another allocation's container is not this one's.
	e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, AllocationID: "alloc-other", State: agentproto.StateFailed, Message: "old"})
	if got := e.Instance(in.ID); got.State != gpurent.StateProvisioning {
		t.Fatalf("a failure of another allocation moved the instance to %s", got.State)
	}
	const why = `pull image "busybox:1.36": not found`
	e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, AllocationID: in.AllocationID, State: agentproto.StateFailed, Message: why})
	got := e.Instance(in.ID)
	if got.State != gpurent.StateFailed || !strings.HasPrefix(got.StateReason, why+"; check the image name") {
		t.Fatalf("after a failed report: %s (%q), want failed (%q)", got.State, got.StateReason, why)
	}
	if got.AllocationID != "" || rentaltest.Held(e.Host(h.ID)) != 0 {
		t.Errorf("a failed instance holds allocation %q, host holds %d GPUs", got.AllocationID, rentaltest.Held(e.Host(h.ID)))
	}
	if ev := e.LastEvent(in.ID); ev.Kind != "failed" || !strings.Contains(ev.Message, why) {
		t.Errorf("last event %+v, want failed with the runtime's message", ev)
	}
	if a, err := e.St.AllocationByID(e.Ctx, in.AllocationID); err != nil || a.EndReason != "failed" {
		t.Errorf("allocation %+v, %v: want ended as failed", a, err)
	}
	if v, err := e.St.VolumeByID(e.Ctx, in.VolumeID); err != nil || v.DeletedAt != nil {
		t.Errorf("volume of a failed instance: %+v, %v; want kept", v, err)
	}
	// The freed GPUs are rentable at once.
	other := e.MustRent(e.Bob, rentaltest.Req(h100, 8))
	if other.Instance.HostID != h.ID {
		t.Fatalf("bob's 8 GPUs on %s", other.Instance.HostID)
	}
	// Stopping a failed instance settles it as stopped, without the agent.
	sd, err := e.Rent.Stop(e.Ctx, e.Alice, in.ID)
	if err != nil || sd.Instance.State != gpurent.StateStopped {
		t.Fatalf("stop of a failed instance: %v, %v; want stopped", sd, err)
	}
}

// TestFailedRestart: a failed instance can be started again on its host.
func TestFailedRestart(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, h100, 8)
	in := e.MustRent(e.Alice, rentaltest.Req(h100, 1)).Instance
	e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, AllocationID: in.AllocationID, State: agentproto.StateFailed, Message: "oom"})
	sd, err := e.Rent.Start(e.Ctx, e.Alice, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if sd.Instance.State != gpurent.StateProvisioning || sd.Instance.HostID != h.ID || sd.Instance.AllocationID == "" ||
		sd.Instance.AllocationID == in.AllocationID {
		t.Fatalf("start after failure: %+v", sd.Instance)
	}
	e.Report(h.ID, rentaltest.Running(&sd.Instance))
	if got := e.Instance(in.ID); got.State != gpurent.StateRunning || got.StateReason != "" {
		t.Errorf("after restart: %s (%q), want running with no reason", got.State, got.StateReason)
	}
}

// TestMonthlyStopKeepsGPUs: a package plan keeps its GPUs while stopped, and
// starts again on the same allocation.
func TestMonthlyStopKeepsGPUs(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, h100, 8)
	r := rentaltest.Req(h100, 8)
	r.Plan = gpurent.PlanMonthly
	in := e.MustRent(e.Alice, r).Instance
	e.Report(h.ID, rentaltest.Running(&in))
	if _, err := e.Rent.Stop(e.Ctx, e.Alice, in.ID); err != nil {
		t.Fatal(err)
	}
	e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, AllocationID: in.AllocationID, State: agentproto.StateStopped})
	got := e.Instance(in.ID)
	if got.State != gpurent.StateStopped || got.AllocationID != in.AllocationID {
		t.Fatalf("monthly after stop: %s, allocation %q; want stopped, still %s", got.State, got.AllocationID, in.AllocationID)
	}
	if n := rentaltest.Held(e.Host(h.ID)); n != 8 {
		t.Errorf("%d GPUs held by a stopped monthly instance, want 8", n)
	}
	if ev := e.LastEvent(in.ID); ev.Kind != "stopped" || !strings.Contains(ev.Message, "monthly") {
		t.Errorf("last event %+v, want stopped with the GPUs kept for the package", ev)
	}
	// Nobody else gets them.
	_, _, err := e.Rent.Rent(e.Ctx, e.Bob, rentaltest.Req(h100, 1))
	rentaltest.WantCode(t, err, gpurent.CodeUnavailable, "rent while a monthly instance is stopped on every GPU")
	// The desired state keeps the container stopped on its GPUs.
	if di := rentaltest.DesiredOf(t, e.DesiredNow(h.ID), in.ID); di.State != agentproto.StateStopped {
		t.Errorf("desired %+v, want stopped", di)
	}
	// Releasing idle GPUs leaves a package alone.
	if err := e.Rent.ReleaseIdleGPUs(e.Ctx, in.ID); err != nil || rentaltest.Held(e.Host(h.ID)) != 8 {
		t.Fatalf("release idle GPUs of a stopped package: %v, %d held", err, rentaltest.Held(e.Host(h.ID)))
	}
	sd, err := e.Rent.Start(e.Ctx, e.Alice, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if sd.Instance.State != gpurent.StateProvisioning || sd.Instance.AllocationID != in.AllocationID {
		t.Fatalf("start of a monthly instance: %s, allocation %q; want provisioning on %s",
			sd.Instance.State, sd.Instance.AllocationID, in.AllocationID)
	}
	e.Report(h.ID, rentaltest.Running(&in))
	if got := e.Instance(in.ID); got.State != gpurent.StateRunning {
		t.Errorf("after restart: %s, want running", got.State)
	}
}

// TestPlanBackToHourlyReleasesGPUs: once a stopped package instance is on
// the hourly plan again, its GPUs go back to the pool, its volume stays.
func TestPlanBackToHourlyReleasesGPUs(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, h100, 4)
	r := rentaltest.Req(h100, 4)
	r.Plan = gpurent.PlanWeekly
	in := e.MustRent(e.Alice, r).Instance
	e.Report(h.ID, rentaltest.Running(&in))
	if _, err := e.Rent.Stop(e.Ctx, e.Alice, in.ID); err != nil {
		t.Fatal(err)
	}
	e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, AllocationID: in.AllocationID, State: agentproto.StateStopped})
	if err := e.St.AddPlanChange(e.Ctx, &gpurent.PlanChange{InstanceID: in.ID, From: gpurent.PlanWeekly, To: gpurent.PlanHourly,
		EffectiveAt: time.Now(), State: gpurent.PlanChangeApplied, RequestedBy: e.Alice.ID}); err != nil {
		t.Fatal(err)
	}
	if err := e.Rent.ReleaseIdleGPUs(e.Ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	got := e.Instance(in.ID)
	if got.State != gpurent.StateStopped || got.AllocationID != "" || got.VolumeID == "" {
		t.Fatalf("after the plan went hourly: %s, allocation %q, volume %q", got.State, got.AllocationID, got.VolumeID)
	}
	if n := rentaltest.Held(e.Host(h.ID)); n != 0 {
		t.Errorf("%d GPUs still held", n)
	}
	if ev := e.LastEvent(in.ID); ev.Kind != "released" {
		t.Errorf("last event %+v, want released", ev)
	}
	e.MustRent(e.Bob, rentaltest.Req(h100, 4)) // they are for rent again
}

// TestStartWhenHostTaken: a stopped hourly instance whose host's GPUs were
// rented meanwhile cannot start; the answer says why and where.
func TestStartWhenHostTaken(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, h100, 2)
	in := e.MustRent(e.Alice, rentaltest.Req(h100, 2)).Instance
	e.Report(h.ID, rentaltest.Running(&in))
	if _, err := e.Rent.Stop(e.Ctx, e.Alice, in.ID); err != nil {
		t.Fatal(err)
	}
	e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, State: agentproto.StateStopped})
	bobs := e.MustRent(e.Bob, rentaltest.Req(h100, 2)).Instance
	if bobs.HostID != h.ID {
		t.Fatalf("bob placed on %s", bobs.HostID)
	}
	// Another host with free GPUs does not help: the data is on node-1.
	e.Register("node-2", zoneA, h100, 8)

	_, err := e.Rent.Start(e.Ctx, e.Alice, in.ID)
	rentaltest.WantCode(t, err, gpurent.CodeConflict, "start on a taken host")
	rentaltest.WantMessage(t, err, h.ID, "cannot start")
	got := e.Instance(in.ID)
	if got.State != gpurent.StateStopped || got.AllocationID != "" || got.HostID != h.ID {
		t.Errorf("after the refused start: %s, allocation %q, host %s", got.State, got.AllocationID, got.HostID)
	}
	// Once bob's instance is gone, alice's starts.
	if _, err := e.Rent.Delete(e.Ctx, e.Bob, bobs.ID); err != nil {
		t.Fatal(err)
	}
	e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, State: agentproto.StateStopped})
	if sd, err := e.Rent.Start(e.Ctx, e.Alice, in.ID); err != nil || sd.Instance.HostID != h.ID {
		t.Fatalf("start after the host freed up: %v, %v", sd, err)
	}
}

// TestDeleteStoppedAndStartStates: a stopped instance can be deleted; start
// is refused while stopping.
func TestDeleteStoppedAndStartStates(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-1", zoneA, h100, 8)
	in := e.MustRent(e.Alice, rentaltest.Req(h100, 1)).Instance
	if _, err := e.Rent.Stop(e.Ctx, e.Alice, in.ID); err != nil {
		t.Fatal(err)
	}
	_, err := e.Rent.Start(e.Ctx, e.Alice, in.ID)
	rentaltest.WantCode(t, err, gpurent.CodeConflict, "start while stopping")
	e.Report(h.ID) // never created: absent counts as stopped
	if got := e.Instance(in.ID); got.State != gpurent.StateStopped {
		t.Fatalf("stopping instance the host does not have: %s, want stopped", got.State)
	}
	if _, err := e.Rent.Delete(e.Ctx, e.Alice, in.ID); err != nil {
		t.Fatal(err)
	}
	e.Report(h.ID)
	if got := e.Instance(in.ID); got.State != gpurent.StateDeleted {
		t.Errorf("after delete: %s", got.State)
	}
}
