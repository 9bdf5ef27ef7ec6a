package faultrules

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/gpu"
)

// BurstSilence is how long a GPU must be quiet for its burst of events to
// close: events closer together than this are one fault.
const BurstSilence = 3 * time.Minute

// Event kinds beyond internal/gpu's Event* kinds: the findings an agent
// draws from telemetry (see Assessor).
const (
	KindThrottle     = "throttle"      // hardware slowdown, thermal or power-brake throttling under load
	KindPowerLimit   = "power_limit"   // enforced power limit below the board's default
	KindPCIeDegraded = "pcie_degraded" // PCIe generation or width below the maximum under load
	KindNVLinkDown   = "nvlink_down"   // NVLink links down
	KindRemapPending = "remap_pending" // rows waiting to be remapped at the next reset
	KindTemperature  = "temperature"   // a temperature observation
	// KindBenchmark is a benchmark FAIL a re-run confirmed (below 0.90 of
	// the fleet median of the type; internal/certification).
	KindBenchmark = "benchmark_fail"
)

// Xids with rules of their own beyond the table.
const (
	xidDoubleBitECC      = 48
	xidRetirementEvent   = 63
	xidRetirementFailure = 64
	xidFallenOffBus      = 79
	xidRecoveryAction    = 154
)

// Verdict is what a burst of one GPU's events means.
type Verdict struct {
	Class       gpurent.FaultClass
	Attribution gpurent.Attribution
	Action      Action
	Cause       string // one line for people: "Xid 79: GPU has fallen off the bus"
	Xid         int    // the deciding Xid; 0 when a non-Xid event decided
	// ResetWhenIdle asks for a GPU reset once no instance uses the GPU
	// (the RESET classes reset anyway; INFO and Xid 94 ask for it here).
	ResetWhenIdle bool
}

// Bursts sorts one GPU's events by time and cuts them into bursts: a gap
// longer than silence between two events closes a burst (a gap of exactly
// silence does not). silence <= 0 means BurstSilence. The input is not
// modified; the result is nil for no events.
func Bursts(evs []gpurent.GPUEvent, silence time.Duration) [][]gpurent.GPUEvent {
	if len(evs) == 0 {
		return nil
	}
	if silence <= 0 {
		silence = BurstSilence
	}
	sorted := make([]gpurent.GPUEvent, len(evs))
	copy(sorted, evs)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].At.Before(sorted[j].At) })
	var out [][]gpurent.GPUEvent
	start := 0
	for i := 1; i < len(sorted); i++ {
		if sorted[i].At.Sub(sorted[i-1].At) > silence {
			out = append(out, sorted[start:i:i])
			start = i
		}
	}
	return append(out, sorted[start:])
}

// judgement is what one event means on its own.
type judgement struct {
	class       gpurent.FaultClass
	cause       string
	xid         int
	sympathetic bool
	resetIdle   bool
	// raises: the event states what the GPU needs whatever caused it (a
	// recovery action the driver asks for, a GPU gone from the bus), so
	// it can raise the class of a burst that something milder started.
	raises bool
}

