package console

import (
	"strconv"
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
// "99.5", "1,234.50", "¥20") into fen, exactly: digits with at most two
// decimals, no sign, no exponent. Zero is taken only when zeroOK (a limit
// of 0 means none); otherwise the amount must be at least minFen. Nothing
// above maxFen is taken.
func billParseYuan(s string, zeroOK bool, minFen, maxFen int64) (int64, billAmountProblem) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "¥"), "￥")
	s = strings.ReplaceAll(strings.TrimSpace(s), ",", "")
	if s == "" {
		return 0, billNotMoney
	}
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" && (!dot || frac == "") {
		return 0, billNotMoney
	}
	for _, part := range []string{whole, frac} {
		for _, c := range part {
			if c < '0' || c > '9' {
				if strings.HasPrefix(s, "-") {
					return 0, billNegative
				}
				return 0, billNotMoney
			}
		}
	}
	if dot && frac == "" {
		return 0, billNotMoney // "12." reads as a typo
	}
	if len(frac) > 2 {
		return 0, billDecimals
	}
	if len(strings.TrimLeft(whole, "0")) > 12 {
		return 0, billTooLarge // beyond any cap; keeps the arithmetic in range
	}
	var yuan int64
	if whole != "" {
		var err error
		if yuan, err = strconv.ParseInt(whole, 10, 64); err != nil {
			return 0, billNotMoney
		}
	}
	for len(frac) < 2 {
		frac += "0"
	}
	cents, _ := strconv.ParseInt(frac, 10, 64)
	fen := yuan*100 + cents
	switch {
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
	sign := ""
	if fen < 0 {
		sign, fen = "-", -fen
	}
	cents := strconv.FormatInt(fen%100, 10)
	if len(cents) == 1 {
		cents = "0" + cents
	}
	return sign + strconv.FormatInt(fen/100, 10) + "." + cents
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
