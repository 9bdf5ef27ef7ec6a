package benchjudge

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

func parseFile(t *testing.T, name string) []Record {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := ParseRecords(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return recs
}

func TestParseRecordedOutput(t *testing.T) {
	recs := parseFile(t, "h100-node07-t2.jsonl")
	if len(recs) != 8 {
		t.Fatalf("got %d records, want 8 (the blank line is skipped)", len(recs))
	}
	r := recs[0]
	if !r.Warmup || r.Probe != ProbeGEMMBF16 || r.Value != 771.8 || r.Params.M != 8192 || r.Params.DType != "bf16" ||
		r.Telemetry.MaxTempC != 61 || r.Software.Driver != "550.90.07" || r.Software.Synthetic {
		t.Errorf("first record: %+v", r)
	}
	if want := time.Date(2025, 3, 14, 2, 0, 0, 0, time.UTC); !r.Start.Equal(want) || r.Start.Location() != time.UTC {
		t.Errorf("start %v, want %v in UTC", r.Start, want)
	}
	if recs[4].Error == "" || recs[4].Value != 0 {
		t.Errorf("failed run: %+v", recs[4])
	}
	n := recs[7]
	if n.Probe != ProbeNCCLAllReduce || len(n.GPUUUIDs) != 2 || n.Params.Bytes != 8<<30 || n.Software.NCCL != "2.21.5" {
		t.Errorf("nccl record: %+v", n)
	}
	if got := len(parseFile(t, "a100-lambda-resnet.jsonl")); got != 6 {
		t.Errorf("a100 file: %d records", got)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	recs := parseFile(t, "h100-node07-t2.jsonl")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	again, err := ParseRecords(&buf)
	if err != nil {
		t.Fatalf("re-reading our own output: %v", err)
	}
	if len(again) != len(recs) {
		t.Fatalf("%d != %d", len(again), len(recs))
	}
	for i := range recs {
		a, b := recs[i], again[i]
		if a.GPUKey() != b.GPUKey() || a.Value != b.Value || !a.Start.Equal(b.Start) || a.Params != b.Params || a.Error != b.Error {
			t.Errorf("record %d changed: %+v -> %+v", i, a, b)
		}
	}
}

const goodLine = `{"schema":1,"probe":"copy_h2d","gpu_type":"rtx4090-24g","uuids":["GPU-1"],"value":24.6,"unit":"GB/s","run":1,"warmup":false,"params":{"bytes":1073741824},"started_at":"2025-03-14T10:00:00Z","ended_at":"2025-03-14T10:00:10Z","telemetry":{},"software":{}}`

func TestParseRecordsRejects(t *testing.T) {
	if _, err := ParseRecords(strings.NewReader(goodLine)); err != nil {
		t.Fatalf("good line: %v", err)
	}
	bad := map[string]struct{ old, new string }{
		"unknown field":     {`"run":1`, `"run":1,"colour":"red"`},
		"schema":            {`"schema":1`, `"schema":2`},
		"unknown probe":     {`"copy_h2d"`, `"h2d_speed"`},
		"wrong unit":        {`"unit":"GB/s"`, `"unit":"GiB/s"`},
		"no uuid":           {`["GPU-1"]`, `[]`},
		"empty uuid":        {`["GPU-1"]`, `[""]`},
		"multi-GPU probe":   {`"probe":"copy_h2d"`, `"probe":"nccl_allreduce"`}, // on one GPU
		"zero value":        {`"value":24.6`, `"value":0`},
		"negative value":    {`"value":24.6`, `"value":-1`},
		"huge value":        {`"value":24.6`, `"value":1e300`},
		"error with value":  {`"software":{}`, `"software":{},"error":"oom"`},
		"end before start":  {`"ended_at":"2025-03-14T10:00:10Z"`, `"ended_at":"2025-03-14T09:00:10Z"`},
		"no start":          {`"started_at":"2025-03-14T10:00:00Z",`, ``},
		"bad time":          {`"started_at":"2025-03-14T10:00:00Z"`, `"started_at":"yesterday"`},
		"negative run":      {`"run":1`, `"run":-1`},
		"negative batch":    {`"bytes":1073741824`, `"batch":-4`},
		"trailing data":     {`"software":{}}`, `"software":{}} {}`},
		"trailing garbage":  {`"software":{}}`, `"software":{}}x`},
		"control character": {`"GPU-1"`, `"GPU-\u0001"`},
		"string value":      {`"value":24.6`, `"value":"24.6"`},
		"many throttles":    {`"telemetry":{}`, `"telemetry":{"throttle_reasons":[` + strings.Repeat(`"a",`, 20) + `"a"]}`},
		"negative temp":     {`"telemetry":{}`, `"telemetry":{"max_temp_c":-5}`},
		"not an object":     {goodLine, `[1,2,3]`},
	}
	for name, c := range bad {
		line := strings.Replace(goodLine, c.old, c.new, 1)
		if line == goodLine {
			t.Fatalf("%s: fixture did not change the line", name)
		}
		input := goodLine + "\n\n" + line + "\n" + goodLine + "\n"
		recs, err := ParseRecords(strings.NewReader(input))
		if err == nil {
			t.Errorf("%s: accepted %s", name, line)
			continue
		}
		if gpurent.ErrorCode(err) != gpurent.CodeInvalid || !strings.Contains(gpurent.ErrorMessage(err), "line 3:") || recs != nil {
			t.Errorf("%s: error %q must be invalid and name line 3", name, err)
		}
	}
}

func TestParseRecordsBounds(t *testing.T) {
	long := strings.Replace(goodLine, `"software":{}`, `"software":{"torch":"`+strings.Repeat("x", MaxLineBytes)+`"}`, 1)
	_, err := ParseRecords(strings.NewReader(goodLine + "\n" + long + "\n"))
	if gpurent.ErrorCode(err) != gpurent.CodeInvalid || !strings.Contains(gpurent.ErrorMessage(err), "line 2:") {
		t.Errorf("over-long line: %v", err)
	}
	many := strings.Repeat(goodLine+"\n", MaxRecords+1)
	_, err = ParseRecords(strings.NewReader(many))
	if gpurent.ErrorCode(err) != gpurent.CodeInvalid || !strings.Contains(gpurent.ErrorMessage(err), "more than") {
		t.Errorf("too many records: %v", err)
	}
	recs, err := ParseRecords(strings.NewReader(""))
	if err != nil || len(recs) != 0 {
		t.Errorf("empty input: %v %v", recs, err)
	}
}

func FuzzParseRecords(f *testing.F) {
	for _, name := range []string{"h100-node07-t2.jsonl", "a100-lambda-resnet.jsonl"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(goodLine))
	f.Add([]byte("{}\n\n{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := ParseRecords(bytes.NewReader(data))
		if err != nil {
			if recs != nil || gpurent.ErrorCode(err) != gpurent.CodeInvalid {
				t.Fatalf("error %v with %d records", err, len(recs))
			}
			return
		}
		for _, r := range recs {
			if err := r.Validate(); err != nil {
				t.Fatalf("accepted an invalid record: %v", err)
			}
			if r.Start.Location() != time.UTC {
				t.Fatalf("start not in UTC")
			}
		}
		// What we accept we can write and read back to the same statistics.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				t.Fatal(err)
			}
		}
		again, err := ParseRecords(&buf)
		if err != nil || len(again) != len(recs) {
			t.Fatalf("round trip: %v", err)
		}
		a, b := Summarize(recs), Summarize(again)
		if len(a) != len(b) {
			t.Fatalf("summaries differ after a round trip")
		}
		for i := range a {
			if a[i].Median != b[i].Median || a[i].MAD != b[i].MAD {
				t.Fatalf("summary %d differs after a round trip", i)
			}
		}
	})
}

func TestParseSetupRoundTrip(t *testing.T) {
	for _, p := range []Params{
		{},
		{M: 8192, N: 8192, K: 8192, DType: "bf16", Seconds: 10},
		{Batch: 128, Harness: "nvidia-dle"},
		{Bytes: 268435456, Algo: "ring", Image: "gpurent-bench@sha256:abc", Seconds: 0.01},
	} {
		if got := ParseSetup(p.Setup()); got != p {
			t.Errorf("ParseSetup(%q) = %+v, want %+v", p.Setup(), got, p)
		}
	}
}
