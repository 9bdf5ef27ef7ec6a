package web

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
		problem BillAmountProblem
	}{
		{"100", false, 1, 10000, BillOK},
		{"99.5", false, 1, 9950, BillOK},
		{"99.05", false, 1, 9905, BillOK},
		{"0.01", false, 1, 1, BillOK},
		{".5", false, 1, 50, BillOK},
		{" ¥1,234.50 ", false, 1, 123450, BillOK},
		{"￥20", false, 1, 2000, BillOK},
		{"007", false, 1, 700, BillOK},
		{"0", true, 1, 0, BillOK},
		{"0.00", true, 1, 0, BillOK},
		{"0", false, 1, 0, BillNotAbove},
		{"-5", false, 1, 0, BillNegative},
		{"-5", true, 1, 0, BillNegative},
		{"1.234", false, 1, 0, BillDecimals},
		{"0.001", true, 1, 0, BillDecimals},
		{"", true, 1, 0, BillNotMoney},
		{"abc", false, 1, 0, BillNotMoney},
		{"1e3", false, 1, 0, BillNotMoney},
		{"12.", false, 1, 0, BillNotMoney},
		{".", false, 1, 0, BillNotMoney},
		{"1.2.3", false, 1, 0, BillNotMoney},
		{"+5", false, 1, 0, BillNotMoney},
		{"５", false, 1, 0, BillNotMoney}, // full-width digit
		{"0.99", false, 100, 0, BillTooSmall},
		{"1", false, 100, 100, BillOK},
		{"100000000", false, 1, max, BillOK},
		{"100000000.01", false, 1, 0, BillTooLarge},
		{"99999999999999999999999", false, 1, 0, BillTooLarge},
	} {
		fen, problem := BillParseYuan(c.in, c.zeroOK, c.min, max)
		if fen != c.fen || problem != c.problem {
			t.Errorf("BillParseYuan(%q, zeroOK=%v, min=%d) = %d, %q; want %d, %q", c.in, c.zeroOK, c.min, fen, problem, c.fen, c.problem)
		}
	}
}

// TestBillYuanValueRoundTrip: what the form shows reads back as the same
// fen.
func TestBillYuanValueRoundTrip(t *testing.T) {
	for _, fen := range []int64{0, 1, 9, 10, 99, 100, 12345, 1_000_000_00} {
		v := BillYuanValue(fen)
		got, problem := BillParseYuan(v, true, 1, 1<<40)
		if problem != BillOK || got != fen {
			t.Errorf("BillYuanValue(%d) = %q reads back as %d, %q", fen, v, got, problem)
		}
	}
	if v := BillYuanValue(-150); v != "-1.50" {
		t.Errorf("BillYuanValue(-150) = %q", v)
	}
}

func TestBillMonths(t *testing.T) {
	loc := time.FixedZone("CST", 8*3600)
	created := time.Date(2026, 9, 30, 17, 0, 0, 0, time.UTC) // 1 October in Beijing
	now := time.Date(2026, 12, 31, 16, 30, 0, 0, time.UTC)   // 1 January in Beijing
	got := BillMonths(created, now, loc, 36)
	if want := []string{"2027-01", "2026-12", "2026-11", "2026-10"}; !slices.Equal(got, want) {
		t.Fatalf("months %v, want %v", got, want)
	}
	if got := BillMonths(created, now, loc, 2); !slices.Equal(got, []string{"2027-01", "2026-12"}) {
		t.Fatalf("at most 2: %v", got)
	}
	if got := BillMonths(now, now, loc, 36); !slices.Equal(got, []string{"2027-01"}) {
		t.Fatalf("a new account: %v", got)
	}
}

func TestBillRunwayParts(t *testing.T) {
	for _, c := range []struct {
		sec     int64
		d, h, m int64
	}{{0, 0, 0, 0}, {59, 0, 0, 0}, {61, 0, 0, 1}, {3600*5 + 60*7, 0, 5, 7}, {86400*3 + 3600*4 + 59, 3, 4, 0}, {-5, 0, 0, 0}} {
		d, h, m := BillRunwayParts(c.sec)
		if d != c.d || h != c.h || m != c.m {
			t.Errorf("BillRunwayParts(%d) = %d d %d h %d m, want %d %d %d", c.sec, d, h, m, c.d, c.h, c.m)
		}
	}
}
