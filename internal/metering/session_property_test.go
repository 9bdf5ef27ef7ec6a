package metering_test

// Property tests of the billing invariants over random sessions, end to end
// on a real store (SQLite and PostgreSQL).
//
// A generator plans, from a seed, customers (some academic, some with too
// little money), instances, and for each instance a sequence of power-ons
// and power-offs placed near the instants where prices change: the off-peak
// edges of every price version (22:00 and 08:00 Asia/Shanghai by default),
// every local midnight (so Friday/Monday midnight, the month end and the leap
// day 2028-02-29), the effective instants of the price versions; runs
// shorter than 60 s and runs of zero length; upgrades (the instance moves to
// a new allocation with another GPU count, or another GPU type, between runs
// or at the very instant a run ends). Price versions are added through the
// billing service as an operator would: each before it takes effect.
//
// The plan is then played on the clock: agents deliver the run events
// through metering's real Ingest, late, split across reports, shuffled,
// duplicated, replayed and with lost acknowledgements, with the running
// instances listed; billing passes (Bill) run at random instants, sometimes
// two at once, and at the end.
//
// An independent reference calculator prices every run second by second
// (the version in force and the window of each second, taken from the
// seconds' local time fields; the 60-second minimum at the rate of the run's
// start; one half-up rounding per run) and the test checks, to the fen: each
// run's debits, each customer's total charged, revenue (charges less what
// the wallets could not cover), the ledger (every transaction and the whole
// book sum to zero, cash never negative, a replay of the requests from an
// empty ledger gives the same postings and balances), and the monthly
// statements (line by line, totals the sum of the lines, unchanged once
// final).
//
// GPURENT_SESSION_SEED=<n> replays another seed.

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/ledger"
	"github.com/gpurent/gpurent/internal/metering"
	"github.com/gpurent/gpurent/internal/pricing"
	"github.com/gpurent/gpurent/internal/rating"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// sessionCase sizes one property run.
type sessionCase struct {
	seed      uint64
	from, to  time.Time // usage lies in [from, to)
	customers int
	instances int
	versions  int  // price versions besides the first
	crossType bool // upgrades may move an instance onto GPUs of another type
}

type sessionStore struct {
	name string
	open func(testing.TB) gpurent.Store
}

func sessionStores() []sessionStore {
	return []sessionStore{{"sqlite", storetest.SQLite}, {"postgres", storetest.Postgres}}
}

// TestSessionProperties: random sessions in which upgrades change the GPU
// count; every invariant, to the fen, on both stores.
func TestSessionProperties(t *testing.T) {
	loc := billingZone(t)
	c := sessionCase{
		seed: sessionSeed(t, 20280229),
		// Thursday 2028-02-24 to Monday 2028-03-06, across the leap day,
		// the month end and two weekends.
		from: time.Date(2028, 2, 24, 0, 0, 0, 0, loc), to: time.Date(2028, 3, 6, 12, 0, 0, 0, loc),
		customers: 8, instances: 28, versions: 12,
	}
	for _, b := range sessionStores() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			playSessions(t, b.open(t), sized(c, b.name))
		})
	}
}

// TestSessionPropertiesAcrossTypes: the same, with upgrades that move an
// instance onto GPUs of another type. A run is priced at the type of the
// GPUs it ran on.
func TestSessionPropertiesAcrossTypes(t *testing.T) {
	loc := billingZone(t)
	c := sessionCase{
		seed: sessionSeed(t, 4090),
		// Monday 2026-12-28 across the year's end to Sunday 2027-01-03.
		from: time.Date(2026, 12, 28, 0, 0, 0, 0, loc), to: time.Date(2027, 1, 3, 0, 0, 0, 0, loc),
		customers: 4, instances: 8, versions: 6, crossType: true,
	}
	for _, b := range sessionStores() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			playSessions(t, b.open(t), sized(c, b.name))
		})
	}
}

// sized scales a case down for -short, and for the race detector, which
// makes the pure-Go SQLite about seventeen times slower (PostgreSQL, a
// server, about one and a half): fewer instances, so fewer sessions.
func sized(c sessionCase, store string) sessionCase {
	div := 1
	if raceEnabled() {
		div = 2
		if store == "sqlite" {
			div = 5
		}
	}
	if testing.Short() {
		div *= 3
	}
	c.instances = max(2, c.instances/div)
	c.customers = max(1, min(c.customers, c.instances/2))
	return c
}

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// TestLiveDebitOfYoungRun is the smallest session the property test found
// overcharged. A run is seen running five seconds after its start and
// billed then, while open and younger than a minute; it then runs 70 s, past
// 22:00 into the off-peak window. It must cost its seconds — on Tuesday
// 2026-12-01 in Chengdu, 2 × H100 at the default prices (peak 3,473,
// off-peak 2,432 fen/h), 21:59:50–22:01:00 is 10 s peak and 60 s off-peak:
// 2 × (10 × 3,473 + 60 × 2,432) / 3,600 = 100.36… → 100 fen — not the
// minute at the start's rate that the live debit took (2 × 60 × 3,473 /
// 3,600 = 115.77…, floor 115), which the final debit cannot give back.
func TestLiveDebitOfYoungRun(t *testing.T) {
	for _, b := range sessionStores() {
		t.Run(b.name, func(t *testing.T) {
			ctx := t.Context()
			w := newWorld(t, b.open(t))
			w.svc = metering.New(metering.Config{Store: w.st, Now: func() time.Time { return w.now }, Book: defaultBook(t)})
			w.topUp(t, 1_000_000)
			start := time.Date(2026, 12, 1, 21, 59, 50, 0, billingZone(t))
			w.now = start.Add(5 * time.Second)
			if _, err := w.svc.Ingest(ctx, w.host, []agentproto.RunEvent{{ID: "young-start", Kind: agentproto.RunStarted,
				InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: start}}, w.running(start)); err != nil {
				t.Fatal(err)
			}
			end := start.Add(70 * time.Second)
			w.now = end.Add(time.Second)
			if _, err := w.svc.Ingest(ctx, w.host, []agentproto.RunEvent{{ID: "young-end", Kind: agentproto.RunEnded,
				InstanceID: w.in.ID, AllocationID: w.alloc.ID, StartedAt: start, EndedAt: &end}}, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := w.svc.Bill(ctx, defaultBook(t)); err != nil {
				t.Fatal(err)
			}
			runs, err := w.st.ListUsageRuns(ctx, gpurent.UsageRunFilter{InstanceID: w.in.ID})
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != 1 || !runs[0].Settled || runs[0].DebitedFen != 100 || w.cash(t) != 1_000_000-100 {
				t.Errorf("a 70 s run, 10 s of it peak, debited %+v and took %d fen from the wallet; want 100 fen",
					runs, 1_000_000-w.cash(t))
			}
		})
	}
}

func billingZone(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatalf("load Asia/Shanghai: %v", err)
	}
	return loc
}

