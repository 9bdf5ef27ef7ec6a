package rental_test

import (
	"strings"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/rental/rentaltest"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// TestRentPrefersHostHoldingImage: two hosts fit; the one whose agent
// reported (through the fleet's report, as the agent endpoint applies it)
// that it holds the rent's catalog image gets the instance, although the
// other is the better fit; the desired state lists the images to pre-pull.
func TestRentPrefersHostHoldingImage(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	a := e.Register("node-a", zoneA, h100, 8)
	b := e.Register("node-b", zoneA, h100, 8)
	ref := "reg.example.com/base/shell:1"
	if err := e.St.PutBaseImage(e.Ctx, &gpurent.BaseImage{Name: "shell:1", Ref: ref, Prepull: true}); err != nil {
		t.Fatal(err)
	}
	if d := e.DesiredNow(a.ID); len(d.Prepull) != 1 || d.Prepull[0] != ref {
		t.Fatalf("desired pre-pull list: %v", d.Prepull)
	}
	// Without a holder, best fit and then the smaller id decide: note it,
	// and make the other host the one that holds the image.
	first := e.MustRent(e.Alice, rentaltest.Req(h100, 1))
	holder := b
	if first.Instance.HostID == b.ID {
		holder = a
	}
	if err := e.Fleet.Report(e.Ctx, e.Host(holder.ID), agentproto.Report{At: e.Clock.Now(), Runtime: "docker",
		Images: &agentproto.HeldImages{Refs: []string{ref}}}); err != nil {
		t.Fatal(err)
	}
	// The first host now has 7 free (the best fit for 1): still, the
	// holder wins, whether the rent names the image or its catalog name.
	for _, image := range []string{"shell:1", ref} {
		r := rentaltest.Req(h100, 1)
		r.Image = image
		d := e.MustRent(e.Alice, r)
		if d.Instance.HostID != holder.ID || d.Instance.Image != ref {
			t.Errorf("rent of %s: on %s with image %s, want the holder %s with %s", image, d.Instance.HostID, d.Instance.Image, holder.ID, ref)
		}
	}
	// A catalog image that suits other GPU types only: refused before
	// anything is claimed.
	if err := e.St.PutBaseImage(e.Ctx, &gpurent.BaseImage{Name: "a100-only:1", Ref: ref, GPUTypes: []string{"a100-80g-sxm"}}); err != nil {
		t.Fatal(err)
	}
	before := e.Host(a.ID).Generation + e.Host(b.ID).Generation
	r := rentaltest.Req(h100, 1)
	r.Image = "a100-only:1"
	if _, _, err := e.Rent.Rent(e.Ctx, e.Alice, r); !gpurent.IsCode(err, gpurent.CodeInvalid) || !strings.Contains(err.Error(), "suits GPU types a100-80g-sxm only") {
		t.Fatalf("an unsuited catalog image: %v", err)
	}
	if after := e.Host(a.ID).Generation + e.Host(b.ID).Generation; after != before {
		t.Error("a refused rent changed a host's desired state")
	}
}

// TestPullProgressShown: while the agent pulls a provisioning instance's
// image, its progress is the instance's state reason (no event, no new
// desired state); running clears it; a message for another allocation is
// ignored.
func TestPullProgressShown(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	h := e.Register("node-p", zoneA, h100, 8)
	d := e.MustRent(e.Alice, rentaltest.Req(h100, 1))
	in := d.Instance
	gen := e.Host(h.ID).Generation
	msg := "pulling image busybox:1.36: 12.0 MiB of 48.0 MiB (25%)"
	e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, AllocationID: "alloc-other", State: agentproto.StateCreating, Message: msg})
	if got, _ := e.St.InstanceByID(e.Ctx, in.ID); got.StateReason != "" {
		t.Fatalf("another allocation's progress shown: %q", got.StateReason)
	}
	e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, AllocationID: in.AllocationID, State: agentproto.StateCreating, Message: msg})
	got, err := e.St.InstanceByID(e.Ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != gpurent.StateProvisioning || got.StateReason != msg {
		t.Fatalf("while pulling: %s %q, want provisioning %q", got.State, got.StateReason, msg)
	}
	if now := e.Host(h.ID).Generation; now != gen {
		t.Errorf("progress bumped the desired state: %d -> %d", gen, now)
	}
	long := agentproto.ActualInstance{InstanceID: in.ID, AllocationID: in.AllocationID, State: agentproto.StateCreating, Message: strings.Repeat("x", 500)}
	e.Report(h.ID, long)
	if got, _ := e.St.InstanceByID(e.Ctx, in.ID); len(got.StateReason) != 200 {
		t.Errorf("an agent's long message kept %d bytes", len(got.StateReason))
	}
	e.Report(h.ID, agentproto.ActualInstance{InstanceID: in.ID, AllocationID: in.AllocationID, State: agentproto.StateRunning})
	if got, _ := e.St.InstanceByID(e.Ctx, in.ID); got.State != gpurent.StateRunning || got.StateReason != "" {
		t.Errorf("once running: %s %q", got.State, got.StateReason)
	}
}
