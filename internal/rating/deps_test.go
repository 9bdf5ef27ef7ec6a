package rating_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsOnlyStdlibAndDomain holds the package to its promise: nothing
// outside the standard library and the root package gpurent, and within the
// standard library no I/O-bearing packages such as net/http or database/sql.
func TestImportsOnlyStdlibAndDomain(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != "github.com/gpurent/gpurent" && dep != "github.com/gpurent/gpurent/internal/rating" {
			t.Errorf("rating depends on %s; it may import only the standard library and the root package", dep)
		}
	}
	out, err = exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "net/http" || dep == "database/sql" || dep == "os/exec" {
			t.Errorf("rating depends on %s; it is a pure package", dep)
		}
	}
}
