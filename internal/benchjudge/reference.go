package benchjudge

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"

	"github.com/gpurent/gpurent"
)

//go:embed reference.json
var referenceData []byte

// Figure is one reference number with the page it comes from. A Figure with
// an empty Source is absent: the reference has no such number.
type Figure struct {
	Value float64 `json:"value"`
	// High is the upper end where the source gives a range (e.g. 460–480);
	// 0 when the figure is a single number.
	High float64 `json:"high,omitempty"`
	Unit string  `json:"unit"`
	// Basis is "dense" for tensor throughput figures; sparse figures are
	// never stored.
	Basis  string `json:"basis,omitempty"`
	Source string `json:"source"`
	// ThirdParty marks a figure that comes only from third-party pages
	// ("(3rd)" in the reference): check it before publishing.
	ThirdParty bool `json:"third_party,omitempty"`
}

// Has reports whether the reference gives this figure.
func (f Figure) Has() bool { return f.Source != "" }

// Typical is the figure to compare with: the value, or the middle of a range.
func (f Figure) Typical() float64 {
	if f.High > f.Value {
		return (f.Value + f.High) / 2
	}
	return f.Value
}

// Spec holds the official dense figures of a GPU type.
type Spec struct {
	BF16TFLOPS      Figure `json:"bf16_tflops"`
	FP8TFLOPS       Figure `json:"fp8_tflops"` // absent where the card has no FP8
	MemBandwidthGBs Figure `json:"mem_bandwidth_gbs"`
	PCIeGen         Figure `json:"pcie_gen"`
	// PCIeLinkGBs is the per-direction rate of the host link, where the
	// reference quotes it.
	PCIeLinkGBs Figure `json:"pcie_link_gbs"`
	NVLinkGBs   Figure `json:"nvlink_gbs"` // bidirectional per GPU; Value 0 = no NVLink
}

// Healthy is what a healthy card of a type measures on one probe and setup.
type Healthy struct {
	Probe string `json:"probe"`
	Figure
	// GPUs is the number of GPUs the figure was measured on (0: one GPU).
	GPUs int `json:"gpus,omitempty"`
	// Params names the setup the figure belongs to (harness, algorithm,
	// dtype); a record is compared with it only when the record's
	// parameters agree on every field set here.
	Params Params `json:"params"`
	Note   string `json:"note,omitempty"`
}

// TrapKind names a way spec sheets and measurements mislead.
type TrapKind string

// The trap kinds the reference encodes.
const (
	TrapSparseAsDense     TrapKind = "sparse_as_dense"       // sparse tensor figures (2x) quoted as dense
	TrapGeForceAccumulate TrapKind = "geforce_accumulate"    // FP16-accumulate figure quoted for a GeForce card
	TrapSameNameBoard     TrapKind = "same_name_other_board" // one name, boards with different figures
	TrapGiBvsGB           TrapKind = "gib_vs_gb"             // NVML reports bytes (GiB), vendors GB
	TrapNoP2P             TrapKind = "no_p2p"                // no NVLink and no GPU peer-to-peer
	TrapNVSwitchUniform   TrapKind = "nvswitch_uniform"      // every GPU pair of an HGX board is equal
)

// Trap is one trap that applies to a GPU type.
type Trap struct {
	Kind TrapKind `json:"kind"`
	Note string   `json:"note"`
	// MemoryBytesReported is what NVML reports for the memory, where the
	// reference gives it (gib_vs_gb).
	MemoryBytesReported int64  `json:"memory_bytes_reported,omitempty"`
	Source              string `json:"source"`
}

// TypeRef is the reference for one GPU type of the catalog.
type TypeRef struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Board      string    `json:"board"`
	PeerToPeer bool      `json:"peer_to_peer"`
	Spec       Spec      `json:"spec"`
	Healthy    []Healthy `json:"healthy"`
	Traps      []Trap    `json:"traps"`
}

