package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// degrade lists a host's GPUs of the given indexes as degraded at permille.
func (e *env) degrade(hostID string, permille int, idx ...int) {
	e.t.Helper()
	h, err := e.st.HostByID(context.Background(), hostID)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, g := range h.GPUs {
		for _, i := range idx {
			if g.Index != i {
				continue
			}
			if err := e.st.SetGPUCert(context.Background(), &gpurent.GPUCert{GPUID: g.ID, HostID: h.ID, TypeID: g.TypeID,
				State: gpurent.CertDegraded, RatioPermille: permille, PricePermille: permille, UpdatedAt: time.Now()}); err != nil {
				e.t.Fatal(err)
			}
		}
	}
	e.rental.Invalidate()
}

// typeOf finds the test GPU type in the list.
func typeOf(t *testing.T, l apiv1.GPUTypeList) apiv1.GPUType {
	t.Helper()
	for _, gt := range l.GPUTypes {
		if gt.ID == testGPUType {
			return gt
		}
	}
	t.Fatalf("no %s in %+v", testGPUType, l)
	return apiv1.GPUType{}
}

// TestDegradedRoutes: GET /gpu-types shows degraded GPUs apart with their
// price range; a rent gets them only with "degraded": true.
func TestDegradedRoutes(t *testing.T) {
	e := newEnv(t)
	h := e.host("gpu-a", 4)
	e.degrade(h.id, 850, 2)
	e.degrade(h.id, 880, 3)
	u := e.customer()

	gt := typeOf(t, decode[apiv1.GPUTypeList](t, e.do(req{method: "GET", path: "/api/v1/gpu-types"}), http.StatusOK))
	want := apiv1.DegradedAvailability{Free: 2, MaxPerHost: 2, MinPricePermille: 850, MaxPricePermille: 880}
	if gt.Total != 4 || gt.Free != 2 || gt.Degraded == nil || *gt.Degraded != want || len(gt.Zones) != 1 ||
		gt.Zones[0].Free != 2 || gt.Zones[0].MaxPerHost != 2 || gt.Zones[0].Degraded == nil || *gt.Zones[0].Degraded != want {
		t.Fatalf("gpu type %+v (degraded %+v)", gt, gt.Degraded)
	}

	// Full price: the two others only.
	e.rent(u, 2)
	p := problem(t, e.do(req{method: "POST", path: "/api/v1/instances", token: u.token, body: apiv1.CreateInstanceRequest{
		GPUType: testGPUType, GPUCount: 1, Image: "busybox"}}), http.StatusServiceUnavailable, gpurent.CodeUnavailable)
	if p.Detail == "" {
		t.Fatalf("problem %+v", p)
	}
	in := decode[apiv1.Instance](t, e.do(req{method: "POST", path: "/api/v1/instances", token: u.token, body: apiv1.CreateInstanceRequest{
		GPUType: testGPUType, GPUCount: 2, Image: "busybox", Degraded: true}}), http.StatusCreated)
	if len(in.GPUs) != 2 || in.GPUs[0] != "GPU-gpu-a-02" || in.GPUs[1] != "GPU-gpu-a-03" {
		t.Fatalf("degraded instance on %v", in.GPUs)
	}
	a, err := e.st.AllocationByID(context.Background(), mustInstance(t, e, in.ID).AllocationID)
	if err != nil || a.PricePermille != 865 {
		t.Fatalf("allocation %+v %v: want 865‰", a, err)
	}
	gt = typeOf(t, decode[apiv1.GPUTypeList](t, e.do(req{method: "GET", path: "/api/v1/gpu-types"}), http.StatusOK))
	if gt.Free != 0 || gt.Degraded != nil {
		t.Fatalf("after renting all: %+v", gt)
	}

	// Malformed: degraded with no GPUs, or with a package.
	problem(t, e.do(req{method: "POST", path: "/api/v1/instances", token: u.token, body: apiv1.CreateInstanceRequest{
		GPUType: testGPUType, NoGPU: true, Image: "busybox", Degraded: true}}), http.StatusBadRequest, gpurent.CodeInvalid)
	problem(t, e.do(req{method: "POST", path: "/api/v1/instances", token: u.token, body: apiv1.CreateInstanceRequest{
		GPUType: testGPUType, GPUCount: 1, Image: "busybox", Plan: "daily", Degraded: true}}), http.StatusBadRequest, gpurent.CodeInvalid)
	problem(t, e.do(req{method: "POST", path: "/api/v1/instances", token: u.token, body: map[string]any{
		"gpu_type": testGPUType, "gpu_count": 1, "image": "busybox", "degraded": "yes"}}), http.StatusBadRequest, gpurent.CodeInvalid)
}

func mustInstance(t *testing.T, e *env, id string) *gpurent.Instance {
	t.Helper()
	in, err := e.st.InstanceByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return in
}
