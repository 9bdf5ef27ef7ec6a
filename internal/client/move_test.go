package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/client"
)

func TestMoveRoutes(t *testing.T) {
	rec := newRecorder(t)
	c := client.New(rec.srv.URL, "tok-1", rec.srv.Client())
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	op := apiv1.Operation{ID: "op-1", InstanceID: "ins/1", Kind: "upgrade", Step: "copying",
		From:      apiv1.OperationSource{AllocationID: "al-1", HostID: "h1"},
		To:        apiv1.OperationTarget{AllocationID: "al-2", HostID: "h2", GPUType: "h100-80g-sxm", GPUCount: 4},
		CreatedAt: at, UpdatedAt: at}
	detail := apiv1.OperationDetail{Operation: op, Instance: apiv1.Instance{ID: "ins/1", State: "running", GPUs: []string{}}}
	ratio := 3.17
	plan := apiv1.UpgradePlan{InstanceID: "ins/1", From: apiv1.UpgradeShape{GPUType: "a100-80g-sxm", GPUCount: 1},
		To: apiv1.UpgradeShape{GPUType: "h100-80g-sxm", GPUCount: 4}, SpeedRatio: &ratio, SpeedBasis: "spec", PricedAt: at}
	zero, four := 0, 4

	cases := []struct {
		name            string
		status          int
		answer          any
		call            func() (any, error)
		method, path, q string
		body            string
		idempotent      bool
	}{
		{"plan", 200, plan, func() (any, error) {
			return c.UpgradePlan(ctx, "ins/1", apiv1.UpgradeRequest{GPUType: "h100-80g-sxm", GPUCount: &four, Zone: "cd-tianfu-a"})
		},
			"GET", "/api/v1/instances/ins/1/upgrade/plan", "gpu_count=4&gpu_type=h100-80g-sxm&zone=cd-tianfu-a", "", false},
		{"plan no-GPU", 200, plan, func() (any, error) { return c.UpgradePlan(ctx, "ins/1", apiv1.UpgradeRequest{GPUCount: &zero}) },
			"GET", "/api/v1/instances/ins/1/upgrade/plan", "gpu_count=0", "", false},
		{"upgrade", 202, detail, func() (any, error) {
			return c.Upgrade(ctx, "ins/1", apiv1.UpgradeRequest{GPUType: "h100-80g-sxm", GPUCount: &four}, "k-1")
		}, "POST", "/api/v1/instances/ins/1/upgrade", "", `{"gpu_type":"h100-80g-sxm","gpu_count":4}`, true},
		{"upgrade to no-GPU", 200, detail, func() (any, error) {
			return c.Upgrade(ctx, "ins/1", apiv1.UpgradeRequest{GPUCount: &zero}, "k-1")
		}, "POST", "/api/v1/instances/ins/1/upgrade", "", `{"gpu_count":0}`, true},
		{"migrate", 202, detail, func() (any, error) {
			return c.Migrate(ctx, "ins/1", apiv1.MigrateRequest{Zone: "cd-gaoxin-b"}, "k-1")
		}, "POST", "/api/v1/instances/ins/1/migrate", "", `{"zone":"cd-gaoxin-b"}`, true},
		{"start moved", 202, apiv1.StartResult{Instance: detail.Instance, Operation: &op}, func() (any, error) {
			return c.StartInstanceWith(ctx, "ins/1", apiv1.StartRequest{Move: true, Queue: true}, "k-1")
		}, "POST", "/api/v1/instances/ins/1/start", "", `{"move":true,"queue":true}`, true},
		{"operations", 200, apiv1.OperationList{Operations: []apiv1.Operation{op}}, func() (any, error) { return c.Operations(ctx, "ins/1") },
			"GET", "/api/v1/instances/ins/1/operations", "", "", false},
		{"cancel queue", 200, op, func() (any, error) { return c.CancelQueuedStart(ctx, "ins/1") },
			"DELETE", "/api/v1/instances/ins/1/queue", "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec.answer(tc.status, tc.answer)
			got, err := tc.call()
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			req := rec.last(t)
			if req.Method != tc.method || req.Path != tc.path || req.Query != tc.q || string(req.Body) != tc.body {
				t.Errorf("request %s %s?%s %s, want %s %s?%s %s", req.Method, req.Path, req.Query, req.Body, tc.method, tc.path, tc.q, tc.body)
			}
			if tc.idempotent != (req.Key == "k-1") {
				t.Errorf("Idempotency-Key %q", req.Key)
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tc.answer)
			if string(gj) != string(wj) {
				t.Errorf("result %s, want %s", gj, wj)
			}
		})
	}

	// An empty id is refused before any request.
	if _, err := c.Upgrade(ctx, "", apiv1.UpgradeRequest{}, ""); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Errorf("empty id: %v", err)
	}
	// A problem answer is an error with its code.
	rec.answer(409, apiv1.Problem{Status: 409, Code: "conflict", Detail: "instance ins/1 has an operation in progress"})
	if _, err := c.Migrate(ctx, "ins/1", apiv1.MigrateRequest{}, ""); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("conflict answer: %v", err)
	}
	// Operation finds one in the list, and says when it is not there.
	rec.answer(200, apiv1.OperationList{Operations: []apiv1.Operation{op}})
	if got, err := c.Operation(ctx, "ins/1", "op-1"); err != nil || got.ID != "op-1" {
		t.Errorf("operation: %+v %v", got, err)
	}
	rec.answer(200, apiv1.OperationList{Operations: []apiv1.Operation{}})
	if _, err := c.Operation(ctx, "ins/1", "op-1"); !gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("missing operation: %v", err)
	}
}

// TestUpgradeRetriesOnceWithSameKey: a dropped connection is retried once
// with the same key, so the server makes at most one operation.
func TestUpgradeRetriesOnceWithSameKey(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		n := len(keys)
		mu.Unlock()
		if n == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(apiv1.OperationDetail{Operation: apiv1.Operation{ID: "op-1"}})
	}))
	defer srv.Close()
	c := client.New(srv.URL, "t", &http.Client{Transport: &http.Transport{}})
	two := 2
	d, err := c.Upgrade(context.Background(), "ins-1", apiv1.UpgradeRequest{GPUCount: &two}, "")
	if err != nil || d.Operation.ID != "op-1" {
		t.Fatalf("upgrade after one dropped connection: %+v %v", d, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Fatalf("attempts used keys %q: want two with one non-empty key", keys)
	}
}
