package testtier_test

import (
	"testing"

	"github.com/gpurent/gpurent/internal/testtier"
)

// TestRequire: the fast tier skips with the line naming the dependency;
// the whole suite does not skip.
func TestRequire(t *testing.T) {
	t.Run("whole suite", func(t *testing.T) {
		t.Setenv(testtier.Env, "")
		testtier.Require(t, "the Docker Engine")
		if t.Skipped() {
			t.Fatal("the whole suite skipped")
		}
	})
	var skipped bool
	t.Run("fast tier", func(t *testing.T) {
		t.Setenv(testtier.Env, testtier.Fast)
		defer func() { skipped = t.Skipped() }()
		testtier.Require(t, "the Docker Engine")
		t.Error("the fast tier did not skip")
	})
	if !skipped {
		t.Error("the fast tier's test is not marked skipped")
	}
}
