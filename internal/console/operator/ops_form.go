package operator

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/rating"
)

// This file holds the operator pages' form parsing: money typed in yuan
// read exactly into fen (never through a float), local times and clock
// times in Beijing time, and one-line free text. Each parser answers a
// problem word instead of an error, which the handler turns into a
// message in the page's language ("ops.err.<problem>").

// Problems a field can have; each has a message "ops.err.<problem>" that
// takes the field's label.
const (
	opsProblemRequired = "required"
	opsProblemNegative = "negative"
	opsProblemFormat   = "format"
	opsProblemRange    = "range"
	opsProblemTooLong  = "too_long"
	opsProblemControl  = "control"
	opsProblemPast     = "past"
)

// opsParseYuan reads an amount of money typed in yuan ("12", "12.3",
// "1,234.56", "¥8", "+3") into fen with web.ParseYuan, at most maxFen. It
// answers the fen and "" or a problem.
func opsParseYuan(s string, maxFen int64) (int64, string) {
	fen, problem := web.ParseYuan(strings.TrimPrefix(strings.TrimSpace(s), "+"))
	switch {
	case problem == web.YuanEmpty:
		return 0, opsProblemRequired
	case problem == web.YuanNegative:
		return 0, opsProblemNegative
	case problem == web.YuanHuge || problem == web.YuanOK && fen > maxFen:
		return 0, opsProblemRange
	case problem != web.YuanOK:
		return 0, opsProblemFormat
	}
	return fen, ""
}

// opsParseAmount reads an amount to credit or grant: as opsParseYuan,
// and zero is out of range.
func opsParseAmount(s string, maxFen int64) (int64, string) {
	fen, problem := opsParseYuan(s, maxFen)
	if problem == "" && fen == 0 {
		return 0, opsProblemRange
	}
	return fen, problem
}

// opsYuanNumber is fen as a JSON number of yuan ("12.34") for a chart's
// values: exact decimal text, no float on the way.
func opsYuanNumber(fen int64) json.Number { return json.Number(money.Value(fen)) }

// opsParseLocalTime reads a time typed in loc (Beijing time) and answers it
// in UTC, or false when it is none of the forms a time field takes: what
// <input type="datetime-local"> sends, the same with a space, and a bare
// date (midnight).
func opsParseLocalTime(s string, loc *time.Location) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04",
		"2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// opsLocalValue is t as a datetime-local field's value in loc.
func opsLocalValue(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return ""
	}
	return t.In(loc).Format("2006-01-02T15:04")
}

// opsParseClock reads a clock time "HH:MM" or "HH:MM:SS" (what <input
// type="time"> sends).
func opsParseClock(s string) (rating.ClockTime, bool) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, false
	}
	var f [3]int
	for i, part := range parts {
		if len(part) != 2 {
			return 0, false
		}
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return 0, false
		}
		f[i] = n
	}
	c := rating.Clock(f[0], f[1], f[2])
	return c, c >= 0
}

// opsOneLine trims free text and checks it: valid UTF-8, no control
// characters, at most maxRunes; required says it may not be empty.
func opsOneLine(s string, maxRunes int, required bool) (string, string) {
	s = strings.TrimSpace(s)
	switch {
	case s == "" && required:
		return "", opsProblemRequired
	case !utf8.ValidString(s):
		return "", opsProblemControl
	case utf8.RuneCountInString(s) > maxRunes:
		return "", opsProblemTooLong
	}
	for _, c := range s {
		if unicode.IsControl(c) {
			return "", opsProblemControl
		}
	}
	return s, ""
}

// opsParseCount reads a whole number in [lo, hi].
func opsParseCount(s string, lo, hi int) (int, string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, opsProblemRequired
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return 0, opsProblemFormat
	case n < lo && n < 0:
		return 0, opsProblemNegative
	case n < lo || n > hi:
		return 0, opsProblemRange
	}
	return n, ""
}

// opsNextHour is the first whole hour after t.
func opsNextHour(t time.Time) time.Time { return t.Truncate(time.Hour).Add(time.Hour) }