// sessionSeed is def, or GPURENT_SESSION_SEED when set.
func sessionSeed(t *testing.T, def uint64) uint64 {
	t.Helper()
	s := os.Getenv("GPURENT_SESSION_SEED")
	if s == "" {
		return def
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("GPURENT_SESSION_SEED=%q: %v", s, err)
	}
	return v
}

// The plan.

type simVersion struct {
	id       string
	eff      time.Time // UTC, whole seconds
	announce time.Time // when the operator adds it (≤ eff)
	rule     simRule
	prices   map[string]simPrices
}

// simRule is an off-peak rule in seconds since local midnight: the daily
// window [start, end) (wrapping midnight when start > end, empty when
// equal) and, with weekends, all of Saturday and Sunday.
type simRule struct {
	start, end int64
	weekends   bool
}

// simPrices are one type's hourly prices per GPU-hour in fen.
type simPrices struct{ peak, offPeak, academicPeak, academicOffPeak int64 }

type simAccount struct {
	id            string
	email         string
	academicUntil *time.Time
	rich          bool
	cash          int64 // funding
	promo, sla    int64
	charged       int64 // the reference: the sum of its runs
}

func (a *simAccount) funded() int64 { return a.cash + a.promo + a.sla }

type timedEvent struct {
	at time.Time // when it happened: the agent journals it then
	ev agentproto.RunEvent
}

// simHost is a host and its agent's journal.
type simHost struct {
	name    string
	typeID  string
	h       *gpurent.Host
	events  []timedEvent // all its runs' events, by time
	next    int          // events[:next] have happened
	pending []agentproto.RunEvent
	sent    []agentproto.RunEvent // acknowledged, kept to replay
	runs    []*simRun
}

const (
	slotsPerHost = 4
	gpusPerSlot  = 8
)

type simAlloc struct {
	id     string
	inst   *simInstance
	host   *simHost
	slot   int
	typeID string
	count  int
	from   time.Time
	prev   *simAlloc // the allocation it replaces (an upgrade)
}

type simInstance struct {
	id     string
	name   string
	acc    *simAccount
	typeID string // the type it was rented with
	allocs []*simAlloc
}

type simRun struct {
	inst       *simInstance
	alloc      *simAlloc
	start, end time.Time
	fen        int64 // the reference amount
}

type actionKind int

// Kinds in the order they happen at one instant.
const (
	actAnnounce actionKind = iota
	actAlloc
	actReport
	actBill
)

type action struct {
	at      time.Time
	kind    actionKind
	seq     int
	version *simVersion
	alloc   *simAlloc
	host    *simHost
}

// sim is one planned session set played on one store.
type sim struct {
	t     *testing.T
	c     sessionCase
	rng   *rand.Rand
	loc   *time.Location
	types []gpurent.GPUType

	versions  []*simVersion
	edges     []time.Time
	accounts  []*simAccount
	instances []*simInstance
	hosts     map[string]*simHost
	hostList  []*simHost
	runs      []*simRun
	actions   []action
	events    int

	// The reference statement lines: seconds per key.
	lines map[refKey]int64

	// Playing.
	now      time.Time
	st       gpurent.Store
	svc      *metering.Service
	prices   *pricing.Service
	operator *gpurent.Account
	passes   int
	reports  int
}

func (s *sim) clock() time.Time { return s.now }

func (s *sim) addAction(a action) {
	a.seq = len(s.actions)
	s.actions = append(s.actions, a)
}

// plan draws the whole session set from the seed: nothing touches a store.
func plan(t *testing.T, c sessionCase) *sim {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	s := &sim{t: t, c: c, rng: rand.New(rand.NewPCG(c.seed, c.seed^0x9e3779b97f4a7c15)), loc: c.from.Location(),
		types: cat.GPUTypes, hosts: map[string]*simHost{}, lines: map[refKey]int64{}}
	s.planVersions()
	s.planEdges()
	for i := range c.customers {
		a := &simAccount{id: gpurent.NewID(gpurent.PrefixAccount), email: fmt.Sprintf("c%d@session.example", i)}
		switch x := s.rng.IntN(10); {
		case x < 3: // verified for longer than the session
			u := c.to.AddDate(1, 0, 0)
			a.academicUntil = &u
		case x < 5: // the verification ends during the session
			u := s.randomInstant(c.from, c.to)
			a.academicUntil = &u
		}
		a.rich = s.rng.IntN(3) == 0
		s.accounts = append(s.accounts, a)
	}
	for i := range c.instances {
		s.planInstance(i)
	}
	for _, h := range s.hostList {
		sort.SliceStable(h.events, func(i, j int) bool { return h.events[i].at.Before(h.events[j].at) })
	}
	// Billing passes at random instants.
	for range max(20, len(s.runs)/12) {
		s.addAction(action{at: s.randomInstant(c.from, c.to.Add(time.Hour)), kind: actBill})
	}
	sort.SliceStable(s.actions, func(i, j int) bool {
		a, b := s.actions[i], s.actions[j]
		if !a.at.Equal(b.at) {
			return a.at.Before(b.at)
		}
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		return a.seq < b.seq
	})
	return s
}

func (s *sim) randomInstant(from, to time.Time) time.Time {
	return from.Add(time.Duration(s.rng.Int64N(int64(to.Sub(from)/time.Second))) * time.Second).UTC()
}

// randomRule draws an off-peak rule; the default most often.
func (s *sim) randomRule() simRule {
	hms := func(h, m, sec int64) int64 { return h*3600 + m*60 + sec }
	switch x := s.rng.IntN(10); {
	case x < 6:
		return simRule{start: hms(22, 0, 0), end: hms(8, 0, 0), weekends: true}
	case x < 7:
		return simRule{start: hms(23, 0, 0), end: hms(7, 0, 0)}
	case x < 8:
		return simRule{start: hms(21, 30, 30), end: hms(8, 15, 0), weekends: true}
	case x < 9:
		return simRule{start: hms(1, 0, 0), end: hms(6, 0, 0), weekends: true} // not wrapping midnight
	default:
		return simRule{weekends: true} // no daily window
	}
}

