package gpurent_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// skipCall finds a test that skips itself.
var skipCall = regexp.MustCompile(`\.(Skip|Skipf|SkipNow)\(`)

// TestNoHiddenSkips holds that only the fast tier skips (testtier.Require):
// a test that skips when its dependency is missing would pass `make test`
// without running. The exceptions are benchmarks that need a large disk,
// asked for by name.
func TestNoHiddenSkips(t *testing.T) {
	allowed := map[string]string{
		"internal/testtier/testtier.go":      "the fast tier itself",
		"internal/app/move_bench_test.go":    "the 10 GiB move benchmark runs on request (GPURENT_BENCH_10G)",
		"internal/transfer/bench_test.go":    "the 10 GB move benchmark runs on request (GPURENT_BENCH_10G)",
		"internal/testtier/testtier_test.go": "tests of the fast tier",
	}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if skipCall.Match(b) {
			if _, ok := allowed[filepath.ToSlash(path)]; !ok {
				t.Errorf("%s skips a test: a missing dependency must fail it (call testtier.Require for the fast tier)", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
