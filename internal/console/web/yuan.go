package web

import "github.com/gpurent/gpurent/internal/money"

// YuanProblem says why what was typed is not an amount of yuan: money's
// Problem, with YuanOK for none.
type YuanProblem = money.Problem

// The problems, as the console's forms name them.
const (
	YuanOK       YuanProblem = 0
	YuanEmpty                = money.Empty
	YuanNegative             = money.Negative
	YuanFormat               = money.Malformed
	YuanDecimals             = money.Decimals
	YuanHuge                 = money.TooLarge
)

// YuanMaxDigits bounds the whole yuan (money.MaxDigits).
const YuanMaxDigits = money.MaxDigits

// ParseYuan reads an amount of yuan as a person types it ("100", "99.5",
// "1,234.50", "¥20", ".5", "7.") into fen with money.Parse. Every money
// field of the console reads through it; each form adds its own bounds
// and words.
func ParseYuan(s string) (int64, YuanProblem) {
	fen, err := money.Parse(s)
	return fen, money.ProblemOf(err)
}
