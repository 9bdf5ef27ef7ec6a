package benchjudge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
)

// SchemaVersion is the version of Record that this package reads and writes.
const SchemaVersion = 1

// The probes of the certification tier (reference/gpus.md, T2).
const (
	ProbeGEMMBF16      = "gemm_bf16"      // dense BF16 matmul, FP32 accumulate, TFLOPS
	ProbeGEMMFP8       = "gemm_fp8"       // dense FP8 matmul, TFLOPS
	ProbeD2DBW         = "copy_d2d"       // device-to-device copy, GB/s
	ProbeH2DBW         = "copy_h2d"       // host-to-device copy, GB/s
	ProbeD2HBW         = "copy_d2h"       // device-to-host copy, GB/s
	ProbeP2PBW         = "p2p_bw"         // GPU peer-to-peer copy, unidirectional, GB/s
	ProbeResNet50Train = "resnet50_amp"   // ResNet-50 AMP synthetic training, 1 GPU, img/s
	ProbeNCCLAllReduce = "nccl_allreduce" // NCCL all_reduce bus bandwidth, GB/s
	// ProbeInventory is the T0 listing (bench's inventory record): checked
	// by the agent against the listing, not a measurement; ParseRecords
	// passes over it.
	ProbeInventory = "inventory"
)

// The units a probe reports in.
const (
	UnitTFLOPS = "TFLOPS"
	UnitGBs    = "GB/s"
	UnitImgs   = "img/s"
)

var probeUnits = map[string]string{
	ProbeGEMMBF16: UnitTFLOPS, ProbeGEMMFP8: UnitTFLOPS,
	ProbeD2DBW: UnitGBs, ProbeH2DBW: UnitGBs, ProbeD2HBW: UnitGBs, ProbeP2PBW: UnitGBs,
	ProbeResNet50Train: UnitImgs, ProbeNCCLAllReduce: UnitGBs,
}

// Probes lists the known probes in report order.
func Probes() []string {
	return []string{ProbeGEMMBF16, ProbeGEMMFP8, ProbeD2DBW, ProbeH2DBW, ProbeD2HBW,
		ProbeP2PBW, ProbeResNet50Train, ProbeNCCLAllReduce}
}

// ProbeUnit is the unit a probe reports in, and false for an unknown probe.
func ProbeUnit(probe string) (string, bool) {
	u, ok := probeUnits[probe]
	return u, ok
}

// multiGPU reports whether a probe runs on two GPUs or more.
func multiGPU(probe string) bool { return probe == ProbeNCCLAllReduce || probe == ProbeP2PBW }

// Bounds of what ParseRecords accepts.
const (
	MaxLineBytes     = 16 << 10 // one record
	MaxRecords       = 100_000  // one input
	maxGPUsPerRecord = 64
	maxStringBytes   = 256
	maxThrottle      = 16
	maxDimension     = 1 << 20
)

// Params is the setup of a run. Runs are compared only with runs of the same
// setup (see Setup).
type Params struct {
	M     int    `json:"m,omitempty"`     // GEMM shape
	N     int    `json:"n,omitempty"`     //
	K     int    `json:"k,omitempty"`     //
	Batch int    `json:"batch,omitempty"` // ResNet-50 batch size per GPU
	DType string `json:"dtype,omitempty"` // bf16, fp8, fp16 ...
	// Bytes is the transfer size of a copy or all_reduce.
	Bytes int64 `json:"bytes,omitempty"`
	// Harness names the benchmark program (nvidia-dle, lambda, gpurent).
	Harness string `json:"harness,omitempty"`
	// Algo is the NCCL algorithm (ring, tree, nvls).
	Algo string `json:"algo,omitempty"`
	// Image is the pinned container image (by digest) the run used.
	Image string `json:"image,omitempty"`
	// Seconds is how long one GEMM run lasted: a short burst and a
	// sustained run measure different things (a card under its power
	// cap slows after a few seconds), so they are never compared.
	Seconds float64 `json:"seconds,omitempty"`
}

