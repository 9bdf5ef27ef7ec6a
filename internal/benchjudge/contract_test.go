package benchjudge_test

import (
	"os"
	"testing"

	"github.com/gpurent/gpurent/internal/benchjudge"
)

// TestRecordsFromBench reads records the benchmark programs' own record code
// wrote (bench/tests/contract/make_contract.py): the two sides agree on the
// schema. The inventory listing is passed over; a failed run is kept as a
// failure; the GEMM runs summarize once the warm-up is dropped.
func TestRecordsFromBench(t *testing.T) {
	f, err := os.Open("testdata/from_bench.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := benchjudge.ParseRecords(f)
	if err != nil {
		t.Fatalf("records the programs write are refused: %v", err)
	}
	if len(recs) != 9 {
		t.Fatalf("%d records, want 9 (the inventory line passed over)", len(recs))
	}
	failed := 0
	for _, r := range recs {
		if r.Error != "" {
			failed++
		}
		if !r.Software.Synthetic {
			t.Errorf("a test record lost its synthetic mark: %+v", r)
		}
	}
	if failed != 1 {
		t.Errorf("%d failed runs, want 1", failed)
	}
	var gemm *benchjudge.Summary
	for _, s := range benchjudge.Summarize(recs) {
		if s.Probe == benchjudge.ProbeGEMMBF16 {
			gemm = &s
		}
	}
	if gemm == nil || gemm.Runs != 5 || gemm.Warmups != 1 || gemm.Median != 792 || gemm.Insufficient {
		t.Fatalf("GEMM summary %+v, want 5 runs, 1 warm-up, median 792", gemm)
	}
	if gemm.Params.M != 8192 || gemm.Params.N != 8192 || gemm.Params.K != 8192 {
		t.Errorf("the programs' square n=8192 read as %dx%dx%d", gemm.Params.M, gemm.Params.N, gemm.Params.K)
	}
}
