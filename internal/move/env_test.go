package move_test

import (
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rental/rentaltest"
)

// The seeded catalog's types and zones, by the short names the tests use.
const h100, a100, zoneA, zoneB = rentaltest.H100, rentaltest.A100, rentaltest.ZoneA, rentaltest.ZoneB

// env is the shared test wiring (the move workflow, the rental service it
// is built on and a fleet service over one real store), with this
// package's helpers.
type env struct{ *rentaltest.Env }

func newEnv(t testing.TB, st gpurent.Store) *env {
	t.Helper()
	return &env{rentaltest.New(t, st, rentaltest.Options{})}
}
