package benchjudge

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

// roundTrip encodes recs one a line and parses them back.
func roundTrip(t *testing.T, recs []Record) []Record {
	t.Helper()
	var buf bytes.Buffer
	for _, r := range recs {
		b, err := EncodeRecord(r)
		if err != nil {
			t.Fatalf("EncodeRecord(%s on %s): %v", r.Probe, r.GPUKey(), err)
		}
		if bytes.ContainsRune(b, '\n') {
			t.Fatalf("encoded record holds a newline: %s", b)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	got, err := ParseRecords(&buf)
	if err != nil {
		t.Fatalf("encoded records do not parse: %v", err)
	}
	return got
}

func TestEncodeRecordRoundTripsSynthetic(t *testing.T) {
	var recs []Record
	for _, c := range []struct{ typeID, uuid, probe string }{
		{"h100-80g-sxm", SyntheticUUID("h100-80g-sxm", 0), ProbeGEMMBF16},
		{"h100-80g-sxm", SyntheticUUID("h100-80g-sxm", 0) + "," + SyntheticUUID("h100-80g-sxm", 1), ProbeP2PBW},
		{"a100-80g-sxm", SyntheticUUID("a100-80g-sxm", 3), ProbeResNet50Train},
		{"rtx4090-24g", SyntheticUUID("rtx4090-24g", 1), ProbeH2DBW},
	} {
		got := Synthesize(c.typeID, c.uuid, c.probe, 0.9, 3, 7)
		if len(got) == 0 {
			t.Fatalf("no synthetic %s records for %s", c.probe, c.typeID)
		}
		recs = append(recs, got...)
	}
	if got := roundTrip(t, recs); !reflect.DeepEqual(got, recs) {
		t.Fatalf("round trip changed the records:\n got %+v\nwant %+v", got, recs)
	}
}

func TestEncodeRecordRoundTripsEveryField(t *testing.T) {
	shanghai := time.FixedZone("CST", 8*3600)
	start := time.Date(2026, 11, 30, 9, 2, 3, 456_000_000, shanghai)
	full := Record{
		Schema: SchemaVersion, Probe: ProbeGEMMFP8, GPUType: "h200-141g-sxm", GPUUUIDs: []string{"GPU-5e6f"},
		Value: 1523.25, Unit: UnitTFLOPS, Run: 3, Warmup: false,
		Params: Params{M: 8192, N: 4096, K: 1024, DType: "fp8", Harness: "gpurent", Image: "gpurent-bench@sha256:abc"},
		Start:  start, End: start.Add(61 * time.Second),
		Telemetry: Telemetry{Samples: 61, MaxTempC: 71, MeanSMClockMHz: 1975.5, MinSMClockMHz: 1950,
			MeanPowerW: 690.25, ThrottleReasons: []string{"sw_power_cap", "hw_slowdown"}},
		Software: Software{Driver: "550.54.15", CUDA: "12.4", Torch: "2.5.1", NCCL: "2.21.5"},
	}
	square := full
	square.Probe, square.Unit, square.Value = ProbeGEMMBF16, UnitTFLOPS, 780.5
	square.Params = Params{M: 8192, N: 8192, K: 8192, DType: "bf16"}
	failed := Record{
		Schema: SchemaVersion, Probe: ProbeNCCLAllReduce, GPUType: "h200-141g-sxm",
		GPUUUIDs: []string{"GPU-a", "GPU-b"}, Unit: UnitGBs, Run: 1, Params: Params{Bytes: 256 << 20, Algo: "ring"},
		Start: start.UTC(), End: start.UTC(), Error: "NCCL timeout on rank 1",
	}
	recs := []Record{full, square, failed}
	got := roundTrip(t, recs)
	for i := range recs {
		recs[i].Start, recs[i].End = recs[i].Start.UTC(), recs[i].End.UTC()
	}
	if !reflect.DeepEqual(got, recs) {
		t.Fatalf("round trip changed the records:\n got %+v\nwant %+v", got, recs)
	}
	b, err := EncodeRecord(square)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"params":{"n":8192,"dtype":"bf16"}`) || !strings.Contains(string(b), `"started_at":"2026-11-30T01:02:03.456Z"`) {
		t.Errorf("square shape or UTC time not written as the suite writes them: %s", b)
	}
}

func TestEncodeRecordRefuses(t *testing.T) {
	ok := Synthesize("h100-80g-sxm", SyntheticUUID("h100-80g-sxm", 0), ProbeGEMMBF16, 1, 1, 1)[1]
	huge := ok
	huge.Probe, huge.Unit = ProbeNCCLAllReduce, UnitGBs
	huge.GPUUUIDs = nil
	for i := range 64 {
		huge.GPUUUIDs = append(huge.GPUUUIDs, strings.Repeat("x", 250)+string(rune('A'+i%26))+string(rune('a'+i/26)))
	}
	bad := map[string]Record{
		"unknown probe":     func() Record { r := ok; r.Probe = "gemm_int4"; return r }(),
		"value with error":  func() Record { r := ok; r.Error = "oom"; return r }(),
		"no end":            func() Record { r := ok; r.End = time.Time{}; return r }(),
		"longer than line":  huge,
		"wrong unit":        func() Record { r := ok; r.Unit = UnitGBs; return r }(),
		"control character": func() Record { r := ok; r.GPUType = "h100\n"; return r }(),
	}
	if err := huge.Validate(); err != nil {
		t.Fatalf("the oversized record should be valid, only too long: %v", err)
	}
	for name, r := range bad {
		b, err := EncodeRecord(r)
		if !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("%s: EncodeRecord = %s, %v; want an invalid error", name, b, err)
		}
	}
}
