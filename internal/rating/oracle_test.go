package rating_test

// The independent reference calculator. It shares no code with the engine:
// it classifies instants from time.Time fields in Asia/Shanghai, finds the
// version in force by a linear scan, and prices with math/big.Rat. Two
// oracles cut the session:
//
//   - second by second: every second of the session is classified on its
//     own (used on short sessions, up to 15 minutes, where it is cheap);
//   - candidate points: every local midnight and every rule clock time of
//     every local day the session touches, plus every version's effective
//     instant, are listed, sorted, and each piece between two neighbours is
//     classified at its first second (used on every session, including long
//     ones up to 45 days, where second by second would be too slow under
//     -race).
//
// Each oracle yields seconds per (version, window) and the instants where the
// rate or the statement month changes; the engine must agree on both: the
// exact rational amount, and the cut points, exactly.

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/rating"
)

type refVersion struct {
	eff    int64
	rule   rating.Rule
	prices rating.Prices
}

type session struct {
	start, end int64
	count      int
	academic   bool
	promo      int64
	contract   int64
	degraded   int64        // DegradedBps
	versions   []refVersion // in increasing eff order, versions[0].eff ≤ start
}

// refOffPeak classifies one local instant from its fields.
func refOffPeak(lt time.Time, r rating.Rule) bool {
	wd := lt.Weekday()
	if r.Weekends && (wd == time.Saturday || wd == time.Sunday) {
		return true
	}
	sec := lt.Hour()*3600 + lt.Minute()*60 + lt.Second()
	from, to := int(r.Start), int(r.End)
	switch {
	case from == to:
		return false
	case from < to:
		return sec >= from && sec < to
	default:
		return sec >= from || sec < to
	}
}

func refVersionAt(vs []refVersion, s int64) int {
	idx := -1
	for i, v := range vs {
		if v.eff <= s {
			idx = i
		}
	}
	return idx
}

type bucketKey struct {
	version int
	offPeak bool
}

type refClass struct {
	bucketKey
	month int // year*12 + month, local
}

func classify(loc *time.Location, vs []refVersion, s int64) refClass {
	vi := refVersionAt(vs, s)
	lt := time.Unix(s, 0).In(loc)
	return refClass{bucketKey{vi, refOffPeak(lt, vs[vi].rule)}, lt.Year()*12 + int(lt.Month())}
}

// refResult is what an oracle says about a session.
type refResult struct {
	seconds map[bucketKey]int64
	cuts    []int64 // instants inside (start, end) where the class changes
}

// bySecond is the second-by-second oracle.
func bySecond(loc *time.Location, ss session) refResult {
	res := refResult{seconds: map[bucketKey]int64{}}
	var prev refClass
	for s := ss.start; s < ss.end; s++ {
		c := classify(loc, ss.versions, s)
		res.seconds[c.bucketKey]++
		if s > ss.start && c != prev {
			res.cuts = append(res.cuts, s)
		}
		prev = c
	}
	return res
}

// byCandidates is the candidate-point oracle.
func byCandidates(loc *time.Location, ss session) refResult {
	pts := map[int64]bool{}
	first := time.Unix(ss.start, 0).In(loc)
	day := time.Date(first.Year(), first.Month(), first.Day()-1, 0, 0, 0, 0, loc)
	for ; day.Unix() <= ss.end; day = time.Date(day.Year(), day.Month(), day.Day()+1, 0, 0, 0, 0, loc) {
		pts[day.Unix()] = true
		for _, v := range ss.versions {
			for _, c := range []rating.ClockTime{v.rule.Start, v.rule.End} {
				p := time.Date(day.Year(), day.Month(), day.Day(), int(c)/3600, int(c)/60%60, int(c)%60, 0, loc)
				pts[p.Unix()] = true
			}
		}
	}
	for _, v := range ss.versions {
		pts[v.eff] = true
	}
	list := []int64{ss.start, ss.end}
	for p := range pts {
		if p > ss.start && p < ss.end {
			list = append(list, p)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i] < list[j] })
	res := refResult{seconds: map[bucketKey]int64{}}
	var prev refClass
	for i := 0; i+1 < len(list); i++ {
		c := classify(loc, ss.versions, list[i])
		res.seconds[c.bucketKey] += list[i+1] - list[i]
		if i > 0 && c != prev {
			res.cuts = append(res.cuts, list[i])
		}
		prev = c
	}
	return res
}