// UnmarshalJSON reads a record's params as the benchmark programs write
// them (bench/README.md): the setup fields it knows (m, n, k — n alone is
// a square shape; batch or batch_size; dtype; bytes; harness; algo; image)
// are taken, type-checked; the programs' other, descriptive fields (iters,
// seconds, precision, ...) are left to readers of the raw records.
func (p *Params) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	num := func(key string, into *int) error {
		v, ok := raw[key]
		if !ok || string(v) == "null" {
			return nil
		}
		if err := json.Unmarshal(v, into); err != nil {
			return fmt.Errorf("params.%s: %w", key, err)
		}
		return nil
	}
	str := func(key string, into *string) error {
		v, ok := raw[key]
		if !ok || string(v) == "null" {
			return nil
		}
		if err := json.Unmarshal(v, into); err != nil {
			return fmt.Errorf("params.%s: %w", key, err)
		}
		return nil
	}
	var q Params
	var bytes int
	if v, ok := raw["seconds"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &q.Seconds); err != nil {
			return fmt.Errorf("params.seconds: %w", err)
		}
		if q.Seconds < 0 || q.Seconds > 86400 {
			return fmt.Errorf("params.seconds: %v is not a run's length", q.Seconds)
		}
	}
	for _, err := range []error{num("m", &q.M), num("n", &q.N), num("k", &q.K), num("batch", &q.Batch),
		num("batch_size", &q.Batch), str("dtype", &q.DType), num("bytes", &bytes), str("harness", &q.Harness),
		str("algo", &q.Algo), str("image", &q.Image)} {
		if err != nil {
			return err
		}
	}
	q.Bytes = int64(bytes)
	if q.N != 0 && q.M == 0 && q.K == 0 {
		q.M, q.K = q.N, q.N // the programs' square GEMM
	}
	*p = q
	return nil
}

// Setup is a canonical text of the parameters: equal setups, equal text.
func (p Params) Setup() string {
	var parts []string
	add := func(k, v string) { parts = append(parts, k+"="+v) }
	if p.M != 0 || p.N != 0 || p.K != 0 {
		add("shape", fmt.Sprintf("%dx%dx%d", p.M, p.N, p.K))
	}
	if p.Batch != 0 {
		add("batch", strconv.Itoa(p.Batch))
	}
	if p.DType != "" {
		add("dtype", p.DType)
	}
	if p.Bytes != 0 {
		add("bytes", strconv.FormatInt(p.Bytes, 10))
	}
	if p.Harness != "" {
		add("harness", p.Harness)
	}
	if p.Algo != "" {
		add("algo", p.Algo)
	}
	if p.Image != "" {
		add("image", p.Image)
	}
	if p.Seconds != 0 {
		add("seconds", strconv.FormatFloat(p.Seconds, 'g', -1, 64))
	}
	return strings.Join(parts, " ")
}

// subsetOf reports whether every field set in p has the same value in q.
func (p Params) subsetOf(q Params) bool {
	return (p.M == 0 || p.M == q.M) && (p.N == 0 || p.N == q.N) && (p.K == 0 || p.K == q.K) &&
		(p.Batch == 0 || p.Batch == q.Batch) && (p.DType == "" || p.DType == q.DType) &&
		(p.Bytes == 0 || p.Bytes == q.Bytes) && (p.Harness == "" || p.Harness == q.Harness) &&
		(p.Algo == "" || p.Algo == q.Algo) && (p.Image == "" || p.Image == q.Image) &&
		(p.Seconds == 0 || p.Seconds == q.Seconds)
}

// Telemetry summarises the 1 Hz samples taken during a run. Zero means not
// measured.
type Telemetry struct {
	Samples        int     `json:"samples,omitempty"`
	MaxTempC       float64 `json:"max_temp_c,omitempty"`
	MeanSMClockMHz float64 `json:"mean_sm_clock_mhz,omitempty"`
	MinSMClockMHz  float64 `json:"min_sm_clock_mhz,omitempty"`
	MeanPowerW     float64 `json:"mean_power_w,omitempty"`
	// ThrottleReasons seen in any sample, NVML names without the prefix
	// (sw_power_cap, hw_slowdown, sw_thermal_slowdown, hw_power_brake ...).
	ThrottleReasons []string `json:"throttle_reasons,omitempty"`
}

