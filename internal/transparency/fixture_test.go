package transparency

import (
	"fmt"
	"time"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// sampleReport is a small report with one of everything: two types, a
// multi-GPU probe, two setups of one probe, a provisional FAIL, a
// degraded and a delisted card, a card without results, history and
// throttling.
func sampleReport() *apiv1.Transparency {
	cst := time.FixedZone("CST", 8*3600)
	at := time.Date(2026, 3, 14, 1, 30, 0, 0, cst) // 2026-03-13 17:30 UTC
	earlier := at.Add(-7 * 24 * time.Hour)
	h100Probes := []apiv1.TransparencyProbe{
		{Probe: "gemm_bf16", Setup: "shape=8192x8192x8192 dtype=bf16", Unit: "TFLOPS", GPUs: 1,
			Spec:        &apiv1.TransparencyFigure{Value: 989, Unit: "TFLOPS", Source: "NVIDIA H100 datasheet, BF16 dense"},
			Healthy:     &apiv1.TransparencyFigure{Value: 794, Unit: "TFLOPS", Source: "stas00/ml-engineering"},
			FleetMedian: 780.25, FleetMin: 690.5, FleetMax: 791.75, Cards: 3, BandPass: 741.2375, BandWarn: 702.225, SpecRatio: 0.78892},
		{Probe: "copy_d2d", Setup: "bytes=1073741824", Unit: "GB/s", GPUs: 1,
			Spec:        &apiv1.TransparencyFigure{Value: 3350, Unit: "GB/s", Source: "NVIDIA H100 datasheet, memory bandwidth"},
			FleetMedian: 2950.4, FleetMin: 2900.1, FleetMax: 2990.9, Cards: 3, BandPass: 2802.88, BandWarn: 2655.36, SpecRatio: 0.8807},
		{Probe: "nccl_allreduce", Setup: "algo=ring", Unit: "GB/s", GPUs: 8,
			Healthy:     &apiv1.TransparencyFigure{Value: 370, Unit: "GB/s", Source: "NVIDIA/nccl-tests#212"},
			FleetMedian: 365.3, FleetMin: 365.3, FleetMax: 365.3, Cards: 1, BandPass: 347.035, BandWarn: 328.77},
		{Probe: "nccl_allreduce", Setup: "algo=nvls", Unit: "GB/s", GPUs: 8,
			Healthy:     &apiv1.TransparencyFigure{Value: 460, High: 480, Unit: "GB/s", Source: "NVIDIA/nccl-tests#212"},
			FleetMedian: 470.1, FleetMin: 470.1, FleetMax: 470.1, Cards: 1, BandPass: 446.595, BandWarn: 423.09},
		{Probe: "resnet50_amp", Setup: "batch=256 harness=dle", Unit: "img/s", GPUs: 1,
			FleetMedian: 2650.6, FleetMin: 2600.2, FleetMax: 2700.8, Cards: 3, BandPass: 2518.07, BandWarn: 2385.54},
	}
	res := func(probe, setup, unit string, median, ratio float64, outcome string) apiv1.TransparencyResult {
		return apiv1.TransparencyResult{Probe: probe, Setup: setup, Unit: unit, Median: median,
			Min: median * 0.99, Max: median * 1.01, Spread: 0.02, Runs: 5, FleetRatio: ratio, Outcome: outcome,
			MaxTempC: 66, MinSMClock: 1740, MeanPowerW: 695.1}
	}
	good := []apiv1.TransparencyResult{
		res("gemm_bf16", "shape=8192x8192x8192 dtype=bf16", "TFLOPS", 780.25, 1, "PASS"),
		res("copy_d2d", "bytes=1073741824", "GB/s", 2950.4, 1, "PASS"),
		res("resnet50_amp", "batch=256 harness=dle", "img/s", 2650.6, 1, "PASS"),
	}
	slow := []apiv1.TransparencyResult{
		res("gemm_bf16", "shape=8192x8192x8192 dtype=bf16", "TFLOPS", 690.5, 0.88497, "FAIL"),
		res("copy_d2d", "bytes=1073741824", "GB/s", 2900.1, 0.98295, "PASS"),
	}
	slow[0].Provisional = true
	slow[0].Throttle = []string{"sw_thermal_slowdown", "hw_slowdown"}
	slow[1].Throttle = []string{"sw_thermal_slowdown"}
	warn := []apiv1.TransparencyResult{res("gemm_bf16", "shape=8192x8192x8192 dtype=bf16", "TFLOPS", 741.2, 0.94996, "WARN")}
	warn[0].SpecRatio = 0.7494
	history := []apiv1.TransparencyHistory{
		{JobID: "bench_2", At: earlier, Reason: "weekly", Outcome: "PASS",
			Medians: map[string]float64{"gemm_bf16": 781.04, "copy_d2d": 2951, "resnet50_amp": 2649.4}},
		{JobID: "bench_1", At: earlier.Add(-7 * 24 * time.Hour), Reason: "onboarding", Outcome: "PASS",
			Medians: map[string]float64{"gemm_bf16": 779.9, "odd_probe": 1.234}},
	}
	return &apiv1.Transparency{
		GeneratedAt: at,
		PassRatio:   0.95,
		WarnRatio:   0.90,
		Types: []apiv1.TransparencyType{
			{ID: "h100-80g-sxm", Name: "NVIDIA H100 80GB SXM", GPUs: 5, Certified: 1, Warn: 1, Pending: 1, Degraded: 1, Uncertified: 1,
				Probes: h100Probes,
				Hosts: []apiv1.TransparencyHost{
					{ID: "host_a1", Name: "cd-a-01", Zone: "Chengdu Tianfu A", GPUs: []apiv1.TransparencyGPU{
						{Hash: HashUUID("GPU-aaaa-0"), Index: 0, State: "certified", PricePermille: 1000, LastRunAt: &at, Results: good, History: history},
						{Hash: HashUUID("GPU-aaaa-1"), Index: 1, State: "rerun", Reason: "BF16 GEMM at 0.88 of the fleet median; re-run queued", PricePermille: 1000, LastRunAt: &at, Results: slow},
						{Hash: HashUUID("GPU-aaaa-2"), Index: 2, State: "uncertified", PricePermille: 1000},
					}},
					{ID: "host_a2", Name: "cd-a-02", Zone: "Chengdu Tianfu A", GPUs: []apiv1.TransparencyGPU{
						{Hash: HashUUID("GPU-bbbb-0"), Index: 0, State: "warn", PricePermille: 1000, LastRunAt: &at, Results: warn},
						{Hash: HashUUID("GPU-bbbb-1"), Index: 1, State: "degraded", Reason: "confirmed FAIL: BF16 GEMM at 0.875", PricePermille: 875, LastRunAt: &at,
							Results: []apiv1.TransparencyResult{res("gemm_bf16", "shape=8192x8192x8192 dtype=bf16", "TFLOPS", 682.7, 0.875, "FAIL")}},
					}},
				}},
			{ID: "rtx4090-24g", Name: "NVIDIA GeForce RTX 4090", GPUs: 0},
		},
		Delisted: []apiv1.TransparencyGPUBrief{
			{Hash: HashUUID("GPU-bbbb-1"), Type: "h100-80g-sxm", Host: "cd-a-02", State: "degraded",
				Reason: "confirmed FAIL: BF16 GEMM at 0.875", PricePermille: 875, Since: at},
			{Hash: HashUUID("GPU-cccc-9"), Type: "gone-type", Host: "cd-b-07", State: "delisted",
				Reason: "confirmed FAIL: device memory copy at 0.71", PricePermille: 1000, Since: earlier},
		},
	}
}

// largeReport is a fleet of hosts×8 GPUs over four types, every card with
// every probe measured and twelve earlier runs.
func largeReport(hosts int) *apiv1.Transparency {
	t := sampleReport()
	base := t.Types[0]
	at := t.GeneratedAt
	t.Types = nil
	t.Delisted = nil
	const types = 4
	for ti := 0; ti < types; ti++ {
		ty := apiv1.TransparencyType{ID: fmt.Sprintf("type-%d", ti), Name: fmt.Sprintf("GPU type %d", ti), Probes: base.Probes}
		for h := 0; h < hosts/types; h++ {
			host := apiv1.TransparencyHost{ID: fmt.Sprintf("host_%d_%d", ti, h), Name: fmt.Sprintf("node-%d-%04d", ti, h), Zone: "Chengdu Tianfu A"}
			for g := 0; g < 8; g++ {
				gpu := apiv1.TransparencyGPU{Hash: HashUUID(fmt.Sprintf("GPU-%d-%d-%d", ti, h, g)), Index: g, State: "certified", PricePermille: 1000, LastRunAt: &at}
				for pi, p := range base.Probes {
					r := 0.9 + float64((h*8+g+pi)%20)/100
					gpu.Results = append(gpu.Results, apiv1.TransparencyResult{Probe: p.Probe, Setup: p.Setup, Unit: p.Unit,
						Median: p.FleetMedian * r, Min: p.FleetMedian * r * 0.99, Max: p.FleetMedian * r * 1.01, Spread: 0.02, Runs: 5,
						FleetRatio: r, SpecRatio: r * 0.8, Outcome: "PASS", MaxTempC: 70, MinSMClock: 1700, MeanPowerW: 690,
						Throttle: []string{"sw_power_cap"}})
				}
				for j := 0; j < 12; j++ {
					gpu.History = append(gpu.History, apiv1.TransparencyHistory{JobID: fmt.Sprintf("bench_%d", j),
						At: at.Add(-time.Duration(j+1) * 7 * 24 * time.Hour), Reason: "weekly", Outcome: "PASS",
						Medians: map[string]float64{"gemm_bf16": 780, "copy_d2d": 2950, "resnet50_amp": 2650, "nccl_allreduce": 365}})
				}
				host.GPUs = append(host.GPUs, gpu)
				ty.GPUs++
				ty.Certified++
			}
			ty.Hosts = append(ty.Hosts, host)
		}
		t.Types = append(t.Types, ty)
	}
	return t
}