// refAmount prices an oracle's seconds with big.Rat, applying the 60-second
// minimum at the rate of the start.
func refAmount(loc *time.Location, ss session, secs map[bucketKey]int64) *big.Rat {
	if d := ss.end - ss.start; d > 0 && d < 60 {
		c := classify(loc, ss.versions, ss.start)
		secs = map[bucketKey]int64{c.bucketKey: 60}
	}
	total := new(big.Rat)
	for k, n := range secs {
		p := ss.versions[k.version].prices
		var rate, list, units int64
		switch {
		case ss.count == 0:
			rate, list, units = p.NoGPUFen, p.NoGPUFen, 1
		case k.offPeak:
			rate, list, units = p.OffPeakFen, p.OffPeakFen, int64(ss.count)
			if ss.academic {
				rate = p.AcademicOffPeakFen
			}
		default:
			rate, list, units = p.PeakFen, p.PeakFen, int64(ss.count)
			if ss.academic {
				rate = p.AcademicPeakFen
			}
		}
		// A degraded listing scales the GPU prices (list and academic),
		// so the floor too; the no-GPU price is never scaled.
		share := big.NewRat(10000-ss.degraded, 10000)
		if ss.count == 0 {
			share = big.NewRat(1, 1)
		}
		perHour := new(big.Rat).SetInt64(rate)
		perHour.Mul(perHour, share)
		perHour.Mul(perHour, big.NewRat(10000-ss.promo, 10000))
		perHour.Mul(perHour, big.NewRat(10000-ss.contract, 10000))
		if half := new(big.Rat).Mul(big.NewRat(list, 2), share); perHour.Cmp(half) < 0 {
			perHour = half
		}
		amt := new(big.Rat).Mul(perHour, big.NewRat(n*units, 3600))
		total.Add(total, amt)
	}
	return total
}

func randPrices(r *rand.Rand) rating.Prices {
	peak := r.Int64N(100_001)
	off := r.Int64N(peak + 1)
	if r.IntN(3) == 0 {
		off = (peak*70 + 99) / 100
	}
	return rating.Prices{
		PeakFen: peak, OffPeakFen: off,
		AcademicPeakFen: r.Int64N(peak + 1), AcademicOffPeakFen: r.Int64N(off + 1),
		NoGPUFen: r.Int64N(1001),
	}
}

func randRule(r *rand.Rand) rating.Rule {
	if r.IntN(10) < 7 {
		return rating.DefaultRule()
	}
	clock := func() rating.ClockTime {
		if r.IntN(3) == 0 {
			return rating.ClockTime(r.IntN(86400))
		}
		return rating.ClockTime(r.IntN(1440) * 60)
	}
	rule := rating.Rule{Start: clock(), End: clock(), Weekends: r.IntN(2) == 0}
	if r.IntN(20) == 0 {
		rule.End = rule.Start // no daily window
	}
	return rule
}

// randStart picks a start instant, often within spread seconds of an
// interesting boundary: 22:00, 08:00, midnight, a month end, the leap day
// 2028-02-29, a weekend.
func randStart(r *rand.Rand, loc *time.Location, spread int64) int64 {
	lo := time.Date(2024, 1, 1, 0, 0, 0, 0, loc).Unix()
	hi := time.Date(2031, 1, 1, 0, 0, 0, 0, loc).Unix()
	if r.IntN(10) < 4 {
		return lo + r.Int64N(hi-lo)
	}
	d := time.Unix(lo+r.Int64N(hi-lo), 0).In(loc)
	y, m, day := d.Date()
	var base time.Time
	switch r.IntN(7) {
	case 0:
		base = time.Date(y, m, day, 22, 0, 0, 0, loc)
	case 1:
		base = time.Date(y, m, day, 8, 0, 0, 0, loc)
	case 2:
		base = time.Date(y, m, day, 0, 0, 0, 0, loc)
	case 3:
		base = time.Date(y, m+1, 1, 0, 0, 0, 0, loc) // a month end
	case 4:
		base = time.Date(2028, 2, 29+r.IntN(2), 0, 0, 0, 0, loc) // leap day, 1 March 2028
	case 5:
		base = time.Date(y, m, day+int(time.Saturday-d.Weekday()), 0, 0, 0, 0, loc) // Friday → Saturday
	default:
		base = time.Date(y, m, day+int(8-d.Weekday())%7, 0, 0, 0, 0, loc) // Sunday → Monday
	}
	return base.Unix() + r.Int64N(2*spread+1) - spread
}

