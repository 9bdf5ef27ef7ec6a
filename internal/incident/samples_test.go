package incident_test

import (
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// TestInstanceSamples: the instance's GPU keeps its last 360 samples,
// oldest first, without the repeats of a sample resent by later reports,
// and never a sample from before the instance's allocation (a previous
// tenant's); another account's instance is not found, an operator's view
// is any instance's.
func TestInstanceSamples(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	gpu := w.host.GPUs[0]
	inv := []agentproto.GPUInfo{{UUID: gpu.ID, Index: gpu.Index, Type: gpu.TypeID, MemoryMiB: 81559}}
	report := func(at time.Time, util int, mem int64) {
		t.Helper()
		rep := agentproto.Report{GPUs: inv, Samples: []agentproto.GPUSample{{UUID: gpu.ID, At: at, UtilPercent: util, MemUsedMiB: mem}}}
		if _, err := w.svc.Ingest(ctx, w.host, rep); err != nil {
			t.Fatal(err)
		}
	}
	// A previous tenant's samples, before the allocation began.
	for i := range 5 {
		report(w.t0.Add(-time.Duration(10-i)*time.Second), 99, 80000)
	}
	// 400 samples of this tenant, each reported twice.
	for i := range 400 {
		at := w.t0.Add(time.Duration(i) * time.Second)
		report(at, i%101, int64(i))
		report(at, i%101, int64(i))
	}
	got, err := w.svc.InstanceSamples(ctx, &gpurent.Account{ID: w.in.AccountID, Role: gpurent.RoleCustomer}, w.in.ID)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := got[gpu.ID]
	if len(got) != 1 || !ok {
		t.Fatalf("series for %d GPUs (%v), want one for %s", len(got), got, gpu.ID)
	}
	if s.MemoryMiB != 81559 || s.Index != gpu.Index {
		t.Errorf("GPU described as index %d with %d MiB, want %d with 81559", s.Index, s.MemoryMiB, gpu.Index)
	}
	if len(s.Points) != 360 {
		t.Fatalf("%d samples kept, want the last 360", len(s.Points))
	}
	for i, p := range s.Points {
		n := 40 + i // samples 40..399 remain
		want := w.t0.Add(time.Duration(n) * time.Second)
		if !p.At.Equal(want) || p.UtilPercent != n%101 || p.MemUsedMiB != int64(n) {
			t.Fatalf("sample %d is %+v, want at %s util %d mem %d", i, p, want, n%101, n)
		}
	}

	other := storetest.SeedAccount(t, w.st, "other@example.com")
	if _, err := w.svc.InstanceSamples(ctx, other, w.in.ID); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("another account's view: %v, want not_found", err)
	}
	if _, err := w.svc.InstanceSamples(ctx, other, "i-none"); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("no such instance: %v, want not_found", err)
	}
	if _, err := w.svc.InstanceSamples(ctx, nil, w.in.ID); !gpurent.IsCode(err, gpurent.CodeUnauthorized) {
		t.Errorf("nobody's view: %v, want unauthorized", err)
	}
	ops := &gpurent.Account{ID: "acc-ops", Role: gpurent.RoleOperator}
	if got, err := w.svc.InstanceSamples(ctx, ops, w.in.ID); err != nil || len(got[gpu.ID].Points) != 360 {
		t.Errorf("operator's view: %d samples, %v; want 360", len(got[gpu.ID].Points), err)
	}

	// Once the allocation ends, the instance holds no GPUs: nothing to show.
	if err := w.st.EndAllocation(ctx, w.alloc.ID, w.t0.Add(time.Hour), "stop"); err != nil {
		t.Fatal(err)
	}
	if got, err := w.svc.InstanceSamples(ctx, ops, w.in.ID); err != nil || len(got) != 0 {
		t.Errorf("after the allocation ended: %v, %v; want no series", got, err)
	}
}
