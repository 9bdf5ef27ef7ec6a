package web

import (
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/money"
)

// BillAmountProblem is what is wrong with an amount typed in yuan.
type BillAmountProblem string

// Amount problems; BillOK is none.
const (
	BillOK       BillAmountProblem = ""
	BillNotMoney BillAmountProblem = "bad"      // not a number of yuan
	BillDecimals BillAmountProblem = "decimals" // more than two decimals
	BillNotAbove BillAmountProblem = "positive" // zero, where it is not allowed
	BillNegative BillAmountProblem = "negative" // below zero
	BillTooSmall BillAmountProblem = "min"      // under the minimum
	BillTooLarge BillAmountProblem = "max"      // over the maximum
)

// BillParseYuan reads an amount of yuan as a person types it ("100",
// "99.5", "1,234.50", "¥20") into fen with ParseYuan; a trailing point
// ("12.") reads as a typo. Zero is taken only when zeroOK (a limit of 0
// means none); otherwise the amount must be at least minFen. Nothing above
// maxFen is taken.
func BillParseYuan(s string, zeroOK bool, minFen, maxFen int64) (int64, BillAmountProblem) {
	if strings.HasSuffix(strings.TrimSpace(s), ".") {
		return 0, BillNotMoney
	}
	fen, problem := ParseYuan(s)
	switch {
	case problem == YuanNegative:
		return 0, BillNegative
	case problem == YuanDecimals:
		return 0, BillDecimals
	case problem == YuanHuge:
		return 0, BillTooLarge
	case problem != YuanOK:
		return 0, BillNotMoney
	case fen == 0 && zeroOK:
		return 0, BillOK
	case fen == 0:
		return 0, BillNotAbove
	case fen < minFen:
		return 0, BillTooSmall
	case fen > maxFen:
		return 0, BillTooLarge
	}
	return fen, BillOK
}

// BillYuanValue shows fen as a form value in yuan: "1234.5" → "1234.50";
// zero is "0".
func BillYuanValue(fen int64) string {
	if fen == 0 {
		return "0"
	}
	return money.Value(fen)
}

// BillMonths are the statement months of an account: from the month it was
// created to the month of now (in loc), newest first, at most max.
func BillMonths(created, now time.Time, loc *time.Location, max int) []string {
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

// BillRunwayParts splits a runway in seconds into days, hours and minutes.
func BillRunwayParts(seconds int64) (days, hours, minutes int64) {
	if seconds < 0 {
		seconds = 0
	}
	return seconds / 86400, seconds % 86400 / 3600, seconds % 3600 / 60
}