// Classify says what one burst of one GPU's events means. The first event
// that is not sympathetic decides (when all are, the first one does), with
// these rules on top of the table:
//
//   - Xid 45 is sympathetic: with another Xid, that one decides (an
//     application Xid makes the burst APP); alone it is APP.
//   - Xid 48 alone is RESET; with Xid 63 or 64 in the burst it is
//     DRAIN+RESET.
//   - Xid 154 and recovery_action events go by the action the driver asks
//     for: "None" INFO, "Reset" RESET, "Drain and Reset" (or "Drain P2P")
//     DRAIN+RESET, "Node Reboot Required" NODE; anything else UNKNOWN.
//   - Kinds without an Xid: gpu_lost NODE, ecc_dbe RESET, remap_failure
//     RMA, remap_pending INFO, ecc_sbe and temperature INFO, the telemetry
//     findings (throttle, pcie_degraded, nvlink_down, power_limit)
//     DEGRADED, an unknown kind UNKNOWN.
//   - An Xid without a rule is UNKNOWN: human review, no penalty.
//   - A recovery action, a lost GPU or Xid 79 later in the burst raises a
//     milder verdict to its own class: the GPU needs that whatever started
//     the burst.
//
// An empty burst gives the zero Verdict. Classify on a nil *Rules knows
// no Xid (every Xid is UNKNOWN).
func (r *Rules) Classify(burst []gpurent.GPUEvent) Verdict {
	if len(burst) == 0 {
		return Verdict{}
	}
	evs := make([]gpurent.GPUEvent, len(burst))
	copy(evs, burst)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].At.Before(evs[j].At) })

	js := make([]judgement, len(evs))
	decider := -1
	for i, e := range evs {
		js[i] = r.judge(e)
		if decider < 0 && !js[i].sympathetic {
			decider = i
		}
	}
	if decider < 0 {
		decider = 0
	}
	d := js[decider]

	// Xid 48 with a page retirement record or failure: drain the peers too.
	if d.xid == xidDoubleBitECC || d.xid == xidRetirementEvent || d.xid == xidRetirementFailure {
		if dbe, ok := findXid(evs, xidDoubleBitECC); ok {
			if ret, ok := findXid(evs, xidRetirementFailure); ok {
				d = r.drainReset(evs[dbe], evs[ret])
			} else if ret, ok := findXid(evs, xidRetirementEvent); ok {
				d = r.drainReset(evs[dbe], evs[ret])
			}
		}
	}

	v := verdictOf(d)
	for i, j := range js {
		if i == decider || !j.raises || rank(j.class) <= rank(v.Class) {
			continue
		}
		cause := v.Cause + "; then " + j.cause
		v = verdictOf(j)
		v.Cause = cause
		v.Xid = d.xid
	}
	return v
}

func verdictOf(j judgement) Verdict {
	return Verdict{
		Class:         j.class,
		Attribution:   AttributionFor(j.class),
		Action:        ActionFor(j.class),
		Cause:         j.cause,
		Xid:           j.xid,
		ResetWhenIdle: j.resetIdle,
	}
}

// drainReset is the judgement of Xid 48 together with Xid 63 or 64.
func (r *Rules) drainReset(dbe, retirement gpurent.GPUEvent) judgement {
	return judgement{
		class:     gpurent.FaultDrainReset,
		cause:     r.xidCause(dbe.Xid) + ", with " + r.xidCause(retirement.Xid),
		xid:       xidDoubleBitECC,
		resetIdle: true,
	}
}

func findXid(evs []gpurent.GPUEvent, xid int) (int, bool) {
	for i, e := range evs {
		if e.Kind == gpu.EventXid && e.Xid == xid {
			return i, true
		}
	}
	return 0, false
}

// rank orders classes by how much they take out of service.
func rank(c gpurent.FaultClass) int {
	switch c {
	case gpurent.FaultInfo:
		return 1
	case gpurent.FaultApp:
		return 2
	case gpurent.FaultDegraded:
		return 3
	case gpurent.FaultReset:
		return 4
	case gpurent.FaultDrainReset:
		return 5
	case gpurent.FaultNode, gpurent.FaultHostDown:
		return 6
	case gpurent.FaultRMA, gpurent.FaultHost:
		return 7
	}
	return 0
}

