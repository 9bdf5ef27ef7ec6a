package console

import (
	"strconv"
	"strings"
)

// yuanProblem says why what was typed is not an amount of yuan.
type yuanProblem int

const (
	yuanOK       yuanProblem = iota
	yuanEmpty                // nothing but spaces and a ¥ sign
	yuanNegative             // a minus sign
	yuanFormat               // not digits with at most one point
	yuanDecimals             // more than two decimals
	yuanHuge                 // more than yuanMaxDigits digits before the point
)

// yuanMaxDigits bounds the whole yuan (leading zeros aside): beyond any
// price, credit or purchase, and the fen stay far inside int64.
const yuanMaxDigits = 12

// parseYuan reads an amount of yuan as a person types it ("100", "99.5",
// "1,234.50", "¥20", ".5", "7.") into fen, exactly: digits with at most two
// decimals, no sign, no exponent. Every money field of the console reads
// through it; each form adds its own bounds and words.
func parseYuan(s string) (int64, yuanProblem) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "¥"), "￥")
	s = strings.TrimSpace(strings.ReplaceAll(s, ",", ""))
	switch {
	case s == "":
		return 0, yuanEmpty
	case strings.HasPrefix(s, "-"):
		return 0, yuanNegative
	}
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" && (!dot || frac == "") {
		return 0, yuanFormat
	}
	for _, part := range []string{whole, frac} {
		for _, c := range part {
			if c < '0' || c > '9' {
				return 0, yuanFormat
			}
		}
	}
	if len(frac) > 2 {
		return 0, yuanDecimals
	}
	whole = strings.TrimLeft(whole, "0")
	if len(whole) > yuanMaxDigits {
		return 0, yuanHuge
	}
	var fen int64
	if whole != "" {
		y, err := strconv.ParseInt(whole, 10, 64)
		if err != nil {
			return 0, yuanFormat
		}
		fen = y * 100
	}
	for len(frac) < 2 {
		frac += "0"
	}
	cents, _ := strconv.ParseInt(frac, 10, 64)
	return fen + cents, yuanOK
}

// yuanValue shows fen in yuan with two decimals, as a form field's value
// that parseYuan reads back: 123456 → "1234.56", 700 → "7.00".
func yuanValue(fen int64) string {
	sign := ""
	if fen < 0 {
		sign, fen = "-", -fen
	}
	return sign + strconv.FormatInt(fen/100, 10) + "." + strconv.FormatInt(100+fen%100, 10)[1:]
}
