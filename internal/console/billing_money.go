package console

import (
	"strings"
	"time"
)

// billAmountProblem is what is wrong with an amount typed in yuan.
type billAmountProblem string

// Amount problems; billOK is none.
const (
	billOK       billAmountProblem = ""
	billNotMoney billAmountProblem = "bad"      // not a number of yuan
	billDecimals billAmountProblem = "decimals" // more than two decimals
	billNotAbove billAmountProblem = "positive" // zero, where it is not allowed
	billNegative billAmountProblem = "negative" // below zero
	billTooSmall billAmountProblem = "min"      // under the minimum
	billTooLarge billAmountProblem = "max"      // over the maximum
)

// billParseYuan reads an amount of yuan as a person types it ("100",
// "99.5", "1,234.50", "¥20") into fen with parseYuan; a trailing point
// ("12.") reads as a typo. Zero is taken only when zeroOK (a limit of 0
// means none); otherwise the amount must be at least minFen. Nothing above
// maxFen is taken.
func billParseYuan(s string, zeroOK bool, minFen, maxFen int64) (int64, billAmountProblem) {
	if strings.HasSuffix(strings.TrimSpace(s), ".") {
		return 0, billNotMoney
	}
	fen, problem := parseYuan(s)
	switch {
	case problem == yuanNegative:
		return 0, billNegative
	case problem == yuanDecimals:
		return 0, billDecimals
	case problem == yuanHuge:
		return 0, billTooLarge
	case problem != yuanOK:
		return 0, billNotMoney
	case fen == 0 && zeroOK:
		return 0, billOK
	case fen == 0:
		return 0, billNotAbove
	case fen < minFen:
		return 0, billTooSmall
	case fen > maxFen:
		return 0, billTooLarge
	}
	return fen, billOK
}

// billYuanValue shows fen as a form value in yuan: "1234.5" → "1234.50";
// zero is "0".
func billYuanValue(fen int64) string {
	if fen == 0 {
		return "0"
	}
	return yuanValue(fen)
}

// billMonths are the statement months of an account: from the month it was
// created to the month of now (in loc), newest first, at most max.
func billMonths(created, now time.Time, loc *time.Location, max int) []string {
	c, n := created.In(loc), now.In(loc)
	first := time.Date(c.Year(), c.Month(), 1, 0, 0, 0, 0, loc)
	m := time.Date(n.Year(), n.Month(), 1, 0, 0, 0, 0, loc)
	var out []string
	for !m.Before(first) && len(out) < max {
		out = append(out, m.Format("2006-01"))
		m = m.AddDate(0, -1, 0)
	}
	return out
}

// billRunwayParts splits a runway in seconds into days, hours and minutes.
func billRunwayParts(seconds int64) (days, hours, minutes int64) {
	if seconds < 0 {
		seconds = 0
	}
	return seconds / 86400, seconds % 86400 / 3600, seconds % 3600 / 60
}
