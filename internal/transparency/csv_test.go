package transparency

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// readCSV writes r as CSV and reads it back as records keyed by column.
func readCSV(t *testing.T, r *apiv1.Transparency) []map[string]string {
	t.Helper()
	var b bytes.Buffer
	if err := CSV(&b, r); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatalf("the CSV does not parse back: %v", err)
	}
	if len(recs) == 0 || strings.Join(recs[0], ",") != strings.Join(csvHeader(), ",") {
		t.Fatalf("header %v", recs[0])
	}
	want := "type,host_id,host_name,zone,gpu_hash,gpu_index,state,price_permille,last_run_at,probe,setup,unit,median,min,max,spread,runs,fleet_median,fleet_ratio,spec,spec_ratio,outcome,provisional,synthetic,max_temp_c,min_sm_clock_mhz,mean_power_w,throttle"
	if got := strings.Join(recs[0], ","); got != want {
		t.Fatalf("header\n%s\nwant\n%s", got, want)
	}
	var rows []map[string]string
	for _, rec := range recs[1:] {
		row := map[string]string{}
		for i, name := range recs[0] {
			row[name] = rec[i]
		}
		rows = append(rows, row)
	}
	return rows
}

func TestCSVRows(t *testing.T) {
	r := sampleReport()
	rows := readCSV(t, r)
	want := 0
	for _, ty := range r.Types {
		for _, h := range ty.Hosts {
			for _, g := range h.GPUs {
				want += max(1, len(g.Results))
			}
		}
	}
	if len(rows) != want {
		t.Fatalf("%d rows, want %d", len(rows), want)
	}

	find := func(hash, probe string) map[string]string {
		for _, row := range rows {
			if row["gpu_hash"] == hash && row["probe"] == probe {
				return row
			}
		}
		t.Fatalf("no row for %s %q", hash, probe)
		return nil
	}
	slow := find(HashUUID("GPU-aaaa-1"), "gemm_bf16")
	for col, v := range map[string]string{
		"type": "h100-80g-sxm", "host_id": "host_a1", "host_name": "cd-a-01", "zone": "Chengdu Tianfu A",
		"gpu_index": "1", "state": "rerun", "price_permille": "1000", "last_run_at": "2026-03-13T17:30:00Z",
		"setup": "shape=8192x8192x8192 dtype=bf16", "unit": "TFLOPS", "median": "690.5", "runs": "5",
		"fleet_median": "780.25", "fleet_ratio": "0.88497", "spec": "989", "spec_ratio": "", "outcome": "FAIL",
		"provisional": "true", "synthetic": "false", "max_temp_c": "66", "min_sm_clock_mhz": "1740",
		"mean_power_w": "695.1", "throttle": "sw_thermal_slowdown;hw_slowdown",
	} {
		if slow[col] != v {
			t.Errorf("%s = %q, want %q", col, slow[col], v)
		}
	}
	// A probe without a spec has an empty spec; NCCL has none here.
	if d2d := find(HashUUID("GPU-aaaa-0"), "copy_d2d"); d2d["spec"] != "3350" || d2d["fleet_median"] != "2950.4" {
		t.Errorf("copy_d2d spec %q fleet %q", d2d["spec"], d2d["fleet_median"])
	}
	if rn := find(HashUUID("GPU-aaaa-0"), "resnet50_amp"); rn["spec"] != "" || rn["fleet_median"] != "2650.6" {
		t.Errorf("resnet50 spec %q fleet %q", rn["spec"], rn["fleet_median"])
	}

	// The GPU without results: one row, probe and figures empty.
	none := find(HashUUID("GPU-aaaa-2"), "")
	for _, col := range []string{"last_run_at", "setup", "unit", "median", "runs", "fleet_median", "outcome", "provisional", "throttle"} {
		if none[col] != "" {
			t.Errorf("GPU without results: %s = %q, want empty", col, none[col])
		}
	}
	if none["state"] != "uncertified" || none["host_id"] != "host_a1" || none["gpu_index"] != "2" {
		t.Errorf("GPU without results: %v", none)
	}

	// Every figure reads back as a number with '.' decimals.
	for _, row := range rows {
		for _, col := range []string{"median", "min", "max", "spread", "fleet_median", "fleet_ratio", "spec", "spec_ratio", "max_temp_c", "min_sm_clock_mhz", "mean_power_w"} {
			v := row[col]
			if v == "" {
				continue
			}
			if _, err := strconv.ParseFloat(v, 64); err != nil || strings.ContainsAny(v, ", eE") {
				t.Errorf("%s = %q is not a plain decimal", col, v)
			}
		}
		if v := row["last_run_at"]; v != "" {
			if ts, err := time.Parse(time.RFC3339, v); err != nil || !strings.HasSuffix(v, "Z") || ts.Location() != time.UTC {
				t.Errorf("last_run_at %q is not RFC 3339 UTC", v)
			}
		}
	}
}

func TestCSVInjectionGuard(t *testing.T) {
	r := sampleReport()
	h := &r.Types[0].Hosts[0]
	h.Name = `=HYPERLINK("http://evil","x")`
	h.Zone = "+cmd|' /C calc'!A0"
	h.ID = "@SUM(1+1)"
	h.GPUs[1].Results[0].Throttle = []string{"-2+3", "ok"}
	h.GPUs[1].Results[0].Setup = "\t=1"
	r.Types[0].ID = "-type"
	rows := readCSV(t, r)
	var checked bool
	for _, row := range rows {
		if row["host_id"] != "'@SUM(1+1)" {
			continue
		}
		checked = true
		for col, want := range map[string]string{
			"host_name": `'=HYPERLINK("http://evil","x")`, "zone": "'+cmd|' /C calc'!A0", "type": "'-type",
		} {
			if row[col] != want {
				t.Errorf("%s = %q, want %q", col, row[col], want)
			}
		}
		if row["gpu_index"] == "1" && row["probe"] == "gemm_bf16" {
			if row["throttle"] != "'-2+3;ok" || row["setup"] != "'\t=1" {
				t.Errorf("throttle %q setup %q", row["throttle"], row["setup"])
			}
		}
	}
	if !checked {
		t.Fatal("no row of the hostile host")
	}
	// Figures are not text: a negative figure is written as a number.
	r = sampleReport()
	r.Types[0].Hosts[0].GPUs[0].Results[0].MeanPowerW = -1.5
	if row := readCSV(t, r)[0]; row["mean_power_w"] != "-1.5" {
		t.Errorf("negative figure written as %q", row["mean_power_w"])
	}
}

func TestCSVErrors(t *testing.T) {
	if err := CSV(io.Discard, nil); gpurent.ErrorCode(err) != gpurent.CodeInternal {
		t.Errorf("nil report: %v", err)
	}
	if err := CSV(failingWriter{}, sampleReport()); !errors.Is(err, errDiskFull) {
		t.Errorf("write error: %v", err)
	}
	rows := readCSV(t, &apiv1.Transparency{})
	if len(rows) != 0 {
		t.Errorf("empty report: %d rows", len(rows))
	}
}

func BenchmarkCSV(b *testing.B) {
	r := largeReport(1000)
	var buf bytes.Buffer
	if err := CSV(&buf, r); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if err := CSV(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}