func (s *sim) randomPrices(prev *simPrices) simPrices {
	if prev != nil && s.rng.IntN(4) == 0 {
		return *prev // unchanged in this version
	}
	peak := 100 + s.rng.Int64N(12_000)
	off := peak - s.rng.Int64N(peak/2+1)
	if s.rng.IntN(8) == 0 {
		off = peak
	}
	return simPrices{peak: peak, offPeak: off,
		academicPeak: peak - s.rng.Int64N(peak/2+1), academicOffPeak: off - s.rng.Int64N(off/2+1)}
}

// planVersions draws the price versions: the first takes effect when the
// session begins, the others at random instants in it, many exactly on an
// edge (midnight, 22:00, 08:00 local). Most are added before the session
// begins, some shortly before they take effect.
func (s *sim) planVersions() {
	c := s.c
	first := &simVersion{id: "v0", eff: c.from.UTC(), announce: c.from.Add(-time.Hour).UTC(), rule: s.randomRule(),
		prices: map[string]simPrices{}}
	for _, t := range s.types {
		first.prices[t.ID] = s.randomPrices(nil)
	}
	effs := map[int64]bool{first.eff.Unix(): true}
	var rest []time.Time
	for len(rest) < c.versions {
		e := s.randomInstant(c.from, c.to)
		if s.rng.IntN(2) == 0 { // on an edge
			l := e.In(s.loc)
			hours := []int{0, 8, 22}
			e = time.Date(l.Year(), l.Month(), l.Day(), hours[s.rng.IntN(len(hours))], 0, 0, 0, s.loc).UTC()
		}
		if e.Before(c.from) || !e.Before(c.to) || effs[e.Unix()] {
			continue
		}
		effs[e.Unix()] = true
		rest = append(rest, e)
	}
	slices.SortFunc(rest, func(a, b time.Time) int { return a.Compare(b) })
	s.versions = []*simVersion{first}
	last := first.announce
	for i, e := range rest {
		prev := s.versions[len(s.versions)-1]
		v := &simVersion{id: fmt.Sprintf("v%d", i+1), eff: e, rule: s.randomRule(), prices: map[string]simPrices{}}
		if s.rng.IntN(4) == 0 {
			v.rule = prev.rule
		}
		for _, t := range s.types {
			p := prev.prices[t.ID]
			v.prices[t.ID] = s.randomPrices(&p)
		}
		v.announce = first.announce
		if s.rng.IntN(3) == 0 { // shortly before (or at) its effective instant
			v.announce = e.Add(-time.Duration(s.rng.Int64N(2*86400)) * time.Second)
		}
		if v.announce.Before(last) {
			v.announce = last // versions are added in effective order
		}
		last = v.announce
		s.versions = append(s.versions, v)
		s.addAction(action{at: v.announce, kind: actAnnounce, version: v})
	}
}

// planEdges lists the instants where a rate may change: every local
// midnight, every clock time of every rule, every version's effective
// instant.
func (s *sim) planEdges() {
	clocks := map[int64]bool{0: true}
	for _, v := range s.versions {
		clocks[v.rule.start] = true
		clocks[v.rule.end] = true
	}
	f := s.c.from.In(s.loc)
	for d := time.Date(f.Year(), f.Month(), f.Day(), 0, 0, 0, 0, s.loc); d.Before(s.c.to); d = d.AddDate(0, 0, 1) {
		for c := range clocks {
			e := time.Date(d.Year(), d.Month(), d.Day(), int(c/3600), int(c/60%60), int(c%60), 0, s.loc)
			if !e.Before(s.c.from) && e.Before(s.c.to) {
				s.edges = append(s.edges, e.UTC())
			}
		}
	}
	for _, v := range s.versions[1:] {
		s.edges = append(s.edges, v.eff)
	}
	slices.SortFunc(s.edges, func(a, b time.Time) int { return a.Compare(b) })
	s.edges = slices.CompactFunc(s.edges, func(a, b time.Time) bool { return a.Equal(b) })
}

// host returns the i-th host of a type, planning it on first use.
func (s *sim) host(typeID string, i int) *simHost {
	name := fmt.Sprintf("%s-%d", typeID, i)
	h := s.hosts[name]
	if h == nil {
		h = &simHost{name: name, typeID: typeID}
		s.hosts[name] = h
		s.hostList = append(s.hostList, h)
	}
	return h
}

func (s *sim) newAlloc(in *simInstance, typeID string, count int, from time.Time, prev *simAlloc) *simAlloc {
	i := len(s.instances) - 1
	a := &simAlloc{id: gpurent.NewID(gpurent.PrefixAllocation), inst: in, host: s.host(typeID, i/slotsPerHost),
		slot: i % slotsPerHost, typeID: typeID, count: count, from: from, prev: prev}
	in.allocs = append(in.allocs, a)
	if prev != nil {
		s.addAction(action{at: from, kind: actAlloc, alloc: a})
	}
	return a
}

// gpuCount draws an allocation's GPU count.
func (s *sim) gpuCount() int {
	counts := [...]int{1, 1, 2, 2, 3, 4, 8}
	return counts[s.rng.IntN(len(counts))]
}

// seconds draws from weighted ranges [lo, hi] of seconds.
func (s *sim) seconds(ranges ...[3]int64) int64 {
	total := int64(0)
	for _, r := range ranges {
		total += r[0]
	}
	x := s.rng.Int64N(total)
	for _, r := range ranges {
		if x < r[0] {
			return r[1] + s.rng.Int64N(r[2]-r[1]+1)
		}
		x -= r[0]
	}
	panic("unreachable")
}