// Software is what the run ran on. Synthetic records (Synthesize) say so
// here, and are never measurements.
type Software struct {
	Driver    string `json:"driver,omitempty"`
	CUDA      string `json:"cuda,omitempty"`
	Torch     string `json:"torch,omitempty"`
	NCCL      string `json:"nccl,omitempty"`
	Synthetic bool   `json:"synthetic,omitempty"`
}

// Record is one benchmark run as the benchmark programs emit it, one JSON
// object a line. docs/transparency.md documents the schema.
type Record struct {
	Schema   int      `json:"schema"`
	Probe    string   `json:"probe"`
	GPUType  string   `json:"gpu_type"`
	GPUUUIDs []string `json:"uuids"`
	Value    float64  `json:"value"`
	Unit     string   `json:"unit"`
	// Run is the index of the run in its series; warm-up runs come first.
	Run       int       `json:"run"`
	Warmup    bool      `json:"warmup"`
	Params    Params    `json:"params"`
	Start     time.Time `json:"started_at"`
	End       time.Time `json:"ended_at"`
	Telemetry Telemetry `json:"telemetry"`
	Software  Software  `json:"software"`
	// Error is set when the run failed; such a run has no value.
	Error string `json:"error,omitempty"`
}

// GPUKey names the GPU (or the set of GPUs, in order) the record measured.
func (r Record) GPUKey() string { return strings.Join(r.GPUUUIDs, ",") }

// Validate checks one record against the schema.
func (r Record) Validate() error {
	if r.Schema != SchemaVersion {
		return fmt.Errorf("schema %d, want %d", r.Schema, SchemaVersion)
	}
	unit, ok := probeUnits[r.Probe]
	if !ok {
		return fmt.Errorf("unknown probe %q", r.Probe)
	}
	if err := checkName("gpu_type", r.GPUType); err != nil {
		return err
	}
	n := len(r.GPUUUIDs)
	if n == 0 || n > maxGPUsPerRecord {
		return fmt.Errorf("%d GPU UUIDs, want 1 to %d", n, maxGPUsPerRecord)
	}
	if multiGPU(r.Probe) != (n >= 2) {
		return fmt.Errorf("probe %s on %d GPUs", r.Probe, n)
	}
	seen := map[string]bool{}
	for _, u := range r.GPUUUIDs {
		if err := checkName("GPU UUID", u); err != nil {
			return err
		}
		if strings.Contains(u, ",") || seen[u] {
			return fmt.Errorf("GPU UUID %q repeated or holds a comma", u)
		}
		seen[u] = true
	}
	if r.Unit != unit {
		return fmt.Errorf("unit %q for %s, want %q", r.Unit, r.Probe, unit)
	}
	if len(r.Error) > 4*maxStringBytes {
		return errors.New("error text too long")
	}
	switch {
	case r.Error != "" && r.Value != 0:
		return errors.New("a failed run carries no value")
	case r.Error == "" && !(r.Value > 0 && r.Value < 1e9):
		return fmt.Errorf("value %v out of range", r.Value)
	}
	if r.Run < 0 || r.Run > 1_000_000 {
		return fmt.Errorf("run index %d out of range", r.Run)
	}
	p := r.Params
	for _, d := range []int{p.M, p.N, p.K, p.Batch} {
		if d < 0 || d > maxDimension {
			return fmt.Errorf("parameter %d out of range", d)
		}
	}
	if p.Bytes < 0 {
		return errors.New("negative bytes")
	}
	for _, s := range []string{p.DType, p.Harness, p.Algo, p.Image,
		r.Software.Driver, r.Software.CUDA, r.Software.Torch, r.Software.NCCL} {
		if err := checkText(s); err != nil {
			return err
		}
	}
	if r.Start.IsZero() || r.End.IsZero() || r.End.Before(r.Start) {
		return errors.New("start and end must be set, end not before start")
	}
	if y := r.Start.Year(); y < 2000 || y > 9999 {
		return fmt.Errorf("start year %d out of range", y)
	}
	t := r.Telemetry
	for _, v := range []float64{t.MaxTempC, t.MeanSMClockMHz, t.MinSMClockMHz, t.MeanPowerW} {
		if v < 0 || v > 1e6 {
			return fmt.Errorf("telemetry value %v out of range", v)
		}
	}
	if t.Samples < 0 || t.MinSMClockMHz > t.MeanSMClockMHz && t.MeanSMClockMHz != 0 {
		return errors.New("telemetry inconsistent (samples negative or min clock above mean)")
	}
	if len(t.ThrottleReasons) > maxThrottle {
		return fmt.Errorf("more than %d throttle reasons", maxThrottle)
	}
	for _, s := range t.ThrottleReasons {
		if err := checkName("throttle reason", s); err != nil {
			return err
		}
	}
	return nil
}

