package benchjudge

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Synthesize makes plausible records for a fake GPU from the healthy reference
// figure of its type and probe, so the demo and the tests can show a
// real-looking report: one warm-up run (index 0) and runs measured runs
// (indexes 1..runs) around healthy×degradation with ±1% run-to-run noise. The
// values depend only on the arguments; the times start at the moment of the
// call. Every record says Software.Synthetic and driver "synthetic", so it is
// never mistaken for a measurement.
//
// uuid is one GPU UUID, or for multi-GPU probes (nccl_allreduce, p2p_bw) the
// UUIDs joined by commas. It returns nil when the reference has no healthy
// figure for the type, probe and GPU count (none is made up), or when
// degradation is not in (0, 2] or runs not in 1..1000.
func Synthesize(typeID string, uuid string, probe string, degradation float64, runs int, seed int64) []Record {
	if !(degradation > 0 && degradation <= 2) || runs < 1 || runs > 1000 {
		return nil
	}
	ref, err := Reference()
	if err != nil {
		return nil
	}
	t, ok := ref.Type(typeID)
	if !ok {
		return nil
	}
	uuids := strings.Split(uuid, ",")
	var h Healthy
	found := false
	for _, c := range t.Healthy { // the first figure that fits, in file order
		want := max(c.GPUs, 1)
		if c.Probe == probe && want == len(uuids) {
			h, found = c, true
			break
		}
	}
	if !found {
		return nil
	}
	params := h.Params
	if params.Harness == "" {
		params.Harness = "gpurent-synthetic"
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6770757265)) // second word: "gpure"
	base := h.Typical() * degradation
	start := time.Now().UTC().Truncate(time.Second)
	const runLen = 60 * time.Second
	recs := make([]Record, 0, runs+1)
	for i := 0; i <= runs; i++ {
		noise := 1 + (rng.Float64()*2-1)*0.01
		value := base * noise
		warm := i == 0
		if warm {
			value *= 0.97 // a cold card measures low: why the warm-up run is dropped
		}
		tel := Telemetry{Samples: int(runLen / time.Second)}
		if degradation < PassRatio {
			tel.ThrottleReasons = []string{"hw_slowdown"}
		}
		recs = append(recs, Record{
			Schema: SchemaVersion, Probe: probe, GPUType: typeID,
			GPUUUIDs: append([]string(nil), uuids...),
			Value:    math.Round(value*100) / 100, Unit: h.Unit,
			Run: i, Warmup: warm, Params: params,
			Start: start, End: start.Add(runLen),
			Telemetry: tel,
			Software:  Software{Driver: "synthetic", CUDA: "synthetic", Synthetic: true},
		})
		start = start.Add(runLen + 5*time.Second)
	}
	return recs
}

// SyntheticUUID is a recognisable fake GPU UUID for the demo and tests.
func SyntheticUUID(typeID string, n int) string {
	return fmt.Sprintf("GPU-synthetic-%s-%04d", typeID, n)
}
