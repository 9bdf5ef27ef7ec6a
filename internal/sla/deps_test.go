package sla_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsOnlyStdlibAndDomain holds the package to its promise: nothing
// outside the standard library, the root package and internal/money (the
// amounts as text, itself only the standard library), and within the
// standard library nothing that does network, database or process I/O.
func TestImportsOnlyStdlibAndDomain(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch dep {
		case "github.com/gpurent/gpurent", "github.com/gpurent/gpurent/internal/sla", "github.com/gpurent/gpurent/internal/money":
		default:
			t.Errorf("sla depends on %s; it may import only the standard library, the root package and internal/money", dep)
		}
	}
	out, err = exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "net/http" || dep == "database/sql" || dep == "os/exec" || dep == "net" {
			t.Errorf("sla depends on %s; it is a pure package", dep)
		}
	}
}