func randSession(r *rand.Rand, loc *time.Location, long bool) session {
	spread := int64(shortSession)
	if long {
		spread = 86400
	}
	ss := session{start: randStart(r, loc, spread), count: r.IntN(9), academic: r.IntN(2) == 0}
	switch {
	case long:
		ss.end = ss.start + r.Int64N(45*86400+1)
	case r.IntN(10) == 0:
		ss.end = ss.start + r.Int64N(60) // the minimum applies
	default:
		ss.end = ss.start + r.Int64N(shortSession+1)
	}
	if r.IntN(2) == 0 {
		ss.promo = r.Int64N(10001)
	}
	if r.IntN(2) == 0 {
		ss.contract = r.Int64N(10001)
	}
	switch r.IntN(4) {
	case 0: // a listing's share, as metering makes it
		ss.degraded = rating.DegradedBpsOf(1 + r.IntN(999))
	case 1: // any basis points
		ss.degraded = r.Int64N(10001)
	}
	ss.versions = []refVersion{{eff: ss.start - r.Int64N(30*86400), rule: randRule(r), prices: randPrices(r)}}
	effs := map[int64]bool{ss.versions[0].eff: true}
	for n := r.IntN(4); n > 0; n-- {
		e := ss.start + r.Int64N(ss.end-ss.start+3601)
		if effs[e] {
			continue
		}
		effs[e] = true
		ss.versions = append(ss.versions, refVersion{eff: e, rule: randRule(r), prices: randPrices(r)})
	}
	sort.Slice(ss.versions, func(i, j int) bool { return ss.versions[i].eff < ss.versions[j].eff })
	return ss
}

func (ss session) book(t testing.TB, loc *time.Location) *rating.Book {
	vs := make([]rating.Version, len(ss.versions))
	for i, v := range ss.versions {
		vs[i] = rating.Version{Effective: time.Unix(v.eff, 0), Rule: v.rule, Types: map[string]rating.Prices{"t": v.prices}}
	}
	b, err := rating.NewBook(loc, vs...)
	if err != nil {
		t.Fatalf("book: %v", err)
	}
	return b
}

// TestAgainstReference checks the engine against the independent oracles on
// 100,000 random sessions (80,000 of up to 15 minutes against both oracles,
// 20,000 of up to 45 days against the candidate-point oracle, and against
// both when short): the exact rational amount, the rounded amount, and the
// cut points must all agree. Seeds are fixed, so a failure reproduces; the
// fuzzers explore further. Four parallel chunks keep it near 12 s under
// -race on two cores.
func TestAgainstReference(t *testing.T) {
	loc := shanghai(t)
	const sessions, chunks, longEvery = 100_000, 4, 5
	for c := 0; c < chunks; c++ {
		t.Run(fmt.Sprintf("chunk%d", c), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(20250303, uint64(c)))
			for i := 0; i < sessions/chunks; i++ {
				checkSession(t, loc, randSession(r, loc, i%longEvery == 0), fmt.Sprintf("chunk %d session %d", c, i))
			}
		})
	}
}

// checkSession rates one session with the engine and compares it with the
// oracles (both for a short session, candidate points only for a long one).
func checkSession(t *testing.T, loc *time.Location, ss session, name string) {
	t.Helper()
	b := ss.book(t, loc)
	start, end := time.Unix(ss.start, 0), time.Unix(ss.end, 0)
	segs, err := rating.SplitRun(b, "t", start, end)
	if err != nil {
		t.Fatalf("%s %+v: split: %v", name, ss, err)
	}
	terms := rating.Terms{Plan: gpurent.PlanHourly, GPUCount: ss.count, Academic: ss.academic,
		PromotionBps: ss.promo, ContractBps: ss.contract, DegradedBps: ss.degraded}
	lines, err := rating.Rate(segs, terms)
	if err != nil {
		t.Fatalf("%s %+v: rate: %v", name, ss, err)
	}
	got := mustTotal(t, lines)

	oracles := []refResult{byCandidates(loc, ss)}
	if ss.end-ss.start <= shortSession {
		oracles = append(oracles, bySecond(loc, ss))
	}
	for k, o := range oracles {
		want := refAmount(loc, ss, o.seconds)
		if !ratEq(got.Rat(), want) {
			t.Fatalf("%s (oracle %d) %+v: engine %s fen, reference %s fen", name, k, ss, got, want.RatString())
		}
		if got.RoundHalfUp() != roundHalfUpRat(want) {
			t.Fatalf("%s: rounded %d, reference %d", name, got.RoundHalfUp(), roundHalfUpRat(want))
		}
		if d := ss.end - ss.start; d > 0 && d < 60 {
			continue // one uncut segment by design; see SplitRun
		}
		var cuts []int64
		for j := 1; j < len(segs); j++ {
			cuts = append(cuts, segs[j].Start.Unix())
		}
		if !equalCuts(cuts, o.cuts) {
			t.Fatalf("%s (oracle %d) %+v: engine cuts %v, reference cuts %v", name, k, ss, cuts, o.cuts)
		}
	}
}

// shortSession is the longest session checked second by second.
const shortSession = 900

func equalCuts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
