package agent

import (
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/gpu/fake"
	"github.com/gpurent/gpurent/internal/imageref"
)

// TestConvergeRefusesImagesOffTheAllowList: whatever the control plane
// asks, the agent never runs (so never pulls) an image from a registry on
// the host itself or off the operator's allow-list; it reports the
// instance failed with why, and runs the allowed one.
func TestConvergeRefusesImagesOffTheAllowList(t *testing.T) {
	cp := newControlPlane(t)
	h := newHost(t, cp)
	rt := &countingRuntime{Runtime: h.runtime(), runs: map[string]int{}}
	cfg := h.config(rt)
	policy, err := imageref.NewPolicy([]string{"docker.io", "registry.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Images = policy
	h.startWith(cfg)
	cp.waitUntil("registration", func() bool { return len(cp.registrations) == 1 })

	loop := desiredRunning("i-5", "alloc-5", fake.UUID(hostName, 5))
	loop.Image = "127.0.0.1:5000/evil:1"
	other := desiredRunning("i-6", "alloc-6", fake.UUID(hostName, 6))
	other.Image = "ghcr.io/someone/img:1"
	good := desiredRunning("i-7", "alloc-7", fake.UUID(hostName, 7))
	good.Image = "registry.example.com/base/cuda:12"
	since := cp.reportCount()
	cp.setDesired(hostName, loop, other, good)
	rep := cp.waitReport("refusals and the allowed one", since, func(r agentproto.Report) bool {
		return hasState("i-5", agentproto.StateFailed, "alloc-5")(r) && hasState("i-6", agentproto.StateFailed, "alloc-6")(r) &&
			hasState("i-7", agentproto.StateRunning, "alloc-7")(r)
	})
	for id, want := range map[string]string{"i-5": "loopback", "i-6": "does not allow"} {
		if ai, _ := instance(rep, id); !strings.Contains(ai.Message, want) {
			t.Errorf("%s failed with %q, want it to say %q", id, ai.Message, want)
		}
		if n := rt.count(id); n != 0 {
			t.Errorf("%s reached the runtime %d times", id, n)
		}
	}
}