// planInstance draws one instance's runs over the session.
func (s *sim) planInstance(i int) {
	c := s.c
	acc := s.accounts[s.rng.IntN(len(s.accounts))]
	typ := s.types[s.rng.IntN(len(s.types))].ID
	in := &simInstance{id: gpurent.NewID(gpurent.PrefixInstance), name: fmt.Sprintf("session-%d", i), acc: acc, typeID: typ}
	s.instances = append(s.instances, in)
	t := c.from.Add(time.Duration(s.rng.Int64N(6*3600)) * time.Second).UTC()
	alloc := s.newAlloc(in, typ, s.gpuCount(), c.from.UTC(), nil)
	var last *simRun
	for {
		var start time.Time
		if s.rng.IntN(10) < 7 { // just before, at or across an edge
			k := sort.Search(len(s.edges), func(j int) bool { return s.edges[j].After(t) }) + s.rng.IntN(2)
			if k >= len(s.edges) {
				break
			}
			// weights, lo, hi (seconds before the edge)
			before := s.seconds([3]int64{10, 0, 0}, [3]int64{15, 1, 5}, [3]int64{25, 1, 59}, [3]int64{25, 60, 1800}, [3]int64{25, 1800, 3 * 3600})
			start = s.edges[k].Add(-time.Duration(before) * time.Second)
		} else {
			start = t.Add(time.Duration(s.seconds([3]int64{15, 0, 0}, [3]int64{40, 1, 600}, [3]int64{45, 600, 4 * 3600})) * time.Second)
		}
		if start.Before(t) {
			start = t
		}
		upgrade := last != nil && s.rng.IntN(100) < 15
		if upgrade && s.rng.IntN(2) == 0 {
			start = t // the old run ends and the new allocation's starts at the same instant
		}
		if last != nil && !upgrade && start.Equal(last.start) {
			start = start.Add(time.Second) // one allocation cannot start twice at one instant
		}
		d := s.seconds([3]int64{3, 0, 0}, [3]int64{22, 1, 59}, [3]int64{5, 60, 61}, [3]int64{10, 62, 120}, [3]int64{15, 121, 600},
			[3]int64{30, 600, 2 * 3600}, [3]int64{12, 2 * 3600, 12 * 3600}, [3]int64{3, 12 * 3600, 40 * 3600})
		end := start.Add(time.Duration(d) * time.Second)
		if !end.Before(c.to) {
			break
		}
		if upgrade {
			typ := alloc.typeID
			if c.crossType && s.rng.IntN(2) == 0 {
				for typ == alloc.typeID {
					typ = s.types[s.rng.IntN(len(s.types))].ID
				}
			}
			count := alloc.count
			for count == alloc.count && typ == alloc.typeID {
				count = s.gpuCount()
			}
			alloc = s.newAlloc(in, typ, count, start, alloc)
		}
		r := &simRun{inst: in, alloc: alloc, start: start, end: end}
		s.runs = append(s.runs, r)
		s.planRun(r)
		last, t = r, end
	}
}

// planRun journals a run's two events on its host and plans the reports
// that carry them and show the run running.
func (s *sim) planRun(r *simRun) {
	h := r.alloc.host
	h.runs = append(h.runs, r)
	s.events += 2
	start := agentproto.RunEvent{ID: fmt.Sprintf("ev-%d", s.events-1), Kind: agentproto.RunStarted,
		InstanceID: r.inst.id, AllocationID: r.alloc.id, StartedAt: r.start}
	end := r.end
	stop := agentproto.RunEvent{ID: fmt.Sprintf("ev-%d", s.events), Kind: agentproto.RunEnded,
		InstanceID: r.inst.id, AllocationID: r.alloc.id, StartedAt: r.start, EndedAt: &end}
	h.events = append(h.events, timedEvent{r.start, start}, timedEvent{r.end, stop})
	delay := func() time.Duration {
		return time.Duration(s.seconds([3]int64{20, 0, 0}, [3]int64{50, 1, 30}, [3]int64{20, 31, 600}, [3]int64{10, 601, 6 * 3600})) * time.Second
	}
	s.addAction(action{at: r.start.Add(delay()), kind: actReport, host: h})
	s.addAction(action{at: r.end.Add(delay()), kind: actReport, host: h})
	d := int64(r.end.Sub(r.start) / time.Second)
	if d > 1 && s.rng.IntN(2) == 0 { // seen running within its first minute
		s.addAction(action{at: r.start.Add(time.Duration(1+s.rng.Int64N(min(d-1, 59))) * time.Second), kind: actReport, host: h})
	}
	for range min(d/600, int64(s.rng.IntN(2))) { // and later
		s.addAction(action{at: r.start.Add(time.Duration(1+s.rng.Int64N(d-1)) * time.Second), kind: actReport, host: h})
	}
}

// The reference calculator. It shares nothing with the engine: it takes
// each second's local time fields from the tz database, finds the version
// in force by walking the versions in effective order, and adds the rate of
// the second. Amounts are exact: a sum of fen per hour over seconds, divided
// by 3600 and rounded half-up once with math/big.

type refKey struct {
	instance string
	month    string // 2028-02, local
	offPeak  bool
	rate     int64 // fen per GPU-hour
	units    int64 // GPUs
}

func (r simRule) offPeak(sod int64, wd time.Weekday) bool {
	if r.weekends && (wd == time.Saturday || wd == time.Sunday) {
		return true
	}
	switch {
	case r.start == r.end:
		return false
	case r.start < r.end:
		return r.start <= sod && sod < r.end
	default:
		return sod >= r.start || sod < r.end
	}
}

func (p simPrices) rate(offPeak, academic bool) int64 {
	switch {
	case offPeak && academic:
		return p.academicOffPeak
	case offPeak:
		return p.offPeak
	case academic:
		return p.academicPeak
	}
	return p.peak
}

// roundHalfUp returns num/den rounded half-up, num ≥ 0, den > 0.
func roundHalfUp(num *big.Int, den int64) int64 {
	x := new(big.Rat).SetFrac(num, big.NewInt(den))
	x.Add(x, big.NewRat(1, 2))
	q := new(big.Int).Quo(x.Num(), x.Denom()) // both positive: the floor
	if !q.IsInt64() {
		panic("amount out of range")
	}
	return q.Int64()
}

