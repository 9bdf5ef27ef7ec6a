package money

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Problem says why a text is not an amount of yuan.
type Problem int

// The problems Parse reports.
const (
	// Empty: nothing but spaces and a ¥ sign.
	Empty Problem = iota + 1
	// Negative: a minus sign.
	Negative
	// Malformed: not digits with at most one point.
	Malformed
	// Decimals: more than two decimals.
	Decimals
	// TooLarge: more than MaxDigits digits before the point.
	TooLarge
)

// ParseError is why Parse refused a text; Problem lets a form choose its own
// words, Error is a sentence for a command line.
type ParseError struct {
	Input   string
	Problem Problem
}

func (e *ParseError) Error() string {
	switch e.Problem {
	case Empty:
		return "no amount given: type a number of yuan like 100 or 99.50"
	case Negative:
		return fmt.Sprintf("amount %q is negative: type a number of yuan like 100 or 99.50", e.Input)
	case Decimals:
		return fmt.Sprintf("amount %q has more than two decimals: the smallest amount is ¥0.01", e.Input)
	case TooLarge:
		return fmt.Sprintf("amount %q is too large: at most %d digits before the point", e.Input, MaxDigits)
	default:
		return fmt.Sprintf("amount %q is not a number of yuan like 100 or 99.50", e.Input)
	}
}

// ProblemOf is the Problem of a Parse error, 0 for nil or any other error.
func ProblemOf(err error) Problem {
	var pe *ParseError
	if errors.As(err, &pe) {
		return pe.Problem
	}
	return 0
}

// Parse reads an amount of yuan as a person types it into fen, exactly:
// spaces around it, a leading ¥ or ￥ and thousands commas are ignored; what
// is left must be digits with at most one point and at most two decimals
// ("100", "99.5", "1,234.50", ".5", "7."), no sign and no exponent, at most
// MaxDigits whole digits. Otherwise the error is a *ParseError.
func Parse(s string) (int64, error) {
	fen, problem := parse(s)
	if problem != 0 {
		return 0, &ParseError{Input: s, Problem: problem}
	}
	return fen, nil
}

func parse(s string) (int64, Problem) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "¥"), "￥")
	s = strings.TrimSpace(strings.ReplaceAll(s, ",", ""))
	switch {
	case s == "":
		return 0, Empty
	case strings.HasPrefix(s, "-"):
		return 0, Negative
	}
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" && (!dot || frac == "") {
		return 0, Malformed
	}
	for _, part := range []string{whole, frac} {
		for i := range len(part) {
			if part[i] < '0' || part[i] > '9' {
				return 0, Malformed
			}
		}
	}
	if len(frac) > 2 {
		return 0, Decimals
	}
	whole = strings.TrimLeft(whole, "0")
	if len(whole) > MaxDigits {
		return 0, TooLarge
	}
	var fen int64
	if whole != "" {
		y, err := strconv.ParseInt(whole, 10, 64)
		if err != nil {
			return 0, Malformed
		}
		fen = y * FenPerYuan
	}
	c, _ := strconv.ParseInt((frac + "00")[:2], 10, 64)
	return fen + c, 0
}
