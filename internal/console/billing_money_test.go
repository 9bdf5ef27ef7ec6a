package console

import (
	"slices"
	"testing"
	"time"
)

func TestBillParseYuan(t *testing.T) {
	const max = 10_000_000_000
	for _, c := range []struct {
		in      string
		zeroOK  bool
		min     int64
		fen     int64
		problem billAmountProblem
	}{
		{"100", false, 1, 10000, billOK},
		{"99.5", false, 1, 9950, billOK},
		{"99.05", false, 1, 9905, billOK},
		{"0.01", false, 1, 1, billOK},
		{".5", false, 1, 50, billOK},
		{" ¥1,234.50 ", false, 1, 123450, billOK},
		{"￥20", false, 1, 2000, billOK},
		{"007", false, 1, 700, billOK},
		{"0", true, 1, 0, billOK},
		{"0.00", true, 1, 0, billOK},
		{"0", false, 1, 0, billNotAbove},
		{"-5", false, 1, 0, billNegative},
		{"-5", true, 1, 0, billNegative},
		{"1.234", false, 1, 0, billDecimals},
		{"0.001", true, 1, 0, billDecimals},
		{"", true, 1, 0, billNotMoney},
		{"abc", false, 1, 0, billNotMoney},
		{"1e3", false, 1, 0, billNotMoney},
		{"12.", false, 1, 0, billNotMoney},
		{".", false, 1, 0, billNotMoney},
		{"1.2.3", false, 1, 0, billNotMoney},
		{"+5", false, 1, 0, billNotMoney},
		{"５", false, 1, 0, billNotMoney}, // full-width digit
		{"0.99", false, 100, 0, billTooSmall},
		{"1", false, 100, 100, billOK},
		{"100000000", false, 1, max, billOK},
		{"100000000.01", false, 1, 0, billTooLarge},
		{"99999999999999999999999", false, 1, 0, billTooLarge},
	} {
		fen, problem := billParseYuan(c.in, c.zeroOK, c.min, max)
		if fen != c.fen || problem != c.problem {
			t.Errorf("billParseYuan(%q, zeroOK=%v, min=%d) = %d, %q; want %d, %q", c.in, c.zeroOK, c.min, fen, problem, c.fen, c.problem)
		}
	}
}

// TestBillYuanValueRoundTrip: what the form shows reads back as the same
// fen.
func TestBillYuanValueRoundTrip(t *testing.T) {
	for _, fen := range []int64{0, 1, 9, 10, 99, 100, 12345, 1_000_000_00} {
		v := billYuanValue(fen)
		got, problem := billParseYuan(v, true, 1, 1<<40)
		if problem != billOK || got != fen {
			t.Errorf("billYuanValue(%d) = %q reads back as %d, %q", fen, v, got, problem)
		}
	}
	if v := billYuanValue(-150); v != "-1.50" {
		t.Errorf("billYuanValue(-150) = %q", v)
	}
}

func TestBillMonths(t *testing.T) {
	loc := time.FixedZone("CST", 8*3600)
	created := time.Date(2026, 9, 30, 17, 0, 0, 0, time.UTC) // 1 October in Beijing
	now := time.Date(2026, 12, 31, 16, 30, 0, 0, time.UTC)   // 1 January in Beijing
	got := billMonths(created, now, loc, 36)
	if want := []string{"2027-01", "2026-12", "2026-11", "2026-10"}; !slices.Equal(got, want) {
		t.Fatalf("months %v, want %v", got, want)
	}
	if got := billMonths(created, now, loc, 2); !slices.Equal(got, []string{"2027-01", "2026-12"}) {
		t.Fatalf("at most 2: %v", got)
	}
	if got := billMonths(now, now, loc, 36); !slices.Equal(got, []string{"2027-01"}) {
		t.Fatalf("a new account: %v", got)
	}
}

func TestBillRunwayAndHours(t *testing.T) {
	for _, c := range []struct {
		sec     int64
		d, h, m int64
	}{{0, 0, 0, 0}, {59, 0, 0, 0}, {61, 0, 0, 1}, {3600*5 + 60*7, 0, 5, 7}, {86400*3 + 3600*4 + 59, 3, 4, 0}, {-5, 0, 0, 0}} {
		d, h, m := billRunwayParts(c.sec)
		if d != c.d || h != c.h || m != c.m {
			t.Errorf("billRunwayParts(%d) = %d d %d h %d m, want %d %d %d", c.sec, d, h, m, c.d, c.h, c.m)
		}
	}
	for sec, want := range map[int64]string{0: "0", 3600: "1", 5400: "1.50", 3636: "1.01", 7199: "1.99", 86400 * 5: "120"} {
		if got := billHours(sec); got != want {
			t.Errorf("billHours(%d) = %q, want %q", sec, got, want)
		}
	}
}