// judge says what one event means on its own.
func (r *Rules) judge(e gpurent.GPUEvent) judgement {
	detail := oneLine(e.Detail)
	withDetail := func(s string) string {
		if detail == "" {
			return s
		}
		return s + ": " + detail
	}
	switch e.Kind {
	case gpu.EventXid:
		if e.Xid == xidRecoveryAction {
			j := recovery(detail)
			j.xid = e.Xid
			j.cause = fmt.Sprintf("Xid %d: %s", e.Xid, j.cause)
			return j
		}
		rule, ok := r.Lookup(e.Xid)
		if !ok {
			return judgement{class: gpurent.FaultUnknown, xid: e.Xid,
				cause: withDetail(fmt.Sprintf("Xid %d: not in the rules, for review", e.Xid))}
		}
		return judgement{
			class:       rule.Class,
			cause:       fmt.Sprintf("Xid %d: %s", rule.Xid, rule.Name),
			xid:         rule.Xid,
			sympathetic: rule.Sympathetic,
			resetIdle:   rule.ResetWhenIdle,
			raises:      rule.Xid == xidFallenOffBus,
		}
	case gpu.EventRecoveryAction:
		return recovery(detail)
	case gpu.EventGPULost:
		return judgement{class: gpurent.FaultNode, cause: withDetail("GPU is lost"), raises: true}
	case gpu.EventECCDoubleBit:
		return judgement{class: gpurent.FaultReset, cause: withDetail("Uncorrectable (double-bit) ECC error"), resetIdle: true}
	case gpu.EventECCSingleBit:
		return judgement{class: gpurent.FaultInfo, cause: withDetail("Corrected (single-bit) ECC errors"), sympathetic: true}
	case gpu.EventRemapFailure:
		return judgement{class: gpurent.FaultRMA, cause: withDetail("Row remapping failed: the memory cannot be repaired")}
	case KindRemapPending:
		return judgement{class: gpurent.FaultInfo, cause: withDetail("Rows waiting to be remapped at the next reset"), resetIdle: true}
	case KindTemperature:
		return judgement{class: gpurent.FaultInfo, cause: withDetail("Temperature")}
	case KindThrottle:
		return judgement{class: gpurent.FaultDegraded, cause: withDetail("Hardware throttling under load")}
	case KindPowerLimit:
		return judgement{class: gpurent.FaultDegraded, cause: withDetail("Power limit below the default")}
	case KindPCIeDegraded:
		return judgement{class: gpurent.FaultDegraded, cause: withDetail("PCIe link below its maximum under load")}
	case KindNVLinkDown:
		return judgement{class: gpurent.FaultDegraded, cause: withDetail("NVLink link down")}
	case KindBenchmark:
		return judgement{class: gpurent.FaultDegraded, cause: withDetail("Measured below its peers")}
	}
	return judgement{class: gpurent.FaultUnknown, cause: withDetail(fmt.Sprintf("Unknown event kind %q, for review", oneLine(e.Kind)))}
}

// recovery judges a recovery action the driver asks for (Xid 154 or an
// NVML GpuRecoveryAction event). The detail is NVML's action ("None",
// "Reset", "Drain and Reset", "Node Reboot Required", "Drain P2P") or the
// kernel log's "changed from ... to ..." text, whose last part counts.
func recovery(detail string) judgement {
	action := detail
	lower := strings.ToLower(detail)
	if i := strings.LastIndex(lower, " to "); i >= 0 {
		lower = lower[i+len(" to "):]
		action = strings.TrimSpace(detail[i+len(" to "):])
	}
	j := judgement{sympathetic: true, raises: true}
	switch {
	case strings.Contains(lower, "reboot"):
		j.class = gpurent.FaultNode
	case strings.Contains(lower, "drain"):
		j.class = gpurent.FaultDrainReset
		j.resetIdle = true
	case strings.Contains(lower, "reset"):
		j.class = gpurent.FaultReset
		j.resetIdle = true
	case strings.Contains(lower, "none"):
		j.class = gpurent.FaultInfo
		j.raises = false
	default:
		j.class = gpurent.FaultUnknown
		j.raises = false
		if action == "" {
			action = "no action given"
		}
		j.cause = "GPU recovery action not understood, for review: " + action
		return j
	}
	j.cause = "GPU recovery action: " + action
	return j
}

// xidCause is "Xid N: name" for an Xid of the table.
func (r *Rules) xidCause(xid int) string {
	if rule, ok := r.Lookup(xid); ok {
		return fmt.Sprintf("Xid %d: %s", xid, rule.Name)
	}
	return fmt.Sprintf("Xid %d", xid)
}

// maxDetail bounds the driver text quoted in a cause.
const maxDetail = 160

// oneLine makes a driver text fit a one-line cause: control characters
// become spaces, runs of space collapse, and it is cut at maxDetail runes.
func oneLine(s string) string {
	var b strings.Builder
	space := false
	n := 0
	for _, c := range s {
		if unicode.IsSpace(c) || unicode.IsControl(c) || c == unicode.ReplacementChar {
			space = b.Len() > 0
			continue
		}
		if n >= maxDetail {
			b.WriteString("…")
			break
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(c)
		n++
	}
	return b.String()
}
