package money_test

import (
	"errors"
	"math"
	"testing"

	"github.com/gpurent/gpurent/internal/money"
)

func TestFormats(t *testing.T) {
	for _, c := range []struct {
		fen                                             int64
		format, signed, number, ungrouped, value, short string
	}{
		{0, "¥0.00", "¥0.00", "0.00", "¥0.00", "0.00", "0"},
		{5, "¥0.05", "+¥0.05", "0.05", "¥0.05", "0.05", "0.05"},
		{80, "¥0.80", "+¥0.80", "0.80", "¥0.80", "0.80", "0.8"},
		{700, "¥7.00", "+¥7.00", "7.00", "¥7.00", "7.00", "7"},
		{1234, "¥12.34", "+¥12.34", "12.34", "¥12.34", "12.34", "12.34"},
		{100000, "¥1,000.00", "+¥1,000.00", "1,000.00", "¥1000.00", "1000.00", "1000"},
		{123456789, "¥1,234,567.89", "+¥1,234,567.89", "1,234,567.89", "¥1234567.89", "1234567.89", "1234567.89"},
		{99999999, "¥999,999.99", "+¥999,999.99", "999,999.99", "¥999999.99", "999999.99", "999999.99"},
		{123456, "¥1,234.56", "+¥1,234.56", "1,234.56", "¥1234.56", "1234.56", "1234.56"},
		{100_000_000, "¥1,000,000.00", "+¥1,000,000.00", "1,000,000.00", "¥1000000.00", "1000000.00", "1000000"},
		{-250, "-¥2.50", "-¥2.50", "-2.50", "-¥2.50", "-2.50", "-2.5"},
		{300000, "¥3,000.00", "+¥3,000.00", "3,000.00", "¥3000.00", "3000.00", "3000"},
		{-5, "-¥0.05", "-¥0.05", "-0.05", "-¥0.05", "-0.05", "-0.05"},
		{-123456, "-¥1,234.56", "-¥1,234.56", "-1,234.56", "-¥1234.56", "-1234.56", "-1234.56"},
		{math.MaxInt64, "¥92,233,720,368,547,758.07", "+¥92,233,720,368,547,758.07", "92,233,720,368,547,758.07",
			"¥92233720368547758.07", "92233720368547758.07", "92233720368547758.07"},
		{math.MinInt64, "-¥92,233,720,368,547,758.08", "-¥92,233,720,368,547,758.08", "-92,233,720,368,547,758.08",
			"-¥92233720368547758.08", "-92233720368547758.08", "-92233720368547758.08"},
	} {
		for name, got := range map[string][2]string{
			"Format":    {money.Format(c.fen), c.format},
			"Signed":    {money.Signed(c.fen), c.signed},
			"Number":    {money.Number(c.fen), c.number},
			"Ungrouped": {money.Ungrouped(c.fen), c.ungrouped},
			"Value":     {money.Value(c.fen), c.value},
			"Short":     {money.Short(c.fen), c.short},
		} {
			if got[0] != got[1] {
				t.Errorf("%s(%d) = %q, want %q", name, c.fen, got[0], got[1])
			}
		}
	}
}

func TestParse(t *testing.T) {
	if money.ProblemOf(nil) != 0 || money.ProblemOf(errors.New("other")) != 0 {
		t.Error("ProblemOf of nil or another error is not 0")
	}
	for in, want := range map[string]int64{
		"100": 10000, "99.5": 9950, "99.50": 9950, "1,234.50": 123450, "¥20": 2000, "￥20": 2000,
		" ¥ 20 ": 2000, ".5": 50, "7.": 700, "0": 0, "0.01": 1, "007": 700,
		"999999999999.99": 99999999999999, "000000000000001": 100,
	} {
		got, err := money.Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, want := range map[string]money.Problem{
		"": money.Empty, " ¥ ": money.Empty, "-1": money.Negative, "¥-1": money.Negative,
		"1e3": money.Malformed, "+3": money.Malformed, ".": money.Malformed, "1.2.3": money.Malformed,
		"12 3": money.Malformed, "١٢": money.Malformed, "0x10": money.Malformed, "NaN": money.Malformed,
		"1.234": money.Decimals, "1000000000000": money.TooLarge, "99999999999999999999": money.TooLarge,
	} {
		_, err := money.Parse(in)
		var pe *money.ParseError
		if !errors.As(err, &pe) || pe.Problem != want || pe.Input != in || pe.Error() == "" || money.ProblemOf(err) != want {
			t.Errorf("Parse(%q) error = %v, want problem %d", in, err, want)
		}
	}
}

// FuzzParse: Parse never panics, never returns a negative amount, and what
// it reads Format and Value write back in a form it reads to the same fen.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"100", "99.5", "1,234.50", "¥20", "￥ 20", ".5", "7.", "-1", "1e3", "", "999999999999.99"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fen, err := money.Parse(s)
		if err != nil {
			var pe *money.ParseError
			if !errors.As(err, &pe) || fen != 0 {
				t.Fatalf("Parse(%q) = %d, %v: want 0 and a *ParseError", s, fen, err)
			}
			return
		}
		if fen < 0 {
			t.Fatalf("Parse(%q) = %d, negative", s, fen)
		}
		for _, out := range []string{money.Format(fen), money.Value(fen), money.Short(fen), money.Number(fen), money.Ungrouped(fen)} {
			if back, err := money.Parse(out); err != nil || back != fen {
				t.Fatalf("Parse(%q) = %d; its form %q reads back as %d, %v", s, fen, out, back, err)
			}
		}
	})
}
