package benchjudge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestSyntheticFleetVerdicts(t *testing.T) {
	ref := mustRef(t)
	for _, c := range []struct {
		typeID, probe string
		params        Params
	}{
		{"h100-80g-sxm", ProbeGEMMBF16, Params{DType: "bf16", Harness: "gpurent-synthetic"}},
		{"a100-80g-sxm", ProbeResNet50Train, Params{Harness: "nvidia-dle"}},
		{"rtx4090-24g", ProbeH2DBW, Params{Harness: "gpurent-synthetic"}},
	} {
		t.Run(c.typeID+"/"+c.probe, func(t *testing.T) {
			tr, _ := ref.Type(c.typeID)
			degradations := map[string]float64{}
			var recs []Record
			for i := range 8 {
				degradations[SyntheticUUID(c.typeID, i)] = 1
			}
			bad := map[float64]string{0.85: SyntheticUUID(c.typeID, 100), 0.92: SyntheticUUID(c.typeID, 101), 0.97: SyntheticUUID(c.typeID, 102)}
			for d, u := range bad {
				degradations[u] = d
			}
			seed := int64(0)
			for u, d := range degradations {
				seed++
				recs = append(recs, Synthesize(c.typeID, u, c.probe, d, 5, seed)...)
			}
			// Through the wire format, as the agent would send them.
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			for _, r := range recs {
				if err := enc.Encode(r); err != nil {
					t.Fatal(err)
				}
			}
			parsed, err := ParseRecords(&buf)
			if err != nil {
				t.Fatalf("synthetic records do not parse: %v", err)
			}
			sums := Summarize(parsed)
			if len(sums) != 11 {
				t.Fatalf("%d summaries", len(sums))
			}
			fleet := FleetMedians(sums)
			if len(fleet) != 1 {
				t.Fatalf("fleet medians %v", fleet)
			}
			want := map[string]Outcome{bad[0.85]: Fail, bad[0.92]: Warn, bad[0.97]: Pass}
			for _, s := range sums {
				if s.Params != c.params || s.Runs != 5 || s.Warmups != 1 || !s.Synthetic {
					t.Errorf("summary %+v", s)
				}
				v := Judge(s, fleet[s.TypeProbe], tr)
				exp, ok := want[s.GPUKey]
				if !ok {
					exp = Pass
				}
				if v.Outcome != exp {
					t.Errorf("%s (x%.2f): %s at %.3f of the fleet, want %s", s.GPUKey, degradations[s.GPUKey], v.Outcome, v.FleetRatio, exp)
				}
				if v.Healthy == nil || !v.Synthetic {
					t.Errorf("%s: verdict %+v", s.GPUKey, v)
				}
				if v.Outcome == Fail {
					rerun := Summarize(Synthesize(c.typeID, s.GPUKey, c.probe, 0.85, 5, 999))[0]
					if got := Confirm(v, Judge(rerun, fleet[s.TypeProbe], tr)); got.Outcome != Fail || got.Provisional {
						t.Errorf("re-run did not confirm: %+v", got)
					}
				}
			}
		})
	}
}

func TestSynthesize(t *testing.T) {
	a := Synthesize("h100-80g-sxm", "GPU-1", ProbeGEMMBF16, 0.85, 6, 42)
	b := Synthesize("h100-80g-sxm", "GPU-1", ProbeGEMMBF16, 0.85, 6, 42)
	if len(a) != 7 || !a[0].Warmup || a[1].Warmup || a[6].Run != 6 {
		t.Fatalf("records %+v", a)
	}
	for i := range a {
		if a[i].Value != b[i].Value {
			t.Errorf("run %d differs for one seed: %v %v", i, a[i].Value, b[i].Value)
		}
		r := a[i]
		if err := r.Validate(); err != nil {
			t.Errorf("run %d invalid: %v", i, err)
		}
		if !r.Software.Synthetic || r.Software.Driver != "synthetic" {
			t.Errorf("run %d not marked synthetic: %+v", i, r.Software)
		}
		if !r.Warmup && (r.Value < 794*0.85*0.99-0.01 || r.Value > 794*0.85*1.01+0.01) {
			t.Errorf("run %d value %v outside ±1%% of 794×0.85", i, r.Value)
		}
		if !reflect.DeepEqual(r.Telemetry.ThrottleReasons, []string{"hw_slowdown"}) {
			t.Errorf("degraded card shows no throttling: %+v", r.Telemetry)
		}
	}
	if c := Synthesize("h100-80g-sxm", "GPU-1", ProbeGEMMBF16, 0.85, 6, 43); c[3].Value == a[3].Value {
		t.Errorf("another seed, same noise")
	}
	uuids := make([]string, 8)
	for i := range uuids {
		uuids[i] = fmt.Sprintf("GPU-%d", i)
	}
	if n := Synthesize("h100-80g-sxm", strings.Join(uuids, ","), ProbeNCCLAllReduce, 1, 5, 1); len(n) != 6 ||
		len(n[1].GPUUUIDs) != 8 || n[1].Params.Algo != "ring" || n[1].Validate() != nil {
		t.Errorf("8-GPU NCCL: %+v", n)
	}
	// No reference figure, no synthetic figure.
	for name, recs := range map[string][]Record{
		"4090 GEMM":        Synthesize("rtx4090-24g", "GPU-1", ProbeGEMMBF16, 1, 5, 1),
		"H100 H2D":         Synthesize("h100-80g-sxm", "GPU-1", ProbeH2DBW, 1, 5, 1),
		"unknown type":     Synthesize("b200-180g", "GPU-1", ProbeGEMMBF16, 1, 5, 1),
		"NCCL on 4":        Synthesize("h100-80g-sxm", "GPU-1,GPU-2,GPU-3,GPU-4", ProbeNCCLAllReduce, 1, 5, 1),
		"zero degradation": Synthesize("h100-80g-sxm", "GPU-1", ProbeGEMMBF16, 0, 5, 1),
		"no runs":          Synthesize("h100-80g-sxm", "GPU-1", ProbeGEMMBF16, 1, 0, 1),
	} {
		if recs != nil {
			t.Errorf("%s: got %d records", name, len(recs))
		}
	}
}
