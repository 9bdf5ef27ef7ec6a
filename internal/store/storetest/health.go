package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

// The GPU health and incident contract, run by Run once per function on a
// fresh store: GPU events stored once per id (a resent batch adds nothing),
// their filters and order, a GPU's health and its reason as fleet reads
// show them, incidents and their timelines, and each instance's failover
// choice.

// utc is t as the store keeps it.
func utc(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// gpuEvent is an Xid event of the GPU at sec seconds past at(0).
func gpuEvent(id, hostID, gpuID string, sec, xid int) gpurent.GPUEvent {
	return gpurent.GPUEvent{ID: id, HostID: hostID, GPUID: gpuID, At: at(sec), Kind: "xid", Xid: xid,
		Detail: fmt.Sprintf("Xid %d on %s", xid, gpuID)}
}

// stored is evs as the store keeps them: times in UTC at microseconds.
func stored(evs ...gpurent.GPUEvent) []gpurent.GPUEvent {
	out := make([]gpurent.GPUEvent, len(evs))
	for i, e := range evs {
		e.At = utc(e.At)
		out[i] = e
	}
	return out
}

func eventIDs(evs []gpurent.GPUEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func testGPUEvents(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	h := SeedHost(t, s, "ev-a", "h100-80g-sxm", 2)
	other := SeedHost(t, s, "ev-b", "h100-80g-sxm", 1)
	g0, g1, o0 := h.GPUs[0].ID, h.GPUs[1].ID, other.GPUs[0].ID

	e1 := gpuEvent("gev-1", h.ID, g0, 10, 79)
	e2 := gpuEvent("gev-2", h.ID, g1, 5, 48)
	e3 := gpurent.GPUEvent{ID: "gev-3", HostID: h.ID, At: at(20), Kind: "recovery_action", Detail: "Node Reboot Required"}
	e4 := gpuEvent("gev-4", other.ID, o0, 15, 94)
	n, err := s.AddGPUEvents(ctx, []gpurent.GPUEvent{e1, e2, e3, e4})
	must(t, err, "add events")
	if n != 4 {
		t.Fatalf("added %d events, want 4", n)
	}

	all, err := s.ListGPUEvents(ctx, gpurent.GPUEventFilter{})
	must(t, err, "list all")
	same(t, "every event, oldest first", all, stored(e2, e1, e4, e3))
	for _, e := range all {
		if e.At.Location() != time.UTC {
			t.Fatalf("event time read back in %v, want UTC", e.At.Location())
		}
	}

	// A resent batch stores nothing again; only the new id counts, and an
	// id twice in one batch counts once.
	e5 := gpuEvent("gev-5", h.ID, g0, 30, 79)
	e1changed := e1
	e1changed.Detail = "resent with other text"
	n, err = s.AddGPUEvents(ctx, []gpurent.GPUEvent{e1changed, e2, e3, e4, e5, e5})
	must(t, err, "resend")
	if n != 1 {
		t.Fatalf("resent batch added %d, want 1 (only gev-5)", n)
	}
	n, err = s.AddGPUEvents(ctx, []gpurent.GPUEvent{e1, e5})
	must(t, err, "resend again")
	if n != 0 {
		t.Fatalf("a batch of known ids added %d, want 0", n)
	}
	n, err = s.AddGPUEvents(ctx, nil)
	must(t, err, "empty batch")
	if n != 0 {
		t.Fatalf("empty batch added %d", n)
	}

	// Filters.
	got, err := s.ListGPUEvents(ctx, gpurent.GPUEventFilter{GPUID: g0})
	must(t, err, "by GPU")
	same(t, "events of one GPU, oldest first (first text kept)", got, stored(e1, e5))
	got, err = s.ListGPUEvents(ctx, gpurent.GPUEventFilter{HostID: h.ID})
	must(t, err, "by host")
	same(t, "events of one host", eventIDs(got), []string{"gev-2", "gev-1", "gev-3", "gev-5"})
	got, err = s.ListGPUEvents(ctx, gpurent.GPUEventFilter{HostID: other.ID})
	must(t, err, "by other host")
	same(t, "events of the other host", got, stored(e4))
	got, err = s.ListGPUEvents(ctx, gpurent.GPUEventFilter{HostID: other.ID, GPUID: g0})
	must(t, err, "host and GPU that do not match")
	same(t, "host and GPU of another host", got, []gpurent.GPUEvent{})
	got, err = s.ListGPUEvents(ctx, gpurent.GPUEventFilter{Since: at(10)})
	must(t, err, "since")
	same(t, "events at or after Since", eventIDs(got), []string{"gev-1", "gev-4", "gev-3", "gev-5"})
	got, err = s.ListGPUEvents(ctx, gpurent.GPUEventFilter{Since: at(10).Add(time.Microsecond)})
	must(t, err, "since, a microsecond later")
	same(t, "events after Since", eventIDs(got), []string{"gev-4", "gev-3", "gev-5"})

	// A limit answers the newest, newest first.
	got, err = s.ListGPUEvents(ctx, gpurent.GPUEventFilter{Limit: 2})
	must(t, err, "limit")
	same(t, "newest two, newest first", eventIDs(got), []string{"gev-5", "gev-3"})
	got, err = s.ListGPUEvents(ctx, gpurent.GPUEventFilter{HostID: h.ID, Since: at(6), Limit: 10})
	must(t, err, "host, since and limit")
	same(t, "host since, newest first", eventIDs(got), []string{"gev-5", "gev-3", "gev-1"})
	_, err = s.ListGPUEvents(ctx, gpurent.GPUEventFilter{Limit: -1})
	wantCode(t, err, gpurent.CodeInvalid, "negative limit")

	// Same instant: insertion order, both ways.
	t1 := gpuEvent("gev-t1", other.ID, o0, 40, 31)
	t2 := gpuEvent("gev-t2", other.ID, o0, 40, 43)
	_, err = s.AddGPUEvents(ctx, []gpurent.GPUEvent{t1, t2})
	must(t, err, "add ties")
	got, err = s.ListGPUEvents(ctx, gpurent.GPUEventFilter{GPUID: o0, Since: at(40)})
	must(t, err, "ties oldest first")
	same(t, "ties in insertion order", eventIDs(got), []string{"gev-t1", "gev-t2"})
	got, err = s.ListGPUEvents(ctx, gpurent.GPUEventFilter{GPUID: o0, Limit: 2})
	must(t, err, "ties newest first")
	same(t, "ties in reverse insertion order", eventIDs(got), []string{"gev-t2", "gev-t1"})

	// Defaults: an id and a time are given, and written back.
	fresh := []gpurent.GPUEvent{{HostID: h.ID, GPUID: g1, Kind: "ecc_dbe", Detail: "1"}}
	before := time.Now().Add(-time.Second)
	n, err = s.AddGPUEvents(ctx, fresh)
	must(t, err, "event without id and time")
	if n != 1 || !strings.HasPrefix(fresh[0].ID, gpurent.PrefixGPUEvent+"-") ||
		fresh[0].At.Before(before) || fresh[0].At.Location() != time.UTC {
		t.Fatalf("defaults of a new event: added %d, %+v", n, fresh[0])
	}
	got, err = s.ListGPUEvents(ctx, gpurent.GPUEventFilter{GPUID: g1})
	must(t, err, "list after defaults")
	same(t, "event with defaults as stored", got, stored(e2, fresh[0]))
}

func testGPUEventsRefused(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	h := SeedHost(t, s, "ev-r", "h100-80g-sxm", 1)
	good := gpuEvent("gev-good", h.ID, h.GPUs[0].ID, 1, 79)

	// One bad event refuses the whole batch: nothing of it is written.
	_, err := s.AddGPUEvents(ctx, []gpurent.GPUEvent{good, gpuEvent("gev-lost", "host-missing", "GPU-x", 2, 79)})
	wantCode(t, err, gpurent.CodeInvalid, "event of an unknown host")
	_, err = s.AddGPUEvents(ctx, []gpurent.GPUEvent{good, {ID: "gev-nohost", Kind: "xid"}})
	wantCode(t, err, gpurent.CodeInvalid, "event without host")
	_, err = s.AddGPUEvents(ctx, []gpurent.GPUEvent{good, {ID: "gev-nokind", HostID: h.ID}})
	wantCode(t, err, gpurent.CodeInvalid, "event without kind")
	got, err := s.ListGPUEvents(ctx, gpurent.GPUEventFilter{})
	must(t, err, "list")
	same(t, "refused batches wrote nothing", got, []gpurent.GPUEvent{})

	// A big batch goes in whole, more than one statement's worth, once.
	big := make([]gpurent.GPUEvent, 1234)
	for i := range big {
		big[i] = gpuEvent(fmt.Sprintf("gev-big-%04d", i), h.ID, h.GPUs[0].ID, i, 63)
	}
	n, err := s.AddGPUEvents(ctx, big)
	must(t, err, "big batch")
	if n != len(big) {
		t.Fatalf("big batch added %d, want %d", n, len(big))
	}
	big = append(big, good)
	n, err = s.AddGPUEvents(ctx, big)
	must(t, err, "big batch again")
	if n != 1 {
		t.Fatalf("big batch resent with one new event added %d, want 1", n)
	}
	got, err = s.ListGPUEvents(ctx, gpurent.GPUEventFilter{Limit: 3})
	must(t, err, "newest of the big batch")
	same(t, "newest three", eventIDs(got), []string{"gev-big-1233", "gev-big-1232", "gev-big-1231"})

	// Inside a transaction: counted and visible there, gone on rollback.
	errRollback := errors.New("roll back")
	err = s.InTx(ctx, func(q gpurent.Queries) error {
		n, err := q.AddGPUEvents(ctx, []gpurent.GPUEvent{gpuEvent("gev-tx", h.ID, h.GPUs[0].ID, 5000, 79), good})
		if err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("in tx: added %d, want 1", n)
		}
		got, err := q.ListGPUEvents(ctx, gpurent.GPUEventFilter{Limit: 1})
		if err != nil {
			return err
		}
		if len(got) != 1 || got[0].ID != "gev-tx" {
			return fmt.Errorf("in tx: newest event %+v, want gev-tx", got)
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("transaction: %v", err)
	}
	got, err = s.ListGPUEvents(ctx, gpurent.GPUEventFilter{Since: at(5000)})
	must(t, err, "after rollback")
	same(t, "event of a rolled-back transaction", got, []gpurent.GPUEvent{})
}

// gpuOf finds the GPU id in h.
func gpuOf(t *testing.T, h *gpurent.Host, id string) gpurent.GPU {
	t.Helper()
	for _, g := range h.GPUs {
		if g.ID == id {
			return g
		}
	}
	t.Fatalf("GPU %s not on host %s", id, h.ID)
	return gpurent.GPU{}
}

// healthOf reads the GPU's health and reason through HostByID and
// ListHosts, failing when the two disagree.
func healthOf(t *testing.T, s gpurent.Store, hostID, gpuID string) (gpurent.GPUHealth, string) {
	t.Helper()
	h, err := s.HostByID(t.Context(), hostID)
	must(t, err, "host by id")
	g := gpuOf(t, h, gpuID)
	hosts, err := s.ListHosts(t.Context())
	must(t, err, "list hosts")
	for i := range hosts {
		if hosts[i].ID == hostID {
			same(t, "GPU in ListHosts vs HostByID", gpuOf(t, &hosts[i], gpuID), g)
			return g.Health, g.HealthReason
		}
	}
	t.Fatalf("host %s not listed", hostID)
	return "", ""
}

func testSetGPUHealth(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	h := SeedHost(t, s, "hl", "h100-80g-sxm", 3)
	g0, g1 := h.GPUs[0].ID, h.GPUs[1].ID
	if hl, why := healthOf(t, s, h.ID, g0); hl != gpurent.GPUHealthy || why != "" {
		t.Fatalf("new GPU: health %q reason %q", hl, why)
	}

	must(t, s.SetGPUHealth(ctx, g0, gpurent.GPUCordoned, "Xid 79: GPU has fallen off the bus"), "cordon")
	if hl, why := healthOf(t, s, h.ID, g0); hl != gpurent.GPUCordoned || why != "Xid 79: GPU has fallen off the bus" {
		t.Fatalf("cordoned GPU: health %q reason %q", hl, why)
	}
	if hl, why := healthOf(t, s, h.ID, g1); hl != gpurent.GPUHealthy || why != "" {
		t.Fatalf("another GPU changed: health %q reason %q", hl, why)
	}
	must(t, s.SetGPUHealth(ctx, g0, gpurent.GPUFailed, "reset failed"), "fail")
	if hl, why := healthOf(t, s, h.ID, g0); hl != gpurent.GPUFailed || why != "reset failed" {
		t.Fatalf("failed GPU: health %q reason %q", hl, why)
	}
	// The same health again, with the same reason: still found.
	must(t, s.SetGPUHealth(ctx, g0, gpurent.GPUFailed, "reset failed"), "same health again")

	wantCode(t, s.SetGPUHealth(ctx, "GPU-missing", gpurent.GPUCordoned, "x"), gpurent.CodeNotFound, "unknown GPU")
	wantCode(t, s.SetGPUHealth(ctx, g1, "sick", "x"), gpurent.CodeInvalid, "unknown health")
	wantCode(t, s.SetGPUHealth(ctx, g1, "", "x"), gpurent.CodeInvalid, "empty health")
	if hl, _ := healthOf(t, s, h.ID, g1); hl != gpurent.GPUHealthy {
		t.Fatalf("refused SetGPUHealth wrote %q", hl)
	}

	// The agent's inventory sync keeps the reason while the health stays,
	// and clears it when the health changes or the GPU goes missing.
	must(t, s.SetGPUHealth(ctx, g1, gpurent.GPUCordoned, "operator: fan noise"), "cordon g1")
	inv := make([]gpurent.GPU, len(h.GPUs))
	copy(inv, h.GPUs)
	inv[0].Health = gpurent.GPUFailed     // as stored
	inv[1].Health = gpurent.GPUCordoned   // as stored
	inv[2].Health = gpurent.GPUDegraded   // new
	inv[2].HealthReason = "PCIe Gen3 x16" // new, with its reason
	must(t, s.SyncHostGPUs(ctx, h.ID, inv), "sync, same health")
	if hl, why := healthOf(t, s, h.ID, g0); hl != gpurent.GPUFailed || why != "reset failed" {
		t.Fatalf("sync with the same health lost the reason: %q %q", hl, why)
	}
	if hl, why := healthOf(t, s, h.ID, inv[2].ID); hl != gpurent.GPUDegraded || why != "PCIe Gen3 x16" {
		t.Fatalf("sync with a new health and reason: %q %q", hl, why)
	}
	inv[0].Health = gpurent.GPUHealthy
	must(t, s.SyncHostGPUs(ctx, h.ID, inv[:2]), "sync: g0 healthy, third GPU gone")
	if hl, why := healthOf(t, s, h.ID, g0); hl != gpurent.GPUHealthy || why != "" {
		t.Fatalf("sync with another health kept the old reason: %q %q", hl, why)
	}
	if hl, why := healthOf(t, s, h.ID, g1); hl != gpurent.GPUCordoned || why != "operator: fan noise" {
		t.Fatalf("untouched cordoned GPU: %q %q", hl, why)
	}
	if hl, why := healthOf(t, s, h.ID, inv[2].ID); hl != gpurent.GPUMissing || why != "" {
		t.Fatalf("GPU gone from the inventory: %q %q", hl, why)
	}

	// Inside a transaction, rolled back: nothing stays.
	errRollback := errors.New("roll back")
	err := s.InTx(ctx, func(q gpurent.Queries) error {
		if err := q.SetGPUHealth(ctx, g0, gpurent.GPURetired, "RMA"); err != nil {
			return err
		}
		h, err := q.HostByID(ctx, h.ID)
		if err != nil {
			return err
		}
		if g := gpuOf(t, h, g0); g.Health != gpurent.GPURetired || g.HealthReason != "RMA" {
			return fmt.Errorf("in tx: %+v", g)
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("transaction: %v", err)
	}
	if hl, why := healthOf(t, s, h.ID, g0); hl != gpurent.GPUHealthy || why != "" {
		t.Fatalf("rolled-back SetGPUHealth stayed: %q %q", hl, why)
	}
}

// fullIncident is an open, host-attributed incident on the GPU of the
// instance, with every field set.
func fullIncident(hostID, gpuID string, in *gpurent.Instance, sec int) *gpurent.Incident {
	return &gpurent.Incident{HostID: hostID, GPUID: gpuID, InstanceID: in.ID, AccountID: in.AccountID,
		Class: gpurent.FaultReset, Attribution: gpurent.AttrHost, Cause: "Xid 79: GPU has fallen off the bus",
		State: gpurent.IncidentOpen, StartedAt: at(sec), CreatedAt: at(sec + 1), UpdatedAt: at(sec + 2)}
}

func testIncidents(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	h := SeedHost(t, s, "inc", "h100-80g-sxm", 2)
	acc := SeedAccount(t, s, "inc@example.com")
	in := SeedInstance(t, s, acc.ID, "inc")

	inc := fullIncident(h.ID, h.GPUs[0].ID, in, 10)
	must(t, s.CreateIncident(ctx, inc), "create incident")
	if !strings.HasPrefix(inc.ID, gpurent.PrefixIncident+"-") {
		t.Fatalf("incident id %q not generated with prefix", inc.ID)
	}
	want := *fullIncident(h.ID, h.GPUs[0].ID, in, 10)
	want.ID = inc.ID
	want.StartedAt, want.CreatedAt, want.UpdatedAt = utc(at(10)), utc(at(11)), utc(at(12))
	same(t, "created incident as stored", *inc, want)
	got, err := s.IncidentByID(ctx, inc.ID)
	must(t, err, "incident by id")
	same(t, "incident round trip", *got, want)
	for name, tm := range map[string]time.Time{"started_at": got.StartedAt, "created_at": got.CreatedAt,
		"updated_at": got.UpdatedAt} {
		if tm.Location() != time.UTC {
			t.Fatalf("%s read back in %v, want UTC", name, tm.Location())
		}
	}

	// Resolve it with a credit.
	end := at(100)
	inc.State, inc.EndedAt, inc.UpdatedAt = gpurent.IncidentResolved, &end, at(101)
	inc.Cause, inc.Class, inc.Attribution = "Xid 79, reset failed", gpurent.FaultRMA, gpurent.AttrHost
	inc.CreditFen, inc.CreditKey = 1234, "sla:"+inc.ID
	inc.GPUID, inc.HostID = "GPU-not-written", "host-not-written" // not written by an update
	must(t, s.UpdateIncident(ctx, inc), "resolve")
	want.State, want.Cause, want.Class = gpurent.IncidentResolved, "Xid 79, reset failed", gpurent.FaultRMA
	endUTC := utc(end)
	want.EndedAt, want.UpdatedAt, want.CreditFen, want.CreditKey = &endUTC, utc(at(101)), 1234, "sla:"+inc.ID
	got, err = s.IncidentByID(ctx, inc.ID)
	must(t, err, "read resolved")
	same(t, "resolved incident", *got, want)
	if got.EndedAt.Location() != time.UTC {
		t.Fatalf("ended_at read back in %v", got.EndedAt.Location())
	}

	// Defaults: id, state open, times now, started at creation; a host-wide
	// incident of no instance.
	before := time.Now().Add(-time.Second)
	bare := &gpurent.Incident{HostID: h.ID, Class: gpurent.FaultHostDown, Attribution: gpurent.AttrHost, Cause: "agent silent"}
	must(t, s.CreateIncident(ctx, bare), "create with defaults")
	if bare.State != gpurent.IncidentOpen || bare.CreatedAt.Before(before) || bare.CreatedAt.Location() != time.UTC ||
		!bare.UpdatedAt.Equal(bare.CreatedAt) || !bare.StartedAt.Equal(bare.CreatedAt) || bare.EndedAt != nil {
		t.Fatalf("defaults of a created incident: %+v", bare)
	}
	got, err = s.IncidentByID(ctx, bare.ID)
	must(t, err, "read defaults")
	same(t, "incident with defaults", *got, *bare)

	// Created resolved without an end: it ended when last updated.
	done := &gpurent.Incident{HostID: h.ID, GPUID: h.GPUs[1].ID, Class: gpurent.FaultInfo, Attribution: gpurent.AttrNone,
		State: gpurent.IncidentResolved, StartedAt: at(1), CreatedAt: at(2), UpdatedAt: at(3)}
	must(t, s.CreateIncident(ctx, done), "create resolved")
	if done.EndedAt == nil || !done.EndedAt.Equal(utc(at(3))) {
		t.Fatalf("resolved incident without an end: ended %v, want %v", done.EndedAt, utc(at(3)))
	}
	got, err = s.IncidentByID(ctx, done.ID)
	must(t, err, "read resolved at creation")
	same(t, "resolved at creation", *got, *done)

	// Resolved by an update without an end: ended at the update time.
	bare.State, bare.UpdatedAt = gpurent.IncidentResolved, at(500)
	must(t, s.UpdateIncident(ctx, bare), "resolve without an end")
	if bare.EndedAt == nil || !bare.EndedAt.Equal(utc(at(500))) || !bare.UpdatedAt.Equal(utc(at(500))) {
		t.Fatalf("resolved by update: ended %v updated %v", bare.EndedAt, bare.UpdatedAt)
	}
	got, err = s.IncidentByID(ctx, bare.ID)
	must(t, err, "read resolved by update")
	same(t, "resolved by update", *got, *bare)
	// Reopened: the end goes.
	bare.State, bare.EndedAt, bare.UpdatedAt = gpurent.IncidentOpen, nil, at(600)
	must(t, s.UpdateIncident(ctx, bare), "reopen")
	got, err = s.IncidentByID(ctx, bare.ID)
	must(t, err, "read reopened")
	same(t, "reopened", *got, *bare)

	// Refusals, writing nothing.
	_, err = s.IncidentByID(ctx, "inc-missing")
	wantCode(t, err, gpurent.CodeNotFound, "missing incident")
	missing := fullIncident(h.ID, "", in, 1)
	missing.ID = "inc-missing"
	callerUpdated := missing.UpdatedAt
	wantCode(t, s.UpdateIncident(ctx, missing), gpurent.CodeNotFound, "update of a missing incident")
	if missing.UpdatedAt != callerUpdated {
		t.Fatalf("a refused update changed the caller's UpdatedAt to %v", missing.UpdatedAt)
	}
	dup := fullIncident(h.ID, "", in, 1)
	dup.ID = inc.ID
	wantCode(t, s.CreateIncident(ctx, dup), gpurent.CodeConflict, "same incident id")
	for name, mut := range map[string]func(x *gpurent.Incident){
		"no host":            func(x *gpurent.Incident) { x.HostID = "" },
		"unknown host":       func(x *gpurent.Incident) { x.HostID = "host-missing" },
		"unknown class":      func(x *gpurent.Incident) { x.Class = "cosmic_ray" },
		"no class":           func(x *gpurent.Incident) { x.Class = "" },
		"unknown attrib":     func(x *gpurent.Incident) { x.Attribution = "vendor" },
		"unknown state":      func(x *gpurent.Incident) { x.State = "closed" },
		"negative credit":    func(x *gpurent.Incident) { x.CreditFen = -1 },
		"open with an end":   func(x *gpurent.Incident) { e := at(50); x.EndedAt = &e },
		"ended before start": func(x *gpurent.Incident) { e := at(0); x.State, x.EndedAt = gpurent.IncidentResolved, &e },
	} {
		bad := fullIncident(h.ID, "", in, 5)
		mut(bad)
		wantCode(t, s.CreateIncident(ctx, bad), gpurent.CodeInvalid, "create: "+name)
		if name == "open with an end" || name == "ended before start" {
			if bad.EndedAt == nil {
				t.Fatalf("a refused create cleared the caller's EndedAt (%s)", name)
			}
		}
	}
	for name, mut := range map[string]func(x *gpurent.Incident){
		"unknown class":    func(x *gpurent.Incident) { x.Class = "cosmic_ray" },
		"unknown state":    func(x *gpurent.Incident) { x.State = "" },
		"open with an end": func(x *gpurent.Incident) { e := at(50); x.State, x.EndedAt = gpurent.IncidentOpen, &e },
		"negative credit":  func(x *gpurent.Incident) { x.CreditFen = -5 },
	} {
		bad := *inc
		mut(&bad)
		wantCode(t, s.UpdateIncident(ctx, &bad), gpurent.CodeInvalid, "update: "+name)
	}
	got, err = s.IncidentByID(ctx, inc.ID)
	must(t, err, "read after refusals")
	same(t, "refused updates wrote nothing", *got, want)
	list, err := s.ListIncidents(ctx, gpurent.IncidentFilter{})
	must(t, err, "list")
	if len(list) != 3 {
		t.Fatalf("refused creates wrote: %d incidents, want 3", len(list))
	}
}

func incidentIDs(list []gpurent.Incident) []string {
	out := make([]string, len(list))
	for i, x := range list {
		out[i] = x.ID
	}
	return out
}

func testListIncidents(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	ha := SeedHost(t, s, "li-a", "h100-80g-sxm", 2)
	hb := SeedHost(t, s, "li-b", "h100-80g-sxm", 1)
	alice := SeedAccount(t, s, "li-alice@example.com")
	bob := SeedAccount(t, s, "li-bob@example.com")
	ia := SeedInstance(t, s, alice.ID, "ia")
	ib := SeedInstance(t, s, bob.ID, "ib")

	mk := func(id, hostID, gpuID string, in *gpurent.Instance, start int, end int) *gpurent.Incident {
		x := &gpurent.Incident{ID: id, HostID: hostID, GPUID: gpuID, Class: gpurent.FaultReset,
			Attribution: gpurent.AttrHost, State: gpurent.IncidentOpen, StartedAt: at(start), CreatedAt: at(start)}
		if in != nil {
			x.InstanceID, x.AccountID = in.ID, in.AccountID
		}
		if end > 0 {
			e := at(end)
			x.State, x.EndedAt = gpurent.IncidentResolved, &e
		}
		must(t, s.CreateIncident(ctx, x), "create "+id)
		return x
	}
	// inc-1: alice's instance on GPU a0, resolved at 30.
	// inc-2: bob's instance on GPU b0, open.
	// inc-3: idle GPU a1, resolved at 80.
	// inc-4: host-wide on host a, alice's instance, open.
	// inc-5: alice's instance on a0 again, same start as inc-4, resolved at 200.
	i1 := mk("inc-1", ha.ID, ha.GPUs[0].ID, ia, 10, 30)
	i2 := mk("inc-2", hb.ID, hb.GPUs[0].ID, ib, 20, 0)
	mk("inc-3", ha.ID, ha.GPUs[1].ID, nil, 40, 80)
	i4 := mk("inc-4", ha.ID, "", ia, 60, 0)
	i5 := mk("inc-5", ha.ID, ha.GPUs[0].ID, ia, 60, 200)

	for _, c := range []struct {
		name string
		f    gpurent.IncidentFilter
		want []string
	}{
		{"all, newest first (a tie in reverse insertion order)", gpurent.IncidentFilter{},
			[]string{"inc-5", "inc-4", "inc-3", "inc-2", "inc-1"}},
		{"instance", gpurent.IncidentFilter{InstanceID: ia.ID}, []string{"inc-5", "inc-4", "inc-1"}},
		{"account", gpurent.IncidentFilter{AccountID: bob.ID}, []string{"inc-2"}},
		{"host", gpurent.IncidentFilter{HostID: ha.ID}, []string{"inc-5", "inc-4", "inc-3", "inc-1"}},
		{"GPU", gpurent.IncidentFilter{GPUID: ha.GPUs[0].ID}, []string{"inc-5", "inc-1"}},
		{"idle GPU", gpurent.IncidentFilter{GPUID: ha.GPUs[1].ID}, []string{"inc-3"}},
		{"open", gpurent.IncidentFilter{OpenOnly: true}, []string{"inc-4", "inc-2"}},
		{"open on host a", gpurent.IncidentFilter{HostID: ha.ID, OpenOnly: true}, []string{"inc-4"}},
		{"since: open, or ended at or after", gpurent.IncidentFilter{Since: at(80)}, []string{"inc-5", "inc-4", "inc-3", "inc-2"}},
		{"since, a microsecond after an end", gpurent.IncidentFilter{Since: at(80).Add(time.Microsecond)},
			[]string{"inc-5", "inc-4", "inc-2"}},
		{"since before everything", gpurent.IncidentFilter{Since: at(0)}, []string{"inc-5", "inc-4", "inc-3", "inc-2", "inc-1"}},
		{"since and open", gpurent.IncidentFilter{Since: at(1000), OpenOnly: true}, []string{"inc-4", "inc-2"}},
		{"since and account", gpurent.IncidentFilter{Since: at(1000), AccountID: alice.ID}, []string{"inc-4"}},
		{"instance and GPU", gpurent.IncidentFilter{InstanceID: ia.ID, GPUID: ha.GPUs[0].ID}, []string{"inc-5", "inc-1"}},
		{"instance of another account", gpurent.IncidentFilter{InstanceID: ia.ID, AccountID: bob.ID}, []string{}},
		{"unknown instance", gpurent.IncidentFilter{InstanceID: "inst-missing"}, []string{}},
	} {
		got, err := s.ListIncidents(ctx, c.f)
		must(t, err, c.name)
		same(t, c.name, incidentIDs(got), c.want)
	}
	// Listed incidents are whole.
	got, err := s.ListIncidents(ctx, gpurent.IncidentFilter{AccountID: alice.ID})
	must(t, err, "alice's incidents")
	same(t, "alice's incidents, whole", got, []gpurent.Incident{*i5, *i4, *i1})
	got, err = s.ListIncidents(ctx, gpurent.IncidentFilter{HostID: hb.ID})
	must(t, err, "host b")
	same(t, "host b's incident, whole", got, []gpurent.Incident{*i2})

	// Resolving moves it out of the open ones.
	end := at(300)
	i2.State, i2.EndedAt = gpurent.IncidentResolved, &end
	must(t, s.UpdateIncident(ctx, i2), "resolve inc-2")
	got, err = s.ListIncidents(ctx, gpurent.IncidentFilter{OpenOnly: true})
	must(t, err, "open after resolving")
	same(t, "open after resolving", incidentIDs(got), []string{"inc-4"})
}

func testIncidentEntries(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	h := SeedHost(t, s, "ie", "h100-80g-sxm", 1)
	inc := &gpurent.Incident{HostID: h.ID, GPUID: h.GPUs[0].ID, Class: gpurent.FaultReset, Attribution: gpurent.AttrHost}
	must(t, s.CreateIncident(ctx, inc), "create incident")
	other := &gpurent.Incident{HostID: h.ID, Class: gpurent.FaultNode, Attribution: gpurent.AttrHost}
	must(t, s.CreateIncident(ctx, other), "create other incident")

	entries, err := s.ListIncidentEntries(ctx, inc.ID)
	must(t, err, "entries of a new incident")
	same(t, "no entries yet", entries, []gpurent.IncidentEntry{})

	add := func(id string, sec int, kind, msg string) gpurent.IncidentEntry {
		e := gpurent.IncidentEntry{IncidentID: id, At: at(sec), Kind: kind, Message: msg}
		must(t, s.AddIncidentEntry(ctx, &e), "add "+kind)
		if !e.At.Equal(utc(at(sec))) || e.At.Location() != time.UTC {
			t.Fatalf("entry time as stored: %v", e.At)
		}
		return e
	}
	d := add(inc.ID, 10, "detected", "Xid 79 on GPU 0")
	a := add(inc.ID, 12, "action", "GPU cordoned")
	f := add(inc.ID, 12, "failover", "moved to host-b") // same instant: insertion order
	early := add(inc.ID, 11, "note", "reported late, happened earlier")
	add(other.ID, 5, "detected", "host silent")
	entries, err = s.ListIncidentEntries(ctx, inc.ID)
	must(t, err, "entries")
	same(t, "entries oldest first", entries, []gpurent.IncidentEntry{d, early, a, f})

	// A zero time is now.
	before := time.Now().Add(-time.Second)
	now := gpurent.IncidentEntry{IncidentID: other.ID, Kind: "resolved", Message: "agent back"}
	must(t, s.AddIncidentEntry(ctx, &now), "entry without time")
	if now.At.Before(before) || now.At.Location() != time.UTC {
		t.Fatalf("entry without time stored at %v", now.At)
	}
	entries, err = s.ListIncidentEntries(ctx, other.ID)
	must(t, err, "other's entries")
	if len(entries) != 2 {
		t.Fatalf("other incident's entries: %+v", entries)
	}
	same(t, "entry without time as stored", entries[1], now)

	err = s.AddIncidentEntry(ctx, &gpurent.IncidentEntry{IncidentID: "inc-missing", At: at(1), Kind: "note"})
	wantCode(t, err, gpurent.CodeNotFound, "entry of an unknown incident")
	_, err = s.ListIncidentEntries(ctx, "inc-missing")
	wantCode(t, err, gpurent.CodeNotFound, "entries of an unknown incident")
	err = s.AddIncidentEntry(ctx, &gpurent.IncidentEntry{IncidentID: inc.ID, At: at(1)})
	wantCode(t, err, gpurent.CodeInvalid, "entry without kind")

	// Inside a transaction, an unknown incident is not_found and the
	// transaction goes on (PostgreSQL would abort it on a failed insert).
	must(t, s.InTx(ctx, func(q gpurent.Queries) error {
		err := q.AddIncidentEntry(ctx, &gpurent.IncidentEntry{IncidentID: "inc-missing", Kind: "note"})
		if !gpurent.IsCode(err, gpurent.CodeNotFound) {
			return fmt.Errorf("in tx, unknown incident: %v", err)
		}
		return q.AddIncidentEntry(ctx, &gpurent.IncidentEntry{IncidentID: inc.ID, At: at(99), Kind: "credit", Message: "12.34 CNY"})
	}), "entries in a transaction")
	entries, err = s.ListIncidentEntries(ctx, inc.ID)
	must(t, err, "entries after the transaction")
	if len(entries) != 5 || entries[4].Kind != "credit" {
		t.Fatalf("entries after the transaction: %+v", entries)
	}
}

func testInstanceFailover(t *testing.T, s gpurent.Store) {
	ctx := t.Context()
	acc := SeedAccount(t, s, "fo@example.com")
	unset := SeedInstance(t, s, acc.ID, "unset")
	wait := &gpurent.Instance{AccountID: acc.ID, Name: "wait", Image: "busybox", TypeID: "h100-80g-sxm", GPUCount: 1,
		State: gpurent.StatePending, Plan: gpurent.PlanHourly, Failover: gpurent.FailoverWait, CreatedAt: at(1)}
	must(t, s.CreateInstance(ctx, wait), "create with failover wait")

	got, err := s.InstanceByID(ctx, unset.ID)
	must(t, err, "read unset")
	if got.Failover != "" {
		t.Fatalf("unset failover read back as %q, want \"\"", got.Failover)
	}
	got, err = s.InstanceByID(ctx, wait.ID)
	must(t, err, "read wait")
	same(t, "instance with failover wait", *got, *wait)

	// UpdateInstance writes it, both ways.
	got.Failover = gpurent.FailoverAuto
	must(t, s.UpdateInstance(ctx, got), "set auto")
	again, err := s.InstanceByID(ctx, wait.ID)
	must(t, err, "read after update")
	if again.Failover != gpurent.FailoverAuto || again.Version != 2 {
		t.Fatalf("after update: failover %q version %d", again.Failover, again.Version)
	}
	again.Failover = ""
	must(t, s.UpdateInstance(ctx, again), "unset again")
	list, err := s.ListInstances(ctx, gpurent.InstanceFilter{AccountID: acc.ID})
	must(t, err, "list")
	if len(list) != 2 || list[0].Failover != "" || list[1].Failover != "" {
		t.Fatalf("listed failover choices: %+v", list)
	}
	unset.Failover = gpurent.FailoverWait
	must(t, s.UpdateInstance(ctx, unset), "set wait")
	list, err = s.ListInstances(ctx, gpurent.InstanceFilter{AccountID: acc.ID})
	must(t, err, "list again")
	byName := map[string]gpurent.Failover{}
	for _, in := range list {
		byName[in.Name] = in.Failover
	}
	same(t, "listed failover choices", byName, map[string]gpurent.Failover{"unset": gpurent.FailoverWait, "wait": ""})

	// An unknown choice is refused and writes nothing.
	bad := &gpurent.Instance{AccountID: acc.ID, Name: "bad", Failover: "sometimes"}
	wantCode(t, s.CreateInstance(ctx, bad), gpurent.CodeInvalid, "create with unknown failover")
	unset.Failover = "never"
	wantCode(t, s.UpdateInstance(ctx, unset), gpurent.CodeInvalid, "update with unknown failover")
	got, err = s.InstanceByID(ctx, unset.ID)
	must(t, err, "read after refusal")
	if got.Failover != gpurent.FailoverWait || got.Version != unset.Version {
		t.Fatalf("refused update wrote: failover %q version %d (caller %d)", got.Failover, got.Version, unset.Version)
	}
	list, err = s.ListInstances(ctx, gpurent.InstanceFilter{AccountID: acc.ID})
	must(t, err, "list after refusal")
	if len(list) != 2 {
		t.Fatalf("refused create wrote: %d instances", len(list))
	}
}
