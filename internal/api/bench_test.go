package api

import (
	"net/http/httptest"
	"testing"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// BenchmarkGetMe is one authenticated request through the whole stack:
// routing, bearer lookup (two SQLite reads), JSON answer, metrics, log.
func BenchmarkGetMe(b *testing.B) {
	e := newEnv(b)
	u := e.customer()
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/api/v1/me", nil)
		r.Header.Set("Authorization", "Bearer "+u.token)
		e.h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatalf("status %d", w.Code)
		}
	}
}

// BenchmarkDecodeCreateInstance is the strict decoder on a typical body.
func BenchmarkDecodeCreateInstance(b *testing.B) {
	body := []byte(`{"name":"train","gpu_type":"h100-80g-sxm","gpu_count":8,"image":"nvcr.io/nvidia/pytorch:24.08-py3","zone":"cd-tianfu-a","plan":"monthly","volume_gib":500}`)
	b.ReportAllocs()
	for b.Loop() {
		var r apiv1.CreateInstanceRequest
		if err := decodeJSON(body, &r); err != nil {
			b.Fatal(err)
		}
	}
}