// priceRun prices one run second by second and adds its seconds to the
// statement lines.
func (s *sim) priceRun(r *simRun) int64 {
	start, end := r.start.Unix(), r.end.Unix()
	if end == start {
		return 0
	}
	academic := r.inst.acc.academicUntil != nil && r.start.Before(*r.inst.acc.academicUntil)
	units := int64(r.alloc.count)
	vi := 0
	var sod int64
	var wd time.Weekday
	var month string
	local := func(sec int64) {
		lt := time.Unix(sec, 0).In(s.loc)
		sod, wd, month = int64(lt.Hour()*3600+lt.Minute()*60+lt.Second()), lt.Weekday(), lt.Format("2006-01")
	}
	versionAt := func(sec int64) *simVersion {
		for vi+1 < len(s.versions) && s.versions[vi+1].eff.Unix() <= sec {
			vi++
		}
		if s.versions[vi].eff.Unix() > sec {
			s.t.Fatalf("no version in force at %d", sec)
		}
		return s.versions[vi]
	}
	var sum int64 // Σ fen per GPU-hour over the billed seconds
	if end-start < 60 {
		// A power-on shorter than a minute is billed a minute at the rate
		// of its start.
		local(start)
		v := versionAt(start)
		off := v.rule.offPeak(sod, wd)
		rate := v.prices[r.alloc.typeID].rate(off, academic)
		s.lines[refKey{r.inst.id, month, off, rate, units}] += 60
		return roundHalfUp(new(big.Int).Mul(big.NewInt(60*rate), big.NewInt(units)), 3600)
	}
	var key refKey
	var n int64
	local(start)
	for sec := start; sec < end; sec++ {
		if sec != start {
			sod++
			if sod == 86400 || sec%900 == 0 {
				local(sec) // a new local day, or a re-read of the zone's offset
			}
		}
		v := versionAt(sec)
		off := v.rule.offPeak(sod, wd)
		rate := v.prices[r.alloc.typeID].rate(off, academic)
		sum += rate
		if n == 0 || key.rate != rate || key.offPeak != off || key.month != month {
			if n > 0 {
				s.lines[key] += n
			}
			key, n = refKey{r.inst.id, month, off, rate, units}, 0
		}
		n++
	}
	s.lines[key] += n
	return roundHalfUp(new(big.Int).Mul(big.NewInt(sum), big.NewInt(units)), 3600)
}

// Playing the plan on a store.

