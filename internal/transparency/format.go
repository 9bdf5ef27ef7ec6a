package transparency

import (
	"math"
	"strconv"
	"time"
)

// The units the probes report in.
const (
	unitTFLOPS = "TFLOPS"
	unitGBs    = "GB/s"
	unitImgs   = "img/s"
)

// dash stands for a figure that does not exist.
const dash = "—"

// figure formats a measured figure for the page: TFLOPS with one decimal,
// GB/s with one below 100 and none above, img/s with none; other units
// with two, one or no decimals by size. Not a number is a dash.
func figure(v float64, unit string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return dash
	}
	decimals := 0
	switch unit {
	case unitTFLOPS:
		decimals = 1
	case unitImgs:
		decimals = 0
	case unitGBs:
		if math.Abs(v) < 100 {
			decimals = 1
		}
	default:
		switch a := math.Abs(v); {
		case a < 10:
			decimals = 2
		case a < 100:
			decimals = 1
		}
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// percent formats a ratio as a percentage truncated (not rounded) to one
// decimal, so that a ratio just under a verdict's edge never reads as the
// edge itself (0.9499 is 94.9%, not 95.0%). 0 and not-a-number are a dash.
func percent(r float64) string {
	if r == 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		return dash
	}
	// The small bias keeps ratios that are the edge in binary (0.95 is
	// 0.94999…) on the edge.
	tenths := math.Floor(r*1000 + 1e-6)
	return strconv.FormatFloat(tenths/10, 'f', 1, 64) + "%"
}

// permille formats a share in permille as a percentage (850 is 85%,
// 875 is 87.5%).
func permille(p int) string {
	if p%10 == 0 {
		return strconv.Itoa(p/10) + "%"
	}
	return strconv.FormatFloat(float64(p)/10, 'f', 1, 64) + "%"
}

// csvFloat formats a figure for the CSV: the shortest decimal that reads
// back as the same float64, '.' as the separator, no exponent, no
// grouping; not a number is empty.
func csvFloat(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// csvOptional is csvFloat, or empty for 0 (the contract's "none").
func csvOptional(v float64) string {
	if v == 0 {
		return ""
	}
	return csvFloat(v)
}

// shanghai is the zone the page shows times in: Asia/Shanghai, which has
// been UTC+8 without daylight saving since 1991 (the report has no older
// times), so a fixed zone is exact and needs no time zone database.
func shanghai() *time.Location { return time.FixedZone("CST", 8*60*60) }
