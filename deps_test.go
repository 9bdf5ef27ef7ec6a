package gpurent_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependenciesPointInward holds the layering of docs/ARCHITECTURE.md:
// the domain and the pure logic packages import no database, HTTP, container
// runtime or adapter package.
func TestDependenciesPointInward(t *testing.T) {
	pure := []string{
		".",
		"./internal/sched",
		"./internal/rental",
		"./internal/fleet",
		"./internal/catalog",
		"./internal/agentproto",
		"./internal/apiv1",
		"./internal/gpu",
		"./internal/agent/runtime",
		"./internal/ledger",
		"./internal/rating",
		"./internal/billing",
		"./internal/academic",
		"./internal/metering",
		"./internal/wallet",
		"./internal/sshkeys",
		"./internal/sla",
		"./internal/health",
		"./internal/certify",
		"./internal/certification",
		"./internal/transparency",
	}
	forbidden := []string{
		"database/sql",
		"net/http",
		"github.com/gpurent/gpurent/internal/store",
		"github.com/gpurent/gpurent/internal/api",
		"github.com/gpurent/gpurent/internal/app",
		"github.com/gpurent/gpurent/internal/agent/runtime/docker",
		"github.com/gpurent/gpurent/internal/agent/runtime/process",
		"github.com/jackc",
		"modernc.org/sqlite",
		"github.com/docker",
		"github.com/moby",
	}
	for _, pkg := range pure {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				if dep == f || strings.HasPrefix(dep, f+"/") {
					t.Errorf("%s depends on %s; pure packages must not", pkg, dep)
				}
			}
		}
	}
}
