package ledger

import (
	"math"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
)

func TestBurnRate(t *testing.T) {
	tests := []struct {
		name  string
		rates []Rate
		want  Rate
	}{
		{"none", nil, Rate{0, time.Second}},
		{"one GPU", []Rate{PerHour(521)}, Rate{521, time.Hour}},
		{"two GPUs and a volume", []Rate{PerHour(521), PerHour(521), PerDay(30)},
			Rate{1391, 80 * time.Minute}}, // (521*2*24 + 30) / 86400 s, reduced by 18
		{"reduced", []Rate{PerHour(1800), PerHour(1800)}, Rate{1, time.Second}},
		{"zero rates", []Rate{PerHour(0), PerDay(0)}, Rate{0, time.Second}},
		{"per minute and per hour", []Rate{{10, time.Minute}, PerHour(5)}, Rate{121, 12 * time.Minute}}, // 605 / 3600 s, reduced by 5
	}
	for _, tc := range tests {
		got, err := BurnRate(tc.rates...)
		if err != nil || got != tc.want {
			t.Errorf("%s: %v %v, want %v", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range [][]Rate{
		{{-1, time.Hour}},
		{{1, 0}},
		{{1, 1500 * time.Millisecond}},
		{{math.MaxInt64, time.Hour}, {math.MaxInt64, time.Hour}},
	} {
		if _, err := BurnRate(bad...); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("BurnRate(%v): %v, want invalid", bad, err)
		}
	}
}

func TestRunway(t *testing.T) {
	tests := []struct {
		name      string
		spendable int64
		rate      Rate
		want      int64
	}{
		{"an hour at 521 fen/h", 521, PerHour(521), 3600},
		{"floors", 520, PerHour(521), 3593}, // 520*3600/521 = 3593.09
		{"one fen", 1, PerHour(521), 6},
		{"nothing left", 0, PerHour(521), 0},
		{"in debt", -5, PerHour(521), 0},
		{"no burn", 100, Rate{0, time.Second}, NoLimit},
		{"bad rate", 100, Rate{5, 0}, 0},
		{"no overflow", math.MaxInt64, PerDay(1), NoLimit},
		{"big exact", 1 << 50, PerHour(3600), 1 << 50},
	}
	for _, tc := range tests {
		if got := Runway(tc.spendable, tc.rate); got != tc.want {
			t.Errorf("%s: Runway(%d, %v) = %d, want %d", tc.name, tc.spendable, tc.rate, got, tc.want)
		}
	}
	// Through a wallet: cash plus live credit only.
	l := New()
	mustPost(t, l, topUp("topup:1", cust, 521, at(0)))
	mustPost(t, l, grant("promo:1", cust, KindPromo, 521, at(0), at(2)))
	rate, err := BurnRate(PerHour(521))
	if err != nil {
		t.Fatal(err)
	}
	w := l.Wallet(cust)
	if got := w.Runway(at(1), rate); got != 7200 {
		t.Errorf("runway with credit %d, want 7200", got)
	}
	if got := w.Runway(at(2), rate); got != 3600 {
		t.Errorf("runway after credit expired %d, want 3600", got)
	}
}
