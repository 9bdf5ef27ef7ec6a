package rating_test

import (
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rating"
)

// checkSegments asserts the segment invariants: in order, no overlap, no gap,
// covering [start, end) exactly; each segment inside one window, one version
// and one month; and each cut between two segments at a real boundary (the
// window, version or month differs across it).
func checkSegments(t *testing.T, b *rating.Book, segs []rating.Segment, start, end time.Time) {
	t.Helper()
	if start.Equal(end) {
		if len(segs) != 0 {
			t.Fatalf("empty interval gave %d segments", len(segs))
		}
		return
	}
	if len(segs) == 0 || !segs[0].Start.Equal(start) || !segs[len(segs)-1].End.Equal(end) {
		t.Fatalf("segments do not cover [%s, %s): %+v", start, end, segs)
	}
	loc := b.Location()
	vs := b.Versions()
	versionAt := func(t time.Time) rating.Version {
		var v rating.Version
		for _, x := range vs {
			if !x.Effective.After(t) {
				v = x
			}
		}
		return v
	}
	month := func(t time.Time) (int, time.Month) {
		lt := t.In(loc)
		return lt.Year(), lt.Month()
	}
	for i, s := range segs {
		if !s.Start.Before(s.End) {
			t.Fatalf("segment %d is empty or reversed: %+v", i, s)
		}
		if i > 0 && !segs[i-1].End.Equal(s.Start) {
			t.Fatalf("gap or overlap between segments %d and %d: %s vs %s", i-1, i, segs[i-1].End, s.Start)
		}
		last := s.End.Add(-time.Second)
		v := versionAt(s.Start)
		if versionAt(last).ID != v.ID || v.ID != s.VersionID {
			t.Fatalf("segment %d %+v spans versions", i, s)
		}
		// Every second of the segment is in its window: the state can only
		// change at a local midnight or a rule clock time, so checking the
		// start and each such point inside the segment checks every second.
		if v.Rule.OffPeakAt(s.Start, loc) != s.OffPeak {
			t.Fatalf("segment %d %+v: its start has another window", i, s)
		}
		ls := s.Start.In(loc)
		for d := time.Date(ls.Year(), ls.Month(), ls.Day(), 0, 0, 0, 0, loc); d.Before(s.End); d = d.AddDate(0, 0, 1) {
			for _, c := range []rating.ClockTime{0, v.Rule.Start, v.Rule.End} {
				p := d.Add(time.Duration(c) * time.Second) // no DST in Shanghai since 1991
				if p.After(s.Start) && p.Before(s.End) && v.Rule.OffPeakAt(p, loc) != s.OffPeak {
					t.Fatalf("segment %d %+v: %s has another window", i, s, p)
				}
			}
		}
		if v.Rule.OffPeakAt(last, loc) != s.OffPeak {
			t.Fatalf("segment %d %+v: its last second has another window", i, s)
		}
		y, m := month(s.Start)
		if y2, m2 := month(last); y2 != y || m2 != m {
			t.Fatalf("segment %d %+v crosses a month boundary", i, s)
		}
		if !s.Period.Equal(time.Date(y, m, 1, 0, 0, 0, 0, loc)) {
			t.Fatalf("segment %d period %s, want the start of %d-%02d", i, s.Period, y, m)
		}
		if p := v.Types["t"]; s.ListFen != p.Hourly(s.OffPeak, false) || s.AcademicFen != p.Hourly(s.OffPeak, true) || s.NoGPUFen != p.NoGPUFen {
			t.Fatalf("segment %d %+v carries rates other than its version's %+v", i, s, p)
		}
		if i > 0 {
			prev := segs[i-1]
			y0, m0 := month(prev.Start)
			if prev.OffPeak == s.OffPeak && prev.VersionID == s.VersionID && y0 == y && m0 == m {
				t.Fatalf("needless cut at %s between %+v and %+v", s.Start, prev, s)
			}
		}
	}
}