// HasTrap reports whether a trap of kind k applies to the type.
func (t TypeRef) HasTrap(k TrapKind) bool {
	for _, tr := range t.Traps {
		if tr.Kind == k {
			return true
		}
	}
	return false
}

// SpecFor is the dense spec figure a probe's result is set against: BF16 and
// FP8 GEMM against the tensor figures, device copies against the memory
// bandwidth, host copies against the PCIe link. Probes without a comparable
// spec figure (ResNet-50, NCCL, P2P) get an absent Figure.
func (t TypeRef) SpecFor(probe string) Figure {
	switch probe {
	case ProbeGEMMBF16:
		return t.Spec.BF16TFLOPS
	case ProbeGEMMFP8:
		return t.Spec.FP8TFLOPS
	case ProbeD2DBW:
		return t.Spec.MemBandwidthGBs
	case ProbeH2DBW, ProbeD2HBW:
		return t.Spec.PCIeLinkGBs
	}
	return Figure{}
}

// HealthyFor is the healthy reference figure for a probe run on gpus GPUs
// with the given parameters. It answers false when the reference has none,
// or when more than one figure fits and the parameters do not say which
// (ResNet-50 figures differ by harness): no figure is better than a wrong one.
func (t TypeRef) HealthyFor(probe string, gpus int, p Params) (Healthy, bool) {
	var found []Healthy
	for _, h := range t.Healthy {
		if h.Probe != probe {
			continue
		}
		want := h.GPUs
		if want == 0 {
			want = 1
		}
		if gpus != want || !h.Params.subsetOf(p) {
			continue
		}
		found = append(found, h)
	}
	if len(found) != 1 {
		return Healthy{}, false
	}
	return found[0], true
}

// Ref is the whole reference: one TypeRef per GPU type it covers.
type Ref struct {
	types map[string]TypeRef
	ids   []string
}

// Type returns the reference of a GPU type id of the catalog.
func (r *Ref) Type(id string) (TypeRef, bool) {
	t, ok := r.types[id]
	return t, ok
}

// TypeIDs lists the covered GPU type ids in file order.
func (r *Ref) TypeIDs() []string { return append([]string(nil), r.ids...) }

// Reference returns the embedded reference, validated.
func Reference() (*Ref, error) { return ParseReference(referenceData) }

type refFile struct {
	Comment string    `json:"_comment"`
	Schema  int       `json:"schema"`
	Types   []TypeRef `json:"types"`
}

// ParseReference reads and validates a reference file: every figure sourced,
// tensor figures dense, units as the probe measures, no repeated type.
func ParseReference(data []byte) (*Ref, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f refFile
	if err := dec.Decode(&f); err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInvalid, err, "reference: not a valid reference file")
	}
	if f.Schema != 1 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "reference: schema %d, want 1", f.Schema)
	}
	r := &Ref{types: map[string]TypeRef{}}
	for _, t := range f.Types {
		if err := validateType(t); err != nil {
			return nil, err
		}
		if _, dup := r.types[t.ID]; dup {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "reference: type %q repeated", t.ID)
		}
		r.types[t.ID] = t
		r.ids = append(r.ids, t.ID)
	}
	return r, nil
}

