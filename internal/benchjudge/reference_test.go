package benchjudge

import (
	"strings"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/catalog"
)

func mustRef(t testing.TB) *Ref {
	t.Helper()
	ref, err := Reference()
	if err != nil {
		t.Fatalf("embedded reference: %v", err)
	}
	return ref
}

func TestReferenceCoversCatalogAndAgreesWithIt(t *testing.T) {
	ref := mustRef(t)
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, gt := range cat.GPUTypes {
		ids[gt.ID] = true
		tr, ok := ref.Type(gt.ID)
		if !ok {
			t.Errorf("catalog type %s has no reference", gt.ID)
			continue
		}
		// The catalog holds the same dense figures: a sparse (2x) figure in
		// either file shows up here.
		if tr.Spec.BF16TFLOPS.Value != gt.BF16TFLOPS || tr.Spec.FP8TFLOPS.Value != gt.FP8TFLOPS ||
			tr.Spec.MemBandwidthGBs.Value != float64(gt.MemBandwidthGBs) ||
			tr.Spec.PCIeGen.Value != float64(gt.PCIeGen) || tr.Spec.NVLinkGBs.Value != float64(gt.NVLinkGBs) ||
			tr.PeerToPeer != gt.PeerToPeer {
			t.Errorf("%s: reference spec %+v disagrees with catalog %+v", gt.ID, tr.Spec, gt)
		}
		if (gt.FP8TFLOPS == 0) == tr.Spec.FP8TFLOPS.Has() {
			t.Errorf("%s: FP8 presence differs from the catalog", gt.ID)
		}
	}
	for _, id := range ref.TypeIDs() {
		if !ids[id] {
			t.Errorf("reference type %s is not a catalog type", id)
		}
	}
}

func TestReferenceFigures(t *testing.T) {
	ref := mustRef(t)
	h100, _ := ref.Type("h100-80g-sxm")
	a100, _ := ref.Type("a100-80g-sxm")
	rtx, _ := ref.Type("rtx4090-24g")
	check := func(name string, tr TypeRef, probe string, gpus int, p Params, want float64) {
		t.Helper()
		h, ok := tr.HealthyFor(probe, gpus, p)
		if want == 0 {
			if ok {
				t.Errorf("%s: want no healthy figure, got %+v", name, h)
			}
			return
		}
		if !ok || h.Typical() != want || h.Source == "" {
			t.Errorf("%s: healthy = %+v, %v; want %v", name, h, ok, want)
		}
	}
	check("H100 BF16 GEMM", h100, ProbeGEMMBF16, 1, Params{DType: "bf16"}, 794)
	check("A100 BF16 GEMM", a100, ProbeGEMMBF16, 1, Params{DType: "bf16"}, 271)
	check("H100 FP8 GEMM", h100, ProbeGEMMFP8, 1, Params{DType: "fp8"}, 1403)
	check("A100 H2D", a100, ProbeH2DBW, 1, Params{}, 25)
	check("4090 H2D", rtx, ProbeH2DBW, 1, Params{}, 25)
	check("H100 NCCL ring", h100, ProbeNCCLAllReduce, 8, Params{Algo: "ring"}, 370)
	check("H100 NCCL NVLS", h100, ProbeNCCLAllReduce, 8, Params{Algo: "nvls"}, 470)
	check("H100 NCCL algo unsaid", h100, ProbeNCCLAllReduce, 8, Params{}, 0)
	check("H100 NCCL on 4 GPUs", h100, ProbeNCCLAllReduce, 4, Params{Algo: "ring"}, 0)
	check("A100 ResNet DLE", a100, ProbeResNet50Train, 1, Params{Harness: "nvidia-dle"}, 2470)
	check("A100 ResNet Lambda", a100, ProbeResNet50Train, 1, Params{Harness: "lambda"}, 1582)
	check("A100 ResNet harness unsaid", a100, ProbeResNet50Train, 1, Params{}, 0)
	check("4090 ResNet Lambda", rtx, ProbeResNet50Train, 1, Params{Harness: "lambda"}, 1301)
	// Never invented: the reference gives no 4090 GEMM, no H100 Gen5 H2D,
	// no device-to-device copy for these types.
	check("4090 BF16 GEMM", rtx, ProbeGEMMBF16, 1, Params{DType: "bf16"}, 0)
	check("H100 H2D", h100, ProbeH2DBW, 1, Params{}, 0)
	check("H100 D2D", h100, ProbeD2DBW, 1, Params{}, 0)
	if f := h100.SpecFor(ProbeH2DBW); f.Has() {
		t.Errorf("H100 PCIe Gen5 link figure %v is not in the reference", f)
	}
	if f := a100.SpecFor(ProbeGEMMFP8); f.Has() {
		t.Errorf("A100 has no FP8, got %+v", f)
	}
	// Traps as data.
	if !rtx.HasTrap(TrapGeForceAccumulate) || !rtx.HasTrap(TrapNoP2P) || rtx.PeerToPeer {
		t.Errorf("RTX 4090 must carry the GeForce accumulate and no-P2P traps: %+v", rtx.Traps)
	}
	if rtx.Spec.BF16TFLOPS.Value != 165.2 {
		t.Errorf("RTX 4090 BF16 must be the FP32-accumulate 165.2, got %v", rtx.Spec.BF16TFLOPS.Value)
	}
	for _, tr := range []TypeRef{h100, a100} {
		if !tr.HasTrap(TrapSparseAsDense) || !tr.HasTrap(TrapSameNameBoard) || tr.HasTrap(TrapNoP2P) {
			t.Errorf("%s traps: %+v", tr.ID, tr.Traps)
		}
	}
	for _, tr := range h100.Traps {
		if tr.Kind == TrapGiBvsGB && tr.MemoryBytesReported != 80<<30 {
			t.Errorf("H100 reports %d bytes, want 80 GiB", tr.MemoryBytesReported)
		}
	}
}