// TestSegmentInvariants checks the invariants on random intervals of up to
// 70 days over books with price changes.
func TestSegmentInvariants(t *testing.T) {
	loc := shanghai(t)
	r := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 2000; i++ {
		ss := randSession(r, loc, true)
		ss.end = ss.start + r.Int64N(70*86400)
		b := ss.book(t, loc)
		start, end := time.Unix(ss.start, 0).UTC(), time.Unix(ss.end, 0).UTC()
		segs, err := rating.Split(b, "t", start, end)
		if err != nil {
			t.Fatal(err)
		}
		checkSegments(t, b, segs, start, end)
	}
}

// TestSplitAdditive: rating [a, m) and [m, b) separately gives exactly the
// amount of [a, b), for any m; and proration never exceeds the whole: no
// sub-interval costs more than the interval, nor than its seconds at the
// highest list price.
func TestSplitAdditive(t *testing.T) {
	loc := shanghai(t)
	r := rand.New(rand.NewPCG(8, 8))
	for i := 0; i < 3000; i++ {
		ss := randSession(r, loc, true)
		b := ss.book(t, loc)
		a, z := time.Unix(ss.start, 0), time.Unix(ss.end, 0)
		m := time.Unix(ss.start+r.Int64N(ss.end-ss.start+1), 0)
		terms := rating.Terms{Plan: gpurent.PlanHourly, GPUCount: ss.count, Academic: ss.academic,
			PromotionBps: ss.promo, ContractBps: ss.contract, DegradedBps: ss.degraded}
		whole := mustTotal(t, mustRate(t, mustSplit(t, b, a, z), terms))
		left := mustTotal(t, mustRate(t, mustSplit(t, b, a, m), terms))
		right := mustTotal(t, mustRate(t, mustSplit(t, b, m, z), terms))
		sum, err := left.Add(right)
		if err != nil {
			t.Fatal(err)
		}
		if sum != whole {
			t.Fatalf("%+v split at %s: %s + %s ≠ %s", ss, m, left, right, whole)
		}
		if left.Cmp(whole) > 0 || right.Cmp(whole) > 0 {
			t.Fatalf("a part costs more than the whole: %s, %s > %s", left, right, whole)
		}
		var maxList int64
		for _, v := range ss.versions {
			maxList = max(maxList, v.prices.PeakFen, v.prices.NoGPUFen)
		}
		units := int64(max(ss.count, 1))
		full := big.NewRat((ss.end-ss.start)*units*maxList, 3600)
		if whole.Rat().Cmp(full) > 0 {
			t.Fatalf("%+v: %s exceeds the full price %s", ss, whole, full.RatString())
		}
	}
}

// TestZeroLength: an empty interval has no segments and costs 0; so does a
// zero-length segment and a zero-length run.
func TestZeroLength(t *testing.T) {
	loc := shanghai(t)
	b := oneTypeBook(t, flatPrices(521, 365))
	x := at(loc, 2025, time.March, 5, 21, 59, 59)
	for _, split := range []func(*rating.Book, string, time.Time, time.Time) ([]rating.Segment, error){rating.Split, rating.SplitRun} {
		segs, err := split(b, "t", x, x)
		if err != nil || len(segs) != 0 {
			t.Fatalf("empty interval: %v, %+v", err, segs)
		}
	}
	lines := mustRate(t, []rating.Segment{{Start: x, End: x, ListFen: 521, AcademicFen: 417}}, hourly(8))
	if !lines[0].Exact.IsZero() || lines[0].Fen() != 0 {
		t.Fatalf("zero-length segment costs %s", lines[0].Exact)
	}
	q, err := rating.Quote(b, "t", 8, x, 0, false)
	if err != nil || q.HourlyFen != 0 || len(q.Lines) != 0 {
		t.Fatalf("zero-length quote: %v %+v", err, q)
	}
}