func checkName(what, s string) error {
	if s == "" {
		return fmt.Errorf("%s missing", what)
	}
	return checkText(s)
}

func checkText(s string) error {
	if len(s) > maxStringBytes {
		return fmt.Errorf("text of %d bytes, at most %d", len(s), maxStringBytes)
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f || c == 0xfffd {
			return fmt.Errorf("text %q holds a control or invalid character", s)
		}
	}
	return nil
}

// ParseRecords reads JSON lines, one Record a line, blank lines allowed. It
// is strict (unknown fields, trailing data and invalid records are errors
// naming the line) and bounded (MaxLineBytes a line, MaxRecords in all).
// Times are returned in UTC.
func ParseRecords(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLineBytes)
	var recs []Record
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if len(recs) == MaxRecords {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "benchmark records: line %d: more than %d records", line, MaxRecords)
		}
		var head struct {
			Probe string `json:"probe"`
		}
		if json.Unmarshal(b, &head) == nil && head.Probe == ProbeInventory {
			continue // the T0 listing: the agent checks it, nothing to summarize
		}
		rec, err := parseLine(b)
		if err != nil {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "benchmark records: line %d: %v", line, err)
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "benchmark records: line %d: longer than %d bytes", line+1, MaxLineBytes)
		}
		return nil, gpurent.WrapError(gpurent.CodeInvalid, err, "benchmark records: reading after line %d", line)
	}
	return recs, nil
}

func parseLine(b []byte) (Record, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var rec Record
	if err := dec.Decode(&rec); err != nil {
		return Record{}, fmt.Errorf("not a record: %w", err)
	}
	if dec.More() {
		return Record{}, errors.New("data after the record")
	}
	if _, err := dec.Token(); err != io.EOF {
		return Record{}, errors.New("data after the record")
	}
	if err := rec.Validate(); err != nil {
		return Record{}, err
	}
	rec.Start, rec.End = rec.Start.UTC(), rec.End.UTC()
	return rec, nil
}

// ParseSetup reads back the text of Params.Setup (the form stored with
// summaries): Params.Setup of the result is setup again.
func ParseSetup(setup string) Params {
	var p Params
	for _, part := range strings.Fields(setup) {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		switch k {
		case "shape":
			dims := strings.Split(v, "x")
			if len(dims) == 3 {
				p.M, _ = strconv.Atoi(dims[0])
				p.N, _ = strconv.Atoi(dims[1])
				p.K, _ = strconv.Atoi(dims[2])
			}
		case "batch":
			p.Batch, _ = strconv.Atoi(v)
		case "dtype":
			p.DType = v
		case "bytes":
			p.Bytes, _ = strconv.ParseInt(v, 10, 64)
		case "harness":
			p.Harness = v
		case "algo":
			p.Algo = v
		case "image":
			p.Image = v
		case "seconds":
			p.Seconds, _ = strconv.ParseFloat(v, 64)
		}
	}
	return p
}
