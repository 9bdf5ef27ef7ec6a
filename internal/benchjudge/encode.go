package benchjudge

import (
	"encoding/json"

	"github.com/gpurent/gpurent"
)

// EncodeRecord writes r as one JSON line (without the newline) that
// ParseRecords reads back as r: the synthetic runner of the agent and the
// tests use it to print records the way the suite does. It refuses a
// record that Validate refuses or that would not fit MaxLineBytes. Times
// are written in UTC; a square GEMM shape (M = N = K) is written as n
// alone, as the suite writes it.
func EncodeRecord(r Record) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInvalid, err, "benchmark record: %v", err)
	}
	r.Start, r.End = r.Start.UTC(), r.End.UTC()
	if p := r.Params; p.M == p.N && p.K == p.N {
		r.Params.M, r.Params.K = 0, 0 // ParseRecords widens n back to the square
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "benchmark record: encode")
	}
	if len(b) > MaxLineBytes {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "benchmark record: %d bytes encoded, at most %d a line", len(b), MaxLineBytes)
	}
	return b, nil
}
