package ledger

import "testing"

// FuzzOperationSequences runs the property simulation with the fuzzer's
// bytes as the choices: any sequence of operations must hold every
// invariant. Run it longer with
//
//	go test -run '^$' -fuzz FuzzOperationSequences ./internal/ledger
func FuzzOperationSequences(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x00\x01\x00\x00\x00\x05\x00\x07\x00\x02\x00\x0a\x00\x03"))
	f.Add([]byte("topup grant debit debit expire settle duplicate conflict storage storage"))
	seed := make([]byte, 512)
	for i := range seed {
		seed[i] = byte(i * 37)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		ch := &byteChooser{b: data}
		s := newSim(t, ch)
		for !ch.dry {
			s.step()
		}
		s.finish()
	})
}
