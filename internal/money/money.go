// Package money is the one place where amounts of money become text and text
// becomes amounts. Amounts are int64 fen (1/100 CNY) everywhere in gpurent;
// this package shows them as yuan in the few forms the product uses and reads
// what a person types back into fen exactly, with integer arithmetic only (no
// floats anywhere).
//
// The forms:
//
//	Format(123456)       "¥1,234.56"   the display form, "-¥2.50" below zero
//	Signed(300)          "+¥3.00"      a change, its sign always shown
//	Number(300000)       "3,000.00"    the display form without the symbol
//	Ungrouped(123456)    "¥1234.56"    the display form without separators
//	Value(123456)        "1234.56"     a form field's value, read back by Parse
//	Short(80)            "0.8"         a form field's value, trailing zeros cut
//
// Parse reads "100", "99.5", "1,234.50", "¥20", "￥ 20", ".5" and "7." and
// refuses anything else with a *ParseError saying why.
package money

import (
	"strconv"
	"strings"
)

// FenPerYuan is how many fen make one yuan.
const FenPerYuan = 100

// MaxDigits bounds the whole yuan Parse accepts (leading zeros aside): beyond
// any price, credit or purchase, and the fen stay far inside int64.
const MaxDigits = 12

// Format shows fen as yuan with thousands separators and two decimals:
// 1234 → "¥12.34", 123456789 → "¥1,234,567.89", -5 → "-¥0.05". It is exact
// over the whole int64 range.
func Format(fen int64) string {
	sign, u := split(fen)
	return sign + "¥" + grouped(u/FenPerYuan) + "." + cents(u)
}

// Signed shows fen as Format does with its sign always shown: +¥3.00,
// -¥1.50, and ¥0.00 for zero.
func Signed(fen int64) string {
	if fen > 0 {
		return "+" + Format(fen)
	}
	return Format(fen)
}

// Number shows fen as Format does without the ¥ symbol: 300000 → "3,000.00",
// -5 → "-0.05" (tables whose heading names the currency).
func Number(fen int64) string {
	sign, u := split(fen)
	return sign + grouped(u/FenPerYuan) + "." + cents(u)
}

// Ungrouped shows fen with the ¥ symbol and two decimals but no thousands
// separators: 123456 → "¥1234.56", -5 → "-¥0.05" (notes in running text).
func Ungrouped(fen int64) string {
	sign, u := split(fen)
	return sign + "¥" + strconv.FormatUint(u/FenPerYuan, 10) + "." + cents(u)
}

// Value shows fen as a form field's value that Parse reads back to the same
// fen: 123456 → "1234.56", 700 → "7.00", -5 → "-0.05" (which Parse refuses:
// amounts typed in are never negative).
func Value(fen int64) string {
	sign, u := split(fen)
	return sign + strconv.FormatUint(u/FenPerYuan, 10) + "." + cents(u)
}

// Short shows fen as Value does with trailing zero decimals and a bare
// point cut: 30000000 → "300000", 80 → "0.8", 123456 → "1234.56".
func Short(fen int64) string {
	return strings.TrimSuffix(strings.TrimRight(Value(fen), "0"), ".")
}

// split returns the sign of fen ("-" or "") and its magnitude, exact even for
// math.MinInt64 (two's complement).
func split(fen int64) (string, uint64) {
	u := uint64(fen)
	if fen < 0 {
		return "-", -u
	}
	return "", u
}

// cents is the two decimals of u fen.
func cents(u uint64) string {
	c := u % FenPerYuan
	return string([]byte{byte('0' + c/10), byte('0' + c%10)})
}

// grouped writes u with a comma between each group of three digits.
func grouped(u uint64) string {
	digits := strconv.FormatUint(u, 10)
	var b strings.Builder
	b.Grow(len(digits) + len(digits)/3)
	for i := range len(digits) {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(digits[i])
	}
	return b.String()
}
