package ledger

import (
	"math/rand/v2"
	"testing"
)

// TestPropertyRandomSequences drives the ledger through random sequences of
// top-ups, grants, compute and storage debits, expiries, settlements,
// duplicate keys, conflicting keys and malformed requests, and holds every
// invariant after each step (see sim.check) and at the end (sim.finish).
func TestPropertyRandomSequences(t *testing.T) {
	seeds, steps := 300, 400
	if testing.Short() {
		seeds = 50
	}
	for seed := range seeds {
		ch := randChooser{rand.New(rand.NewPCG(uint64(seed), 0x6c6564676572))}
		s := newSim(t, ch)
		for range steps {
			s.step()
			if t.Failed() {
				t.Fatalf("seed %d", seed)
			}
		}
		s.finish()
	}
}