// TestDiscountFloor: discounts apply in order and never take a line below
// 50% of its list price; the exact amount always lies between the floor and
// the undiscounted price.
func TestDiscountFloor(t *testing.T) {
	loc := shanghai(t)
	x := at(loc, 2025, time.March, 5, 10, 0, 0)
	seg := rating.Segment{Start: x, End: x.Add(3600 * time.Second), ListFen: 1000, AcademicFen: 800, NoGPUFen: 10}
	cases := []struct {
		name            string
		academic        bool
		promo, contract int64
		wantFen         int64
		floored         bool
	}{
		{"list", false, 0, 0, 1000, false},
		{"academic", true, 0, 0, 800, false},
		{"academic then 20% promo", true, 2000, 0, 640, false},
		// 800 × 0.8 × 0.8 = 512 ≥ 500.
		{"academic, promo, contract", true, 2000, 2000, 512, false},
		// 800 × 0.7 × 0.8 = 448 < 500: floored at 50% of the list 1000.
		{"stacked below the floor", true, 3000, 2000, 500, true},
		{"100% promotion", false, 10000, 0, 500, true},
		// 1000 × 0.5 exactly is the floor, not below it.
		{"exactly half", false, 5000, 0, 500, false},
	}
	for _, c := range cases {
		l, err := rating.Rate([]rating.Segment{seg}, rating.Terms{Plan: gpurent.PlanHourly, GPUCount: 1,
			Academic: c.academic, PromotionBps: c.promo, ContractBps: c.contract})
		if err != nil {
			t.Fatal(err)
		}
		if l[0].Fen() != c.wantFen || l[0].Floored != c.floored {
			t.Errorf("%s: %d fen (floored %v), want %d (floored %v)", c.name, l[0].Fen(), l[0].Floored, c.wantFen, c.floored)
		}
	}
	r := rand.New(rand.NewPCG(9, 9))
	for i := 0; i < 20000; i++ {
		list := r.Int64N(rating.MaxRateFen + 1)
		s := rating.Segment{Start: x, End: x.Add(time.Duration(r.Int64N(40*86400)) * time.Second),
			ListFen: list, AcademicFen: r.Int64N(list + 1)}
		terms := rating.Terms{Plan: gpurent.PlanHourly, GPUCount: 1 + r.IntN(rating.MaxGPUCount), Academic: r.IntN(2) == 0,
			PromotionBps: r.Int64N(rating.MaxBps + 1), ContractBps: r.Int64N(rating.MaxBps + 1)}
		l, err := rating.Rate([]rating.Segment{s}, terms)
		if err != nil {
			t.Fatal(err)
		}
		n := l[0].Seconds * int64(terms.GPUCount)
		floor := new(big.Rat).Mul(big.NewRat(list, 2), big.NewRat(n, 3600))
		top := big.NewRat(n*list, 3600)
		if got := l[0].Exact.Rat(); got.Cmp(floor) < 0 || got.Cmp(top) > 0 {
			t.Fatalf("%+v %+v: %s outside [%s, %s]", s, terms, got.RatString(), floor.RatString(), top.RatString())
		}
	}
}

// TestRoundHalfUpOncePerLine: a line is rounded once, half up, from its
// exact amount; at 1 fen/h, 1,799 s is 0.4997 fen → 0, 1,800 s is exactly
// half → 1, and 5,400 s is 1.5 → 2.
func TestRoundHalfUpOncePerLine(t *testing.T) {
	loc := shanghai(t)
	x := at(loc, 2025, time.March, 5, 10, 0, 0)
	for _, c := range []struct{ secs, want int64 }{{0, 0}, {1, 0}, {1799, 0}, {1800, 1}, {1801, 1}, {5399, 1}, {5400, 2}, {3600, 1}} {
		l := mustRate(t, []rating.Segment{{Start: x, End: x.Add(time.Duration(c.secs) * time.Second), ListFen: 1, AcademicFen: 1}}, hourly(1))
		if l[0].Fen() != c.want {
			t.Errorf("%d s at 1 fen/h: %d fen, want %d", c.secs, l[0].Fen(), c.want)
		}
	}
	r := rand.New(rand.NewPCG(10, 10))
	for i := 0; i < 20000; i++ {
		s := rating.Segment{Start: x, End: x.Add(time.Duration(r.Int64N(100000)) * time.Second),
			ListFen: r.Int64N(100000), AcademicFen: 0}
		s.AcademicFen = s.ListFen
		l := mustRate(t, []rating.Segment{s}, rating.Terms{Plan: gpurent.PlanHourly, GPUCount: r.IntN(9),
			PromotionBps: r.Int64N(5001), ContractBps: r.Int64N(5001)})
		want := roundHalfUpRat(l[0].Exact.Rat())
		if l[0].Fen() != want {
			t.Fatalf("%s rounds to %d, want %d", l[0].Exact, l[0].Fen(), want)
		}
		if f := l[0].Exact.Floor(); f > l[0].Fen() || l[0].Fen()-f > 1 {
			t.Fatalf("floor %d vs rounded %d", f, l[0].Fen())
		}
	}
}

