package sla

import (
	"time"

	// The billing zone must load on machines without a system tzdata.
	_ "time/tzdata"

	"github.com/gpurent/gpurent"
)

// Zone is the time zone of the SLA's clock hours and calendar months, the
// same as the billing zone of the price windows.
const Zone = "Asia/Shanghai"

// LoadZone loads Asia/Shanghai from the embedded tzdata.
func LoadZone() (*time.Location, error) {
	loc, err := time.LoadLocation(Zone)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "loading time zone %s", Zone)
	}
	return loc, nil
}

// mustZone panics on a nil zone; see the package documentation.
func mustZone(loc *time.Location) *time.Location {
	if loc == nil {
		panic("sla: nil *time.Location (load the zone with sla.LoadZone)")
	}
	return loc
}

// Month returns the calendar month in loc that contains at, as the UTC
// instants [from, to): local midnight of its first day and of the next
// month's first day.
func Month(at time.Time, loc *time.Location) (from, to time.Time) {
	lt := at.In(mustZone(loc))
	y, m, _ := lt.Date()
	from = time.Date(y, m, 1, 0, 0, 0, 0, loc)
	to = time.Date(y, m+1, 1, 0, 0, 0, 0, loc)
	return from.UTC(), to.UTC()
}

// hourStart returns the start of the local clock hour (in loc) that contains
// x: x less the minutes, seconds and nanoseconds its local clock shows. It is
// exact in zones with half-hour offsets and in the repeated hour of a
// daylight-saving change, where each occurrence is its own clock hour.
func hourStart(x time.Time, loc *time.Location) time.Time {
	lt := x.In(loc)
	into := time.Duration(lt.Minute())*time.Minute +
		time.Duration(lt.Second())*time.Second +
		time.Duration(lt.Nanosecond())
	return x.Add(-into).UTC()
}

// hourEnd returns the end of the local clock hour that starts at hs and
// contains cur (hs ≤ cur < hs + 1 h): the start of the next clock hour.
func hourEnd(hs, cur time.Time, loc *time.Location) time.Time {
	next := hourStart(hs.Add(time.Hour), loc)
	if !next.After(cur) {
		// Only an offset change in the middle of an hour gets here; the
		// hour then ends after 60 minutes of elapsed time.
		next = hs.Add(time.Hour)
	}
	return next
}
