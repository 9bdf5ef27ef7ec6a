package rating

import (
	"time"

	"github.com/gpurent/gpurent"
)

// MinimumRunSeconds is the least a power-on is billed: a run shorter than
// this (but longer than zero) is billed as this many seconds.
const MinimumRunSeconds = 60

// Segment is a piece of usage time [Start, End) that carries one rate: it
// lies in one off-peak state, one price-list version and one statement
// period (a calendar month in the book's zone). Start and End are UTC
// instants in whole seconds.
type Segment struct {
	Start time.Time
	End   time.Time

	OffPeak   bool
	Period    time.Time // start of the statement month containing Start, UTC
	VersionID string

	// The rates in force for the segment, copied from its version, per
	// GPU-hour: the list price of its window, the academic price of its
	// window, and the no-GPU price per instance-hour.
	ListFen     int64
	AcademicFen int64
	NoGPUFen    int64

	// MinimumTopUp is the number of seconds billed beyond End − Start
	// because of the 60-second minimum per power-on (see SplitRun). It is
	// zero on every segment Split makes.
	MinimumTopUp int64
}

// Seconds returns the wall-clock length End − Start in seconds.
func (s Segment) Seconds() int64 { return s.End.Unix() - s.Start.Unix() }

// BilledSeconds returns the seconds billed: the wall-clock length plus any
// minimum top-up.
func (s Segment) BilledSeconds() int64 { return s.Seconds() + s.MinimumTopUp }

// Split cuts the usage interval [start, end) of a GPU type into segments at
// every off-peak boundary, every price-version boundary and every calendar
// month boundary in the book's zone. The segments are in order, never
// overlap, leave no gap, and cover [start, end) exactly; an empty interval
// gives none. start and end must be whole seconds with start ≤ end, and a
// price list must be in force at start.
func Split(b *Book, typeID string, start, end time.Time) ([]Segment, error) {
	return AppendSplit(nil, b, typeID, start, end)
}

// AppendSplit is Split appending to dst, for callers that reuse a buffer. On
// error it returns dst as it was.
func AppendSplit(dst []Segment, b *Book, typeID string, start, end time.Time) ([]Segment, error) {
	n0 := len(dst)
	if err := checkInterval(start, end); err != nil {
		return dst, err
	}
	if !start.Before(end) {
		return dst, nil
	}
	vi, err := b.version(start)
	if err != nil {
		return dst, err
	}
	t := start.UTC()
	end = end.UTC()
	for t.Before(end) {
		for vi+1 < len(b.versions) && !t.Before(b.versions[vi+1].Effective) {
			vi++
		}
		seg, err := b.segmentAt(vi, typeID, t, end)
		if err != nil {
			return dst[:n0], err
		}
		dst = append(dst, seg)
		t = seg.End
	}
	return dst, nil
}

// segmentAt returns the segment that starts at t, in version vi, cut at the
// first boundary after t or at end.
func (b *Book) segmentAt(vi int, typeID string, t, end time.Time) (Segment, error) {
	v := &b.versions[vi]
	p, ok := v.Types[typeID]
	if !ok {
		return Segment{}, errNoType(typeID, v)
	}
	cut := end
	if vi+1 < len(b.versions) && b.versions[vi+1].Effective.Before(cut) {
		cut = b.versions[vi+1].Effective
	}
	lt := t.In(b.loc)
	y, mo, _ := lt.Date()
	period := time.Date(y, mo, 1, 0, 0, 0, 0, b.loc)
	if next := time.Date(y, mo+1, 1, 0, 0, 0, 0, b.loc); next.Before(cut) {
		cut = next
	}
	off := v.Rule.offPeakLocal(lt)
	if change, ok := v.Rule.nextChange(lt, off, b.loc); ok && change.Before(cut) {
		cut = change
	}
	return Segment{
		Start:       t,
		End:         cut.UTC(),
		OffPeak:     off,
		Period:      period.UTC(),
		VersionID:   v.ID,
		ListFen:     p.Hourly(off, false),
		AcademicFen: p.Hourly(off, true),
		NoGPUFen:    p.NoGPUFen,
	}, nil
}

// SplitRun is Split for one power-on [start, end), applying the 60-second
// minimum. A run of 60 seconds or more splits exactly as Split does. A run
// of 1 to 59 seconds is billed as 60 seconds at the rate in force at its
// start: it gives ONE segment [start, end) with the off-peak state, version,
// period and rates of its start — deliberately not cut even if a boundary
// falls inside it — and MinimumTopUp = 60 − (end − start). Wall-clock
// coverage stays exact (no overlap with the next run); only the billed
// seconds grow. A zero-length run gives no segment and costs nothing.
func SplitRun(b *Book, typeID string, start, end time.Time) ([]Segment, error) {
	if err := checkInterval(start, end); err != nil {
		return nil, err
	}
	d := end.Unix() - start.Unix()
	if d == 0 || d >= MinimumRunSeconds {
		return Split(b, typeID, start, end)
	}
	vi, err := b.version(start)
	if err != nil {
		return nil, err
	}
	seg, err := b.segmentAt(vi, typeID, start.UTC(), end.UTC())
	if err != nil {
		return nil, err
	}
	seg.End = end.UTC()
	seg.MinimumTopUp = MinimumRunSeconds - d
	return []Segment{seg}, nil
}

func checkInterval(start, end time.Time) error {
	if start.IsZero() || end.IsZero() || start.Nanosecond() != 0 || end.Nanosecond() != 0 {
		return gpurent.Errorf(gpurent.CodeInvalid, "usage interval must be given in whole seconds")
	}
	if end.Before(start) {
		return gpurent.Errorf(gpurent.CodeInvalid, "usage interval ends (%s) before it starts (%s)",
			end.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339))
	}
	return nil
}
