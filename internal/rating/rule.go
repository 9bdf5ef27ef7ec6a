package rating

import (
	"fmt"
	"time"

	"github.com/gpurent/gpurent"
)

// ClockTime is a time of day in the billing time zone, in whole seconds since
// local midnight: 0 ≤ c < 86,400.
type ClockTime int32

// Clock returns the ClockTime hour:minute:second. Out-of-range fields give an
// invalid ClockTime that Rule.Validate rejects.
func Clock(hour, minute, second int) ClockTime {
	if hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59 {
		return -1
	}
	return ClockTime(hour*3600 + minute*60 + second)
}

func (c ClockTime) valid() bool { return c >= 0 && c < 86400 }

func (c ClockTime) hms() (h, m, s int) {
	return int(c) / 3600, int(c) / 60 % 60, int(c) % 60
}

// String returns "HH:MM" or "HH:MM:SS" when the seconds are not zero.
func (c ClockTime) String() string {
	if !c.valid() {
		return fmt.Sprintf("invalid(%d)", int32(c))
	}
	h, m, s := c.hms()
	if s != 0 {
		return fmt.Sprintf("%02d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%02d:%02d", h, m)
}

// Rule says which instants are off-peak, in the book's time zone. An instant
// is off-peak when its local clock time lies in the daily window
// [Start, End) — which wraps midnight when Start > End, and is empty when
// Start == End — or, with Weekends, when its local day is a Saturday or a
// Sunday. Every boundary is half-open: 22:00:00 is off-peak, 21:59:59 is not.
type Rule struct {
	Start    ClockTime
	End      ClockTime
	Weekends bool
}

// DefaultRule is the product's off-peak rule: every day 22:00–08:00, and all
// of Saturday and Sunday.
func DefaultRule() Rule {
	return Rule{Start: Clock(22, 0, 0), End: Clock(8, 0, 0), Weekends: true}
}

// Validate checks the clock times.
func (r Rule) Validate() error {
	if !r.Start.valid() || !r.End.valid() {
		return gpurent.Errorf(gpurent.CodeInvalid, "off-peak window %s–%s: clock times must lie in [00:00, 24:00)", r.Start, r.End)
	}
	return nil
}

// String describes the rule, e.g. "22:00–08:00 daily, weekends".
func (r Rule) String() string {
	s := "no daily window"
	if r.Start != r.End {
		s = fmt.Sprintf("%s–%s daily", r.Start, r.End)
	}
	if r.Weekends {
		s += ", weekends"
	}
	return s
}

// OffPeakAt reports whether the instant t is off-peak, with local time taken
// in loc.
func (r Rule) OffPeakAt(t time.Time, loc *time.Location) bool {
	return r.offPeakLocal(t.In(loc))
}

// offPeakLocal classifies a time already expressed in the billing zone.
func (r Rule) offPeakLocal(lt time.Time) bool {
	if r.Weekends {
		if wd := lt.Weekday(); wd == time.Saturday || wd == time.Sunday {
			return true
		}
	}
	if r.Start == r.End {
		return false
	}
	h, m, s := lt.Clock()
	c := ClockTime(h*3600 + m*60 + s)
	if r.Start < r.End {
		return r.Start <= c && c < r.End
	}
	return c >= r.Start || c < r.End
}

// nextChange returns the first instant after lt at which the off-peak state
// differs from off, or false if it never changes (no daily window and no
// weekends). Within one local day the state can change only at midnight, at
// Start and at End, so it tries those points day by day. A week holds at
// least one change whenever any exists, so eight days always suffice.
func (r Rule) nextChange(lt time.Time, off bool, loc *time.Location) (time.Time, bool) {
	if r.Start == r.End && !r.Weekends {
		return time.Time{}, false
	}
	points := r.dayPoints()
	y, mo, d := lt.Date()
	for i := 0; i <= 8; i++ {
		for _, c := range points {
			h, m, s := c.hms()
			p := time.Date(y, mo, d+i, h, m, s, 0, loc)
			if p.After(lt) && r.offPeakLocal(p) != off {
				return p, true
			}
		}
	}
	return time.Time{}, false
}

// dayPoints returns the clock times at which the state may change, in order.
func (r Rule) dayPoints() [3]ClockTime {
	a, b := r.Start, r.End
	if a > b {
		a, b = b, a
	}
	// Midnight first; a repeated point (Start or End at midnight, or
	// Start == End) is harmless.
	return [3]ClockTime{0, a, b}
}