// TestLiveDebits: debiting floor(exact so far) − debited at random moments
// (at most 60 s apart) and the half-up remainder at the close sums to the
// rounded line, and the customer never owes 1 fen or more right after a
// debit.
func TestLiveDebits(t *testing.T) {
	loc := shanghai(t)
	r := rand.New(rand.NewPCG(11, 11))
	for i := 0; i < 300; i++ {
		ss := randSession(r, loc, false)
		ss.end = ss.start + 60 + r.Int64N(4*3600)
		b := ss.book(t, loc)
		terms := rating.Terms{Plan: gpurent.PlanHourly, GPUCount: ss.count, Academic: ss.academic,
			PromotionBps: ss.promo, ContractBps: ss.contract, DegradedBps: ss.degraded}
		start := time.Unix(ss.start, 0)
		var debited int64
		for now := ss.start; now < ss.end; now += 1 + r.Int64N(60) {
			soFar := mustTotal(t, mustRate(t, mustSplit(t, b, start, time.Unix(now, 0)), terms))
			d := rating.DebitSoFar(soFar, debited)
			if d < 0 {
				t.Fatalf("negative live debit %d", d)
			}
			debited += d
			owed := new(big.Rat).Sub(soFar.Rat(), big.NewRat(debited, 1))
			if owed.Sign() < 0 || owed.Cmp(big.NewRat(1, 1)) >= 0 {
				t.Fatalf("after a live debit the customer owes %s fen", owed.RatString())
			}
		}
		final := mustTotal(t, mustRate(t, mustSplit(t, b, start, time.Unix(ss.end, 0)), terms))
		if r.IntN(2) == 0 {
			// A live debit at the close leaves at most the half-up fen.
			debited += rating.DebitSoFar(final, debited)
			if last := rating.FinalDebit(final, debited); last < 0 || last > 1 {
				t.Fatalf("final debit %d after a live debit at the close, want 0 or 1", last)
			}
		}
		last := rating.FinalDebit(final, debited)
		if last < 0 {
			t.Fatalf("negative final debit %d", last)
		}
		if debited+last != final.RoundHalfUp() {
			t.Fatalf("debits sum to %d, rounded line is %d", debited+last, final.RoundHalfUp())
		}
	}
}

