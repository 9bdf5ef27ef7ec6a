package faultrules

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gpurent/gpurent/internal/gpu"
)

// Telemetry thresholds of the Assessor.
const (
	// AssessWindow is how much telemetry an Assessor judges by default.
	AssessWindow = time.Hour
	// LoadedUtilPercent: a sample at or above this GPU utilisation is
	// loaded; throttling and PCIe links are judged on loaded samples only
	// (an idle GPU lowers its clocks and its PCIe link on purpose).
	LoadedUtilPercent = 10
	// ThrottlePercent: hardware throttling in more than this share of the
	// loaded samples of the window is a finding.
	ThrottlePercent = 5
	// DefaultMinLoaded is how many loaded samples the window needs before
	// the throttling share is judged at all (at a 10 s poll, under two
	// minutes of load), so one sample at the start of a job cannot mark a
	// GPU degraded.
	DefaultMinLoaded = 10
	// powerLimitSlackW absorbs the rounding of NVML's milliwatts.
	powerLimitSlackW = 0.5
	// maxSamplesPerGPU bounds the memory one GPU's window can take.
	maxSamplesPerGPU = 1 << 16
)

// Assessor keeps a window of one host's telemetry samples and turns it into
// findings: events of kind KindThrottle, KindPowerLimit, KindPCIeDegraded,
// KindNVLinkDown and KindRemapPending, with the measured value in Detail.
// A finding is reported once, when it starts, and again only after it has
// cleared and come back. It is safe for concurrent use.
type Assessor struct {
	window    time.Duration
	minLoaded int

	mu   sync.Mutex
	gpus map[string]*gpuWindow
}

// gpuWindow is what an Assessor keeps of one GPU.
type gpuWindow struct {
	loaded     []loadedSample // loaded samples, by time
	last       gpu.Sample     // the newest sample
	lastLoaded gpu.Sample     // the newest loaded sample
	hasLast    bool
	hasLoaded  bool
	active     map[string]bool // findings reported and not yet cleared
}

type loadedSample struct {
	at       time.Time
	throttle uint64 // the hardware causes of the sample's throttle mask
}

// NewAssessor returns an Assessor judging the last window of samples
// (AssessWindow when window <= 0), with DefaultMinLoaded.
func NewAssessor(window time.Duration) *Assessor {
	if window <= 0 {
		window = AssessWindow
	}
	return &Assessor{window: window, minLoaded: DefaultMinLoaded, gpus: map[string]*gpuWindow{}}
}

// SetMinLoaded sets how many loaded samples the window needs before the
// throttling share is judged (at least 1).
func (a *Assessor) SetMinLoaded(n int) {
	if n < 1 {
		n = 1
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.minLoaded = n
}

// Add records one sample. Samples older than the window before the GPU's
// newest sample are dropped.
func (a *Assessor) Add(s gpu.Sample) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.gpus[s.UUID]
	if w == nil {
		w = &gpuWindow{active: map[string]bool{}}
		a.gpus[s.UUID] = w
	}
	if !w.hasLast || !s.At.Before(w.last.At) {
		w.last, w.hasLast = s, true
	}
	if s.UtilPercent < LoadedUtilPercent {
		return
	}
	if !w.hasLoaded || !s.At.Before(w.lastLoaded.At) {
		w.lastLoaded, w.hasLoaded = s, true
	}
	ls := loadedSample{at: s.At, throttle: s.ThrottleMask & gpu.ThrottleHardwareCauses}
	i := sort.Search(len(w.loaded), func(i int) bool { return w.loaded[i].at.After(s.At) })
	w.loaded = append(w.loaded, loadedSample{})
	copy(w.loaded[i+1:], w.loaded[i:])
	w.loaded[i] = ls
	w.prune(w.last.At.Add(-a.window))
	if over := len(w.loaded) - maxSamplesPerGPU; over > 0 {
		w.loaded = append(w.loaded[:0], w.loaded[over:]...)
	}
}