func validateType(t TypeRef) error {
	bad := func(format string, args ...any) error {
		return gpurent.Errorf(gpurent.CodeInvalid, "reference: type %q: %s", t.ID, fmt.Sprintf(format, args...))
	}
	if t.ID == "" || t.Name == "" {
		return bad("needs an id and a name")
	}
	specs := []struct {
		name     string
		f        Figure
		unit     string
		required bool
		tensor   bool
		zeroOK   bool
	}{
		{"bf16_tflops", t.Spec.BF16TFLOPS, UnitTFLOPS, true, true, false},
		{"fp8_tflops", t.Spec.FP8TFLOPS, UnitTFLOPS, false, true, false},
		{"mem_bandwidth_gbs", t.Spec.MemBandwidthGBs, UnitGBs, true, false, false},
		{"pcie_gen", t.Spec.PCIeGen, "gen", true, false, false},
		{"pcie_link_gbs", t.Spec.PCIeLinkGBs, UnitGBs, false, false, false},
		{"nvlink_gbs", t.Spec.NVLinkGBs, UnitGBs, true, false, true},
	}
	for _, s := range specs {
		if !s.f.Has() {
			if s.required {
				return bad("spec %s has no source", s.name)
			}
			if s.f != (Figure{}) {
				return bad("spec %s has a value but no source", s.name)
			}
			continue
		}
		if err := checkFigure(s.f, s.unit, s.zeroOK); err != nil {
			return bad("spec %s: %v", s.name, err)
		}
		if s.tensor && s.f.Basis != "dense" {
			return bad("spec %s: basis %q; only dense tensor figures are stored", s.name, s.f.Basis)
		}
		if !s.tensor && s.f.Basis != "" {
			return bad("spec %s: basis applies to tensor figures only", s.name)
		}
	}
	if g := t.Spec.PCIeGen.Value; g != math.Trunc(g) || g < 1 || g > 7 {
		return bad("spec pcie_gen %v is not a PCIe generation", g)
	}
	if t.PeerToPeer == t.HasTrap(TrapNoP2P) {
		return bad("peer_to_peer=%v disagrees with the no_p2p trap", t.PeerToPeer)
	}
	for i, h := range t.Healthy {
		unit, ok := probeUnits[h.Probe]
		if !ok {
			return bad("healthy[%d]: unknown probe %q", i, h.Probe)
		}
		if !h.Has() {
			return bad("healthy[%d] (%s) has no source", i, h.Probe)
		}
		if err := checkFigure(h.Figure, unit, false); err != nil {
			return bad("healthy[%d] (%s): %v", i, h.Probe, err)
		}
		if h.Basis != "" {
			return bad("healthy[%d] (%s): basis applies to spec figures only", i, h.Probe)
		}
		if h.GPUs < 0 || h.GPUs > maxGPUsPerRecord || (h.Probe == ProbeNCCLAllReduce || h.Probe == ProbeP2PBW) != (h.GPUs >= 2) {
			return bad("healthy[%d] (%s): %d GPUs does not fit the probe", i, h.Probe, h.GPUs)
		}
		if spec := t.SpecFor(h.Probe); spec.Has() && h.Figure.Value > spec.Value {
			return bad("healthy[%d] (%s): measured %v above the dense spec %v: a sparse or mixed-up figure", i, h.Probe, h.Value, spec.Value)
		}
		for j := range i {
			o := t.Healthy[j]
			if o.Probe == h.Probe && o.GPUs == h.GPUs && o.Params == h.Params {
				return bad("healthy[%d] repeats the probe and setup of healthy[%d]", i, j)
			}
		}
	}
	kinds := map[TrapKind]bool{TrapSparseAsDense: true, TrapGeForceAccumulate: true, TrapSameNameBoard: true,
		TrapGiBvsGB: true, TrapNoP2P: true, TrapNVSwitchUniform: true}
	for i, tr := range t.Traps {
		if !kinds[tr.Kind] {
			return bad("trap[%d]: unknown kind %q", i, tr.Kind)
		}
		if tr.Note == "" || tr.Source == "" {
			return bad("trap[%d] (%s) needs a note and a source", i, tr.Kind)
		}
		if tr.MemoryBytesReported < 0 {
			return bad("trap[%d] (%s): negative memory", i, tr.Kind)
		}
	}
	return nil
}

func checkFigure(f Figure, unit string, zeroOK bool) error {
	if f.Unit != unit {
		return fmt.Errorf("unit %q, want %q", f.Unit, unit)
	}
	if math.IsNaN(f.Value) || math.IsInf(f.Value, 0) || f.Value < 0 || (f.Value == 0 && !zeroOK) {
		return fmt.Errorf("value %v out of range", f.Value)
	}
	if f.High != 0 && !(f.High > f.Value) {
		return fmt.Errorf("range %v–%v is empty", f.Value, f.High)
	}
	return nil
}