// TestMinimumRun: a power-on shorter than 60 s bills 60 s at the rate of its
// start, even across a boundary; 60 s or more bills exactly.
func TestMinimumRun(t *testing.T) {
	loc := shanghai(t)
	b := oneTypeBook(t, flatPrices(3600, 1800)) // 1 fen/s peak, 0.5 fen/s off-peak
	start := at(loc, 2025, time.March, 5, 21, 59, 50)
	for _, c := range []struct {
		secs int64
		want string // exact fen
	}{
		{1, "60"},  // 60 s at peak
		{30, "60"}, // crosses 22:00 but billed 60 s at peak (the start's rate)
		{59, "60"}, //
		{60, "35"}, // 10 s peak + 50 s off-peak = 10 + 25
		{70, "40"}, // 10 + 30
		{0, "0"},   // no run, no charge
	} {
		segs, err := rating.SplitRun(b, "t", start, start.Add(time.Duration(c.secs)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := mustTotal(t, mustRate(t, segs, hourly(1)))
		if got.String() != c.want {
			t.Errorf("run of %d s: %s fen, want %s", c.secs, got, c.want)
		}
		if c.secs > 0 && c.secs < 60 {
			if len(segs) != 1 || segs[0].BilledSeconds() != 60 || segs[0].OffPeak || !segs[0].End.Equal(start.Add(time.Duration(c.secs)*time.Second)) {
				t.Errorf("short run segments %+v", segs)
			}
		}
	}
}

// TestPriceChangeNotRetroactive: a version takes effect at its instant, and
// usage before it keeps the old price; Amend refuses a change effective in
// the past.
func TestPriceChangeNotRetroactive(t *testing.T) {
	loc := shanghai(t)
	b := oneTypeBook(t, flatPrices(3600, 3600))
	now := at(loc, 2025, time.March, 5, 10, 0, 0)
	change := now.Add(30 * time.Minute)
	if _, err := b.Amend(rating.Version{ID: "v2", Effective: now.Add(-time.Second), Rule: rating.DefaultRule(),
		Types: map[string]rating.Prices{"t": flatPrices(7200, 7200)}}, now); !gpurent.IsCode(err, gpurent.CodeInvalid) {
		t.Fatalf("retroactive change: %v, want invalid", err)
	}
	b2, err := b.Amend(rating.Version{ID: "v2", Effective: change, Rule: rating.DefaultRule(),
		Types: map[string]rating.Prices{"t": flatPrices(7200, 7200)}}, now)
	if err != nil {
		t.Fatal(err)
	}
	segs := mustSplit(t, b2, now, now.Add(time.Hour))
	if len(segs) != 2 || !segs[1].Start.Equal(change) || segs[0].VersionID != "v1" || segs[1].VersionID != "v2" {
		t.Fatalf("segments %+v, want a cut at the change", segs)
	}
	// 1,800 s × 1 fen/s + 1,800 s × 2 fen/s.
	if got := mustTotal(t, mustRate(t, segs, hourly(1))); got.String() != "5400" {
		t.Fatalf("total %s, want 5400", got)
	}
	// The original book is unchanged.
	if got := mustTotal(t, mustRate(t, mustSplit(t, b, now, now.Add(time.Hour)), hourly(1))); got.String() != "3600" {
		t.Fatalf("old book total %s, want 3600", got)
	}
}

// TestMonthAndLeapDay: periods are calendar months in Asia/Shanghai (not
// UTC), including February 2028's leap day.
func TestMonthAndLeapDay(t *testing.T) {
	loc := shanghai(t)
	b := oneTypeBook(t, flatPrices(100, 100))
	start := at(loc, 2028, time.February, 28, 12, 0, 0)
	end := at(loc, 2028, time.March, 1, 12, 0, 0)
	segs := mustSplit(t, b, start, end)
	var cutAtMarch bool
	for _, s := range segs {
		if s.Start.Equal(at(loc, 2028, time.March, 1, 0, 0, 0)) {
			cutAtMarch = true
			if !s.Period.Equal(at(loc, 2028, time.March, 1, 0, 0, 0)) {
				t.Errorf("March segment period %s", s.Period)
			}
		} else if s.Start.Before(at(loc, 2028, time.March, 1, 0, 0, 0)) && !s.Period.Equal(at(loc, 2028, time.February, 1, 0, 0, 0)) {
			t.Errorf("February segment %+v has period %s", s, s.Period)
		}
	}
	if !cutAtMarch {
		t.Fatalf("no cut at 2028-03-01 00:00 Shanghai: %+v", segs)
	}
	// 48 h × 100 fen: the leap day is billed in full.
	if got := mustTotal(t, mustRate(t, segs, hourly(1))); got.String() != "4800" {
		t.Fatalf("total %s, want 4800", got)
	}
}
