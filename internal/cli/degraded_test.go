package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// TestRentDegradedFlag: --degraded sends "degraded": true; it cannot go
// with --no-gpu or a package plan.
func TestRentDegradedFlag(t *testing.T) {
	f := newFakeAPI(t)
	h := newHarness(t)
	h.login(f)
	h.ok("rent", "--gpu", "h100-80g-sxm", "--count", "2", "--image", "img", "--degraded")
	var sent []apiv1.CreateInstanceRequest
	for _, r := range f.requests() {
		if r.Method == "POST" && r.Path == "/api/v1/instances" {
			var req apiv1.CreateInstanceRequest
			if err := json.Unmarshal(r.Body, &req); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, req)
		}
	}
	if len(sent) != 1 || !sent[0].Degraded || sent[0].GPUCount != 2 {
		t.Fatalf("sent %+v, want one degraded request for 2 GPUs", sent)
	}
	for _, args := range [][]string{
		{"rent", "--gpu", "h100-80g-sxm", "--image", "img", "--degraded", "--no-gpu"},
		{"rent", "--gpu", "h100-80g-sxm", "--image", "img", "--degraded", "--plan", "daily"},
	} {
		r := h.run("", args...)
		if r.code != 2 || !strings.Contains(r.stderr, "--degraded") {
			t.Errorf("gpurent %v: exit %d, want 2 naming --degraded\n%s", args, r.code, r.stderr)
		}
	}
}
