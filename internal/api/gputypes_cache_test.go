package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// cachedServer is e's API with GET /api/v1/gpu-types cached for ttl.
func (e *env) cachedServer(ttl time.Duration) *Server {
	return New(Config{Wallet: e.wallet, Auth: e.auth, Rental: e.rental, Fleet: e.fleet, Billing: e.billing, Store: e.st,
		Version: "v-test", GPUTypesTTL: ttl})
}

func totalOf(t testing.TB, h http.Handler) int {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/gpu-types", nil))
	if w.Code != 200 {
		t.Fatalf("gpu-types: %d %s", w.Code, w.Body)
	}
	var v apiv1.GPUTypeList
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	for _, gt := range v.GPUTypes {
		if gt.ID == testGPUType {
			return gt.Total
		}
	}
	t.Fatalf("no %s in %+v", testGPUType, v)
	return 0
}

// TestGPUTypesCache: the cached answer is dropped by an
// agent's registration through the API and by InvalidateGPUTypes; a
// change the server did not see is served from the cache until then.
func TestGPUTypesCache(t *testing.T) {
	e := newEnv(t)
	c := e.cachedServer(time.Hour)
	h := c.Handler()
	if n := totalOf(t, h); n != 0 {
		t.Fatalf("total %d before any host", n)
	}
	body, _ := json.Marshal(agentproto.RegisterRequest{JoinToken: e.joinToken(), Name: "gpu-c", Zone: testZone, CPUMilli: 64000,
		MemoryMiB: 256 * 1024, DiskGiB: 2000, Runtime: "docker", AgentVersion: "v-test", GPUs: []agentproto.GPUInfo{
			{UUID: "GPU-c-0", Index: 0, Type: testGPUType, Name: "NVIDIA GeForce RTX 4090", MemoryMiB: 24564, TopoGroup: "pcie0", Health: "healthy"},
			{UUID: "GPU-c-1", Index: 1, Type: testGPUType, Name: "NVIDIA GeForce RTX 4090", MemoryMiB: 24564, TopoGroup: "pcie0", Health: "healthy"}}})
	w := httptest.NewRecorder()
	r := httptest.NewRequest("POST", agentproto.PathRegister, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Fatalf("register: %d %s", w.Code, w.Body)
	}
	if n := totalOf(t, h); n != 2 {
		t.Fatalf("total %d after a registration through this server, want 2", n)
	}
	e.host("gpu-d", 2) // through another server: this one's cache holds
	if n := totalOf(t, h); n != 2 {
		t.Fatalf("total %d from the cache, want 2", n)
	}
	c.InvalidateGPUTypes()
	if n := totalOf(t, h); n != 4 {
		t.Fatalf("total %d after InvalidateGPUTypes, want 4", n)
	}
}

// BenchmarkGPUTypes10kHosts is GET /api/v1/gpu-types on a fleet of 10,000
// hosts of 8 GPUs: "uncached" reads every host per request (the behaviour
// before the cache), "cached" serves one answer for 2 s.
func BenchmarkGPUTypes10kHosts(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	hosts := storetest.SeedFleet(b, e.st, 10_000, 8)
	now := time.Now()
	for _, h := range hosts {
		if err := e.st.TouchHost(ctx, h.ID, now); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		ttl  time.Duration
	}{{"uncached", 0}, {"cached", 2 * time.Second}} {
		b.Run(c.name, func(b *testing.B) {
			h := e.cachedServer(c.ttl).Handler()
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/gpu-types", nil))
			if w.Code != 200 || !bytes.Contains(w.Body.Bytes(), []byte(`"total":80000`)) {
				b.Fatalf("gpu-types: %d %.300s", w.Code, w.Body)
			}
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/gpu-types", nil))
				if w.Code != 200 {
					b.Fatal(fmt.Sprint("status ", w.Code))
				}
			}
		})
	}
}