func TestReferenceEveryFigureSourcedAndDense(t *testing.T) {
	ref := mustRef(t)
	for _, id := range ref.TypeIDs() {
		tr, _ := ref.Type(id)
		for _, f := range []Figure{tr.Spec.BF16TFLOPS, tr.Spec.MemBandwidthGBs, tr.Spec.PCIeGen, tr.Spec.NVLinkGBs} {
			if !f.Has() {
				t.Errorf("%s: a required spec figure has no source: %+v", id, tr.Spec)
			}
		}
		for _, f := range []Figure{tr.Spec.BF16TFLOPS, tr.Spec.FP8TFLOPS} {
			if f.Has() && f.Basis != "dense" {
				t.Errorf("%s: tensor figure %+v not dense", id, f)
			}
		}
		for _, h := range tr.Healthy {
			if h.Source == "" || h.Value <= 0 {
				t.Errorf("%s: healthy %+v", id, h)
			}
			if s := tr.SpecFor(h.Probe); s.Has() && h.Typical() >= s.Value {
				t.Errorf("%s %s: healthy %v not below the dense spec %v", id, h.Probe, h.Typical(), s.Value)
			}
		}
	}
}

func TestParseReferenceRejects(t *testing.T) {
	good := string(referenceData)
	cases := map[string]struct{ old, new string }{
		"sparse basis":      {`"value": 989, "unit": "TFLOPS", "basis": "dense"`, `"value": 989, "unit": "TFLOPS", "basis": "sparse"`},
		"sparse value":      {`"value": 312, "unit": "TFLOPS"`, `"value": 200, "unit": "TFLOPS"`}, // A100 healthy 271 above it
		"unsourced spec":    {`"source": "NVIDIA H100 Tensor Core GPU datasheet (SXM: 3.35 TB/s); reference/gpus.md spec table"`, `"source": ""`},
		"unsourced healthy": {`"source": "NVIDIA/nvbandwidth#42", "third_party": false}`, `"source": "", "third_party": false}`},
		"unknown probe":     {`"probe": "gemm_fp8"`, `"probe": "gemm_fp4"`},
		"wrong unit":        {`"probe": "gemm_fp8", "value": 1403, "unit": "TFLOPS"`, `"probe": "gemm_fp8", "value": 1403, "unit": "GB/s"`},
		"unknown field":     {`"board": "SXM5"`, `"board": "SXM5", "colour": "green"`},
		"p2p contradiction": {`"board": "GeForce PCIe",
      "peer_to_peer": false`, `"board": "GeForce PCIe",
      "peer_to_peer": true`},
		"repeated type":   {`"id": "a100-80g-sxm"`, `"id": "h100-80g-sxm"`},
		"unknown trap":    {`"kind": "no_p2p"`, `"kind": "no_p3p"`},
		"schema":          {`"schema": 1`, `"schema": 2`},
		"nccl on one GPU": {`"gpus": 8, "note": "all_reduce bus bandwidth, 8x A100 SXM"`, `"note": "all_reduce bus bandwidth, 8x A100 SXM"`},
	}
	for name, c := range cases {
		if !strings.Contains(good, c.old) {
			t.Fatalf("%s: fixture text %q not in reference.json", name, c.old)
		}
		_, err := ParseReference([]byte(strings.Replace(good, c.old, c.new, 1)))
		if gpurent.ErrorCode(err) != gpurent.CodeInvalid {
			t.Errorf("%s: got %v, want an invalid error", name, err)
		}
	}
}