func playSessions(t *testing.T, st gpurent.Store, c sessionCase) {
	t.Logf("seed %d (GPURENT_SESSION_SEED=%d replays it)", c.seed, c.seed)
	began := time.Now()
	s := plan(t, c)
	for _, r := range s.runs {
		r.fen = s.priceRun(r)
		r.inst.acc.charged += r.fen
	}
	refTook := time.Since(began)
	s.st = st
	s.setup()
	s.play()
	s.finish()
	s.check()
	t.Logf("%d customers, %d instances, %s; %d events in %d reports, %d billing passes, %d price versions; reference %v, all %v",
		len(s.accounts), len(s.instances), s.stats(), s.events, s.reports, s.passes, len(s.versions),
		refTook.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// stats says what the sessions held.
func (s *sim) stats() string {
	var secs int64
	var zero, short, versionCut, monthCut, academic, upgrades, unfunded int
	for _, r := range s.runs {
		d := int64(r.end.Sub(r.start) / time.Second)
		secs += d
		switch {
		case d == 0:
			zero++
		case d < 60:
			short++
		}
		for _, v := range s.versions {
			if v.eff.After(r.start) && v.eff.Before(r.end) {
				versionCut++
				break
			}
		}
		if r.start.In(s.loc).Month() != r.end.Add(-time.Second).In(s.loc).Month() {
			monthCut++
		}
		if u := r.inst.acc.academicUntil; u != nil && r.start.Before(*u) {
			academic++
		}
	}
	for _, in := range s.instances {
		upgrades += len(in.allocs) - 1
	}
	for _, a := range s.accounts {
		if a.funded() < a.charged {
			unfunded++
		}
	}
	return fmt.Sprintf("%d runs (%d s of usage; %d of 0 s, %d of 1–59 s, %d across a price change, %d across a month end, %d academic), "+
		"%d upgrades, %d customers short of money", len(s.runs), secs, zero, short, versionCut, monthCut, academic, upgrades, unfunded)
}

// setup writes the catalog, the accounts with their money, the hosts, the
// instances and their first allocations, and the first price version.
func (s *sim) setup() {
	t, ctx := s.t, s.t.Context()
	s.now = s.c.from.Add(-time.Hour).UTC()
	for _, gt := range s.types {
		if err := s.st.UpsertGPUType(ctx, gt); err != nil {
			t.Fatal(err)
		}
	}
	s.prices = pricing.New(pricing.Config{Store: s.st, Now: s.clock})
	// Ingest bills what each report changed, as the control plane does.
	s.svc = metering.New(metering.Config{Store: s.st, Now: s.clock, HostTimeout: time.Minute, Book: s.prices})
	s.operator = &gpurent.Account{Email: "operator@session.example", Name: "operator", Role: gpurent.RoleOperator, PasswordHash: "x"}
	if err := s.st.CreateAccount(ctx, s.operator); err != nil {
		t.Fatal(err)
	}
	s.announce(s.versions[0])

	expires := s.c.to.AddDate(0, 1, 0).UTC()
	for _, a := range s.accounts {
		acc := &gpurent.Account{ID: a.id, Email: a.email, Name: a.email, Role: gpurent.RoleCustomer, PasswordHash: "x",
			AcademicUntil: a.academicUntil}
		if err := s.st.CreateAccount(ctx, acc); err != nil {
			t.Fatal(err)
		}
		if a.rich {
			a.cash = 10_000_000_000
		} else if total := a.charged * (30 + s.rng.Int64N(81)) / 100; total > 0 {
			a.promo = total * s.rng.Int64N(31) / 100
			a.sla = total * s.rng.Int64N(21) / 100
			a.cash = total - a.promo - a.sla
		}
		post := func(tx *gpurent.LedgerTx) {
			if tx.AmountFen <= 0 {
				return
			}
			if _, err := s.st.PostLedger(ctx, tx); err != nil {
				t.Fatalf("fund %s: %v", a.id, err)
			}
		}
		post(&gpurent.LedgerTx{Op: "topup", Key: "seed-cash:" + a.id, Customer: a.id, At: s.now, AmountFen: a.cash, Actor: "test"})
		post(&gpurent.LedgerTx{Op: "grant", Key: "seed-promo:" + a.id, Customer: a.id, At: s.now, AmountFen: a.promo,
			Credit: "promo", ExpiresAt: expires})
		post(&gpurent.LedgerTx{Op: "grant", Key: "seed-sla:" + a.id, Customer: a.id, At: s.now, AmountFen: a.sla,
			Credit: "sla", ExpiresAt: expires})
	}
	for _, h := range s.hostList {
		h.h = storetest.SeedHost(t, s.st, h.name, h.typeID, slotsPerHost*gpusPerSlot)
	}
	for _, in := range s.instances {
		first := in.allocs[0]
		gi := &gpurent.Instance{ID: in.id, AccountID: in.acc.id, Name: in.name, Image: "busybox", TypeID: in.typeID,
			GPUCount: first.count, State: gpurent.StateRunning, Plan: gpurent.PlanHourly}
		if err := s.st.CreateInstance(ctx, gi); err != nil {
			t.Fatal(err)
		}
		s.createAlloc(first)
	}
}

func (s *sim) announce(v *simVersion) {
	rv := ratingVersion(v)
	if _, err := s.prices.AddVersion(s.t.Context(), s.operator, rv, "session "+v.id); err != nil {
		s.t.Fatalf("add price version %s effective %s at %s: %v", v.id, v.eff, s.now, err)
	}
}

// ratingVersion is the version as the operator sends it: the hourly prices
// drawn, package prices derived from them (not used by these runs).
func ratingVersion(v *simVersion) rating.Version {
	rv := rating.Version{ID: v.id, Effective: v.eff, Types: map[string]rating.Prices{},
		Rule: rating.Rule{Start: rating.ClockTime(v.rule.start), End: rating.ClockTime(v.rule.end), Weekends: v.rule.weekends}}
	for id, p := range v.prices {
		daily := p.peak * 20
		rv.Types[id] = rating.Prices{PeakFen: p.peak, OffPeakFen: p.offPeak, AcademicPeakFen: p.academicPeak,
			AcademicOffPeakFen: p.academicOffPeak, DailyFen: daily, WeeklyFen: daily * 6, MonthlyFen: daily * 25,
			AcademicDailyFen: daily * 8 / 10, AcademicWeeklyFen: daily * 6 * 8 / 10, AcademicMonthlyFen: daily * 25 * 8 / 10,
			NoGPUFen: 10}
	}
	return rv
}

func (s *sim) createAlloc(a *simAlloc) {
	ctx := s.t.Context()
	if a.prev != nil {
		if err := s.st.EndAllocation(ctx, a.prev.id, a.from, "upgrade"); err != nil {
			s.t.Fatal(err)
		}
	}
	gpus := a.host.h.GPUs[a.slot*gpusPerSlot : a.slot*gpusPerSlot+a.count]
	ga := &gpurent.Allocation{ID: a.id, InstanceID: a.inst.id, HostID: a.host.h.ID, StartedAt: a.from, StartReason: "start"}
	if a.prev != nil {
		ga.StartReason = "upgrade"
	}
	for _, g := range gpus {
		ga.GPUIDs = append(ga.GPUIDs, g.ID)
	}
	if err := s.st.CreateAllocation(ctx, ga); err != nil {
		s.t.Fatalf("allocation of %s: %v", a.inst.id, err)
	}
}

// play runs the planned actions on the clock.
func (s *sim) play() {
	for _, a := range s.actions {
		if a.at.After(s.now) {
			s.now = a.at
		}
		switch a.kind {
		case actAnnounce:
			s.announce(a.version)
		case actAlloc:
			s.createAlloc(a.alloc)
		case actReport:
			s.report(a.host, false)
		case actBill:
			s.bill(1 + s.rng.IntN(2))
		}
	}
}

// report is one agent report from h at s.now: some of the events it has
// journalled and not had acknowledged (a random part, shuffled, sometimes
// with replays of acknowledged ones), and the runs it sees running. Some
// acknowledgements are lost, so those events come again. flush sends all
// and loses nothing.
func (s *sim) report(h *simHost, flush bool) {
	for h.next < len(h.events) && !h.events[h.next].at.After(s.now) {
		h.pending = append(h.pending, h.events[h.next].ev)
		h.next++
	}
	var running []agentproto.ActualInstance
	for _, r := range h.runs {
		if !r.start.After(s.now) && s.now.Before(r.end) {
			running = append(running, agentproto.ActualInstance{InstanceID: r.inst.id, AllocationID: r.alloc.id,
				State: agentproto.StateRunning, StartedAt: r.start})
		}
	}
	if len(h.pending) == 0 && len(running) == 0 {
		return
	}
	s.rng.Shuffle(len(h.pending), func(i, j int) { h.pending[i], h.pending[j] = h.pending[j], h.pending[i] })
	n := len(h.pending)
	if !flush {
		n = min(n, 1+s.rng.IntN(6))
	}
	send := slices.Clone(h.pending[:n])
	if !flush && len(h.sent) > 0 && s.rng.IntN(5) == 0 {
		for range 1 + s.rng.IntN(3) {
			send = append(send, h.sent[s.rng.IntN(len(h.sent))])
		}
	}
	if len(send) > 1 && s.rng.IntN(5) == 0 {
		send = append(send, send[0]) // the same event twice in one report
	}
	s.rng.Shuffle(len(send), func(i, j int) { send[i], send[j] = send[j], send[i] })
	acked, err := s.svc.Ingest(s.t.Context(), h.h, send, running)
	if err != nil {
		s.t.Fatalf("ingest at %s: %v", s.now, err)
	}
	s.reports++
	if len(acked) != len(send) {
		s.t.Fatalf("ingest at %s acknowledged %d of %d events", s.now, len(acked), len(send))
	}
	if !flush && s.rng.IntN(10) == 0 {
		return // the answer was lost: the agent sends these again
	}
	done := map[string]bool{}
	for _, id := range acked {
		done[id] = true
	}
	kept := h.pending[:0]
	for _, e := range h.pending {
		if done[e.ID] {
			h.sent = append(h.sent, e)
		} else {
			kept = append(kept, e)
		}
	}
	h.pending = kept
}

// bill runs n billing passes at once, then checks that no wallet went
// below zero.
func (s *sim) bill(n int) {
	ctx := s.t.Context()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = s.svc.Bill(ctx, s.prices) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			s.t.Fatalf("billing pass at %s: %v", s.now, err)
		}
	}
	s.passes++
	for _, a := range s.accounts {
		b, err := s.st.LedgerBalances(ctx, a.id)
		if err != nil {
			s.t.Fatal(err)
		}
		if b.CashFen < 0 || b.ReceivableFen != 0 {
			s.t.Fatalf("at %s, %s has cash %d and receivable %d: cash never goes below zero and usage never goes into arrears",
				s.now, a.id, b.CashFen, b.ReceivableFen)
		}
		for _, l := range b.Lots {
			if l.BalanceFen < 0 {
				s.t.Fatalf("at %s, %s lot %s holds %d", s.now, a.id, l.ID, l.BalanceFen)
			}
		}
	}
}