// prune drops loaded samples at or before cutoff.
func (w *gpuWindow) prune(cutoff time.Time) {
	i := sort.Search(len(w.loaded), func(i int) bool { return w.loaded[i].at.After(cutoff) })
	if i > 0 {
		w.loaded = append(w.loaded[:0], w.loaded[i:]...)
	}
}

// Findings judges the samples in (now-window, now] of every GPU and
// returns the findings that started since the last call, by GPU UUID and
// then kind, with At set to now. A GPU without samples in the window is
// forgotten, and its findings with it.
func (a *Assessor) Findings(now time.Time) []gpu.Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	uuids := make([]string, 0, len(a.gpus))
	for id := range a.gpus {
		uuids = append(uuids, id)
	}
	sort.Strings(uuids)
	var out []gpu.Event
	from := now.Add(-a.window)
	for _, id := range uuids {
		w := a.gpus[id]
		w.prune(from)
		inWindow := func(t time.Time) bool { return t.After(from) && !t.After(now) }
		lastOK := w.hasLast && inWindow(w.last.At)
		loadedOK := w.hasLoaded && inWindow(w.lastLoaded.At)
		if !lastOK && !loadedOK && len(w.loaded) == 0 {
			delete(a.gpus, id)
			continue
		}
		found := map[string]string{}
		if d := a.throttling(w, now); d != "" {
			found[KindThrottle] = d
		}
		if lastOK {
			s := w.last
			if s.DefaultPowerW > 0 && s.PowerLimitW > 0 && s.PowerLimitW < s.DefaultPowerW-powerLimitSlackW {
				found[KindPowerLimit] = fmt.Sprintf("enforced power limit %.0f W, below the default %.0f W", s.PowerLimitW, s.DefaultPowerW)
			}
			if s.NVLinkDown > 0 {
				found[KindNVLinkDown] = fmt.Sprintf("%d NVLink link(s) down", s.NVLinkDown)
			}
			if s.RemapPending {
				found[KindRemapPending] = "rows waiting to be remapped at the next GPU reset"
			}
		}
		if loadedOK {
			s := w.lastLoaded
			if s.PCIeMaxGen > 0 && s.PCIeMaxWidth > 0 && (s.PCIeGen < s.PCIeMaxGen || s.PCIeWidth < s.PCIeMaxWidth) {
				found[KindPCIeDegraded] = fmt.Sprintf("PCIe Gen%d x%d at %d%% utilisation, the link can do Gen%d x%d",
					s.PCIeGen, s.PCIeWidth, s.UtilPercent, s.PCIeMaxGen, s.PCIeMaxWidth)
			}
		}
		for _, kind := range []string{KindThrottle, KindPowerLimit, KindPCIeDegraded, KindNVLinkDown, KindRemapPending} {
			d, on := found[kind]
			if on && !w.active[kind] {
				out = append(out, gpu.Event{UUID: id, At: now, Kind: kind, Detail: d})
			}
			if on {
				w.active[kind] = true
			} else {
				delete(w.active, kind)
			}
		}
	}
	return out
}

// throttling describes hardware throttling in more than ThrottlePercent of
// the loaded samples in the window, or returns "".
func (a *Assessor) throttling(w *gpuWindow, now time.Time) string {
	n, t := 0, 0
	var causes uint64
	for _, s := range w.loaded {
		if s.at.After(now) {
			break
		}
		n++
		if s.throttle != 0 {
			t++
			causes |= s.throttle
		}
	}
	if n < a.minLoaded || t*100 <= ThrottlePercent*n {
		return ""
	}
	return fmt.Sprintf("hardware throttling (%s) in %d of %d loaded samples (%.1f%%) over %s",
		throttleNames(causes), t, n, float64(t)*100/float64(n), a.window)
}

// throttleNames names the hardware causes in a throttle mask.
func throttleNames(mask uint64) string {
	var names []string
	if mask&gpu.ThrottleHWSlowdown != 0 {
		names = append(names, "hw_slowdown")
	}
	if mask&gpu.ThrottleHWThermal != 0 {
		names = append(names, "hw_thermal")
	}
	if mask&gpu.ThrottleHWPowerBrake != 0 {
		names = append(names, "hw_power_brake")
	}
	return strings.Join(names, ", ")
}