// finish delivers everything the agents still hold and bills once more.
func (s *sim) finish() {
	s.now = s.c.to.Add(7 * time.Hour).UTC()
	if last := s.actions[len(s.actions)-1].at; !last.Before(s.now) {
		s.now = last.Add(time.Minute)
	}
	for {
		left := false
		for _, h := range s.hostList {
			s.report(h, true)
			left = left || len(h.pending) > 0 || h.next < len(h.events)
		}
		if !left {
			break
		}
	}
	s.bill(2)
}

// The checks.

func (s *sim) check() {
	t, ctx := s.t, s.t.Context()

	// Every run: its end, settled, debited exactly the reference amount.
	stored, err := s.st.ListUsageRuns(ctx, gpurent.UsageRunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]gpurent.UsageRun{}
	for _, r := range stored {
		byKey[fmt.Sprintf("%s@%d", r.AllocationID, r.StartedAt.Unix())] = r
	}
	if len(stored) != len(s.runs) {
		t.Errorf("%d runs stored, %d played", len(stored), len(s.runs))
	}
	bad := 0
	for _, r := range s.runs {
		got, ok := byKey[fmt.Sprintf("%s@%d", r.alloc.id, r.start.Unix())]
		switch {
		case !ok:
			t.Errorf("run of %s from %s is missing", r.inst.id, r.start)
		case got.EndedAt == nil || !got.EndedAt.Equal(r.end) || !got.Settled:
			t.Errorf("run of %s from %s: ended %v settled %v, want ended %s and settled", r.inst.id, r.start, got.EndedAt, got.Settled, r.end)
		case got.DebitedFen != r.fen || got.TypeID != r.alloc.typeID || got.GPUCount != r.alloc.count:
			if bad++; bad <= 12 {
				t.Errorf("run %s (%s): debited %d fen for %d x %s, reference %d fen for %d x %s",
					got.ID, s.describe(r), got.DebitedFen, got.GPUCount, got.TypeID, r.fen, r.alloc.count, r.alloc.typeID)
			}
		}
	}
	if bad > 12 {
		t.Errorf("... %d runs in all debited other than the reference", bad)
	}

	// The ledger: every transaction sums to zero; charges per customer;
	// revenue is the charges less what the wallets could not cover.
	var all []gpurent.LedgerTx
	var wantRevenue, wantCharged int64
	for _, a := range s.accounts {
		txs := s.ledgerTxs(a.id)
		all = append(all, txs...)
		var charged, collected int64
		for _, tx := range txs {
			var sum int64
			for _, p := range tx.Postings {
				sum += p.AmountFen
			}
			if sum != 0 {
				t.Errorf("ledger transaction %s sums to %d", tx.Key, sum)
			}
			if tx.Op == "debit" {
				if tx.Charge != "compute" {
					t.Errorf("debit %s charges %s: only compute was used", tx.Key, tx.Charge)
				}
				charged += tx.AmountFen
				for _, p := range tx.Postings {
					if p.Kind == "revenue" {
						collected += p.AmountFen
					}
				}
			}
		}
		want := min(a.charged, a.funded())
		if charged != a.charged || collected != want {
			t.Errorf("%s: charged %d fen and collected %d; reference charges %d, and with %d fen funded collects %d",
				a.id, charged, collected, a.charged, a.funded(), want)
		}
		b, err := s.st.LedgerBalances(ctx, a.id)
		if err != nil {
			t.Fatal(err)
		}
		left := b.CashFen
		for _, l := range b.Lots {
			left += l.BalanceFen
		}
		if b.CashFen < 0 || b.ReceivableFen != 0 || left != a.funded()-want {
			t.Errorf("%s: cash %d, receivable %d, %d left in all; want cash ≥ 0, no arrears, %d left",
				a.id, b.CashFen, b.ReceivableFen, left, a.funded()-want)
		}
		wantRevenue += want
		wantCharged += a.charged
	}
	plat, err := s.st.LedgerPlatformBalances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if plat["revenue"] != wantRevenue {
		t.Errorf("platform revenue %d fen; customers were charged %d less %d uncovered = %d",
			plat["revenue"], wantCharged, wantCharged-wantRevenue, wantRevenue)
	}
	debits, err := s.st.ListDebits(ctx, s.c.from.AddDate(0, -1, 0), s.c.to.AddDate(0, 2, 0))
	if err != nil {
		t.Fatal(err)
	}
	var listed, listedRevenue int64
	for _, d := range debits {
		listed += d.AmountFen
		listedRevenue += d.RevenueFen
	}
	rev, err := s.svc.Revenue(ctx, s.c.from.AddDate(0, -1, 0), s.c.to.AddDate(0, 2, 0), s.loc)
	if err != nil {
		t.Fatal(err)
	}
	var byType int64
	for _, v := range rev.ByType {
		byType += v
	}
	if listed != wantCharged || listedRevenue != wantRevenue || rev.TotalFen != wantRevenue || byType != wantRevenue {
		t.Errorf("debits list %d fen charged, %d revenue; the revenue report %d (%d by type); want %d and %d",
			listed, listedRevenue, rev.TotalFen, byType, wantCharged, wantRevenue)
	}
	s.checkReplay(all, plat)
	s.checkStatements()
}

func (s *sim) describe(r *simRun) string {
	return fmt.Sprintf("%s %s–%s local, %d s, academic %v", r.inst.id, r.start.In(s.loc).Format("Mon 2006-01-02 15:04:05"),
		r.end.In(s.loc).Format("15:04:05"), int64(r.end.Sub(r.start)/time.Second),
		r.inst.acc.academicUntil != nil && r.start.Before(*r.inst.acc.academicUntil))
}

// ledgerTxs reads a customer's whole ledger, oldest first.
func (s *sim) ledgerTxs(customer string) []gpurent.LedgerTx {
	var out []gpurent.LedgerTx
	before := int64(0)
	for {
		page, err := s.st.LedgerTxs(s.t.Context(), customer, before, 1000)
		if err != nil {
			s.t.Fatal(err)
		}
		out = append(out, page...)
		if len(page) < 1000 {
			break
		}
		before = page[len(page)-1].Seq
	}
	slices.Reverse(out)
	return out
}

// checkReplay replays every stored request, in log order, on an empty
// in-memory ledger: it must plan the very postings the store holds (the
// burn order is deterministic) and end with the balances the store reads.
func (s *sim) checkReplay(all []gpurent.LedgerTx, plat map[string]int64) {
	t := s.t
	slices.SortFunc(all, func(a, b gpurent.LedgerTx) int { return int(a.Seq - b.Seq) })
	book := ledger.New()
	for _, st := range all {
		tx, _, err := book.Post(ledger.Request{Op: ledger.Op(st.Op), Key: st.Key, Customer: st.Customer, At: st.At,
			AmountFen: st.AmountFen, Charge: ledger.Charge(st.Charge), Credit: ledger.Kind(st.Credit), ExpiresAt: st.ExpiresAt, Lot: st.Lot})
		if err != nil {
			t.Fatalf("replay of %s: %v", st.Key, err)
		}
		var got []gpurent.LedgerPosting
		for _, p := range tx.Postings {
			got = append(got, gpurent.LedgerPosting{Customer: p.Account.Customer, Kind: string(p.Account.Kind), Lot: p.Account.Lot, AmountFen: p.AmountFen})
		}
		if !slices.Equal(got, st.Postings) {
			t.Fatalf("replay of %s posts %+v; the store holds %+v", st.Key, got, st.Postings)
		}
	}
	if book.SumFen() != 0 {
		t.Errorf("the replayed ledger sums to %d", book.SumFen())
	}
	var whole int64
	for _, a := range s.accounts {
		b, err := s.st.LedgerBalances(t.Context(), a.id)
		if err != nil {
			t.Fatal(err)
		}
		w := book.Wallet(a.id)
		whole += b.CashFen + b.ReceivableFen
		lots := map[string]int64{}
		for _, l := range b.Lots {
			lots[l.ID] = l.BalanceFen
			whole += l.BalanceFen
		}
		replayed := map[string]int64{}
		for _, l := range w.Lots() {
			replayed[l.ID] = l.BalanceFen
		}
		if b.CashFen != w.CashFen() || b.ReceivableFen != w.ReceivableFen() || fmt.Sprint(lots) != fmt.Sprint(replayed) {
			t.Errorf("%s: the store reads cash %d, receivable %d, lots %v; the replay %d, %d, %v",
				a.id, b.CashFen, b.ReceivableFen, lots, w.CashFen(), w.ReceivableFen(), replayed)
		}
	}
	for _, k := range ledger.Kinds() {
		if k.IsPlatform() {
			whole += plat[string(k)]
			if got := book.Balance(ledger.PlatformAccount(k)); got != plat[string(k)] {
				t.Errorf("platform %s: the store reads %d, the replay %d", k, plat[string(k)], got)
			}
		}
	}
	if whole != 0 {
		t.Errorf("the whole ledger sums to %d", whole)
	}
}

// checkStatements compares every month's statement of every account with
// the reference, line by line; then makes them final and reads them again.
func (s *sim) checkStatements() {
	t, ctx := s.t, s.t.Context()
	months := map[string]time.Time{}
	for k := range s.lines {
		m, err := time.ParseInLocation("2006-01", k.month, s.loc)
		if err != nil {
			t.Fatal(err)
		}
		months[k.month] = m
	}
	type lineKey struct {
		instance string
		offPeak  bool
		rate     int64
		units    int64
	}
	type line struct{ seconds, fen int64 }
	statements := map[string]*metering.Statement{}
	var last time.Time
	for _, a := range s.accounts {
		acc, err := s.st.AccountByID(ctx, a.id)
		if err != nil {
			t.Fatal(err)
		}
		for key, m := range months {
			if m.After(last) {
				last = m
			}
			want := map[lineKey]line{}
			var wantTotal int64
			for k, secs := range s.lines {
				if k.month != key || s.accountOf(k.instance) != a {
					continue
				}
				fen := roundHalfUp(new(big.Int).Mul(big.NewInt(secs*k.rate), big.NewInt(k.units)), 3600)
				want[lineKey{k.instance, k.offPeak, k.rate, k.units}] = line{secs, fen}
				wantTotal += fen
			}
			st, err := s.svc.Statement(ctx, s.prices, acc, m)
			if err != nil {
				t.Fatal(err)
			}
			statements[a.id+key] = st
			got := map[lineKey]line{}
			var sum int64
			for _, l := range st.Lines {
				if l.Window != "peak" && l.Window != "off-peak" {
					t.Errorf("%s %s: a %s line", a.id, key, l.Window)
					continue
				}
				got[lineKey{l.InstanceID, l.Window == "off-peak", l.RateFen, l.Units}] = line{l.Seconds, l.Fen}
				sum += l.Fen
			}
			if st.TotalFen != sum {
				t.Errorf("%s %s: statement total %d, its lines sum to %d", a.id, key, st.TotalFen, sum)
			}
			if st.TotalFen != wantTotal || fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(st.Lines) {
				t.Errorf("%s %s: statement total %d fen, reference %d\nlines:     %v\nreference: %v", a.id, key, st.TotalFen, wantTotal, got, want)
			}
		}
	}
	// A day after the last month, every statement can be made final; it
	// then reads the same.
	s.now = last.AddDate(0, 1, 2).UTC()
	for _, a := range s.accounts {
		acc, err := s.st.AccountByID(ctx, a.id)
		if err != nil {
			t.Fatal(err)
		}
		for key, m := range months {
			if _, err := s.svc.Finalize(ctx, s.prices, acc, m); err != nil {
				t.Fatal(err)
			}
			st, err := s.svc.Statement(ctx, s.prices, acc, m)
			if err != nil {
				t.Fatal(err)
			}
			before := statements[a.id+key]
			// (Compared as sets: the order of lines that differ only in
			// their GPU count is not fixed.)
			if g, w := statementLines(st), statementLines(before); !st.Final || st.TotalFen != before.TotalFen || g != w {
				t.Errorf("%s %s: final (%v) statement %d fen, lines %s\nbefore: %d fen, lines %s",
					a.id, key, st.Final, st.TotalFen, g, before.TotalFen, w)
			}
		}
	}
}

// statementLines prints a statement's lines in a fixed order.
func statementLines(st *metering.Statement) string {
	var out []string
	for _, l := range st.Lines {
		out = append(out, fmt.Sprintf("%s/%s/%d fen/h x %d: %d s %d fen", l.InstanceID, l.Window, l.RateFen, l.Units, l.Seconds, l.Fen))
	}
	slices.Sort(out)
	return fmt.Sprint(out)
}

func (s *sim) accountOf(instance string) *simAccount {
	for _, in := range s.instances {
		if in.id == instance {
			return in.acc
		}
	}
	return nil
}
