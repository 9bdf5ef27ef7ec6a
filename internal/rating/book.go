package rating

import (
	"sort"
	"time"

	// The billing zone must load on machines without a system tzdata.
	_ "time/tzdata"

	"github.com/gpurent/gpurent"
)

// Bounds on the inputs. They keep every product the engine forms inside its
// 128-bit numerator with room to spare, and reject nonsense early.
const (
	// MaxRateFen is the largest price accepted: 10,000,000 CNY per GPU-hour
	// or per GPU-period.
	MaxRateFen = 1_000_000_000
	// MaxGPUCount is the largest GPU count rated on one line.
	MaxGPUCount = 1024
)

// BillingZone is the time zone of the product's price windows and statement
// periods.
const BillingZone = "Asia/Shanghai"

// Default price rules of DefaultBook, in percent of the list price, rounded
// up to the fen.
const (
	DefaultOffPeakPercent  = 70 // off-peak hourly = ⌈peak × 70%⌉
	DefaultAcademicPercent = 80 // every academic price = ⌈its list price × 80%⌉
	// DefaultNoGPUFen is the no-GPU ("无卡模式") token price per instance-hour:
	// 0.10 CNY, AutoDL's figure.
	DefaultNoGPUFen = 10
)

// Prices are one GPU type's prices in one price-list version, all int64 fen.
// Hourly prices are per GPU per hour of the hourly plan; package prices are
// per GPU per period (DailyPeriod, WeeklyPeriod, MonthlyPeriod). Off-peak and
// academic prices are stored as their own integer prices, never derived at
// rating time.
type Prices struct {
	PeakFen            int64 // hourly plan, peak (the list price)
	OffPeakFen         int64 // hourly plan, off-peak window
	AcademicPeakFen    int64 // hourly plan, peak, verified academic accounts
	AcademicOffPeakFen int64 // hourly plan, off-peak, verified academic accounts

	DailyFen           int64
	WeeklyFen          int64
	MonthlyFen         int64
	AcademicDailyFen   int64
	AcademicWeeklyFen  int64
	AcademicMonthlyFen int64

	// NoGPUFen is per instance-hour while the instance runs with no GPUs
	// (count 0), in any window; it has no academic variant.
	NoGPUFen int64
}

// Validate checks that every price lies in [0, MaxRateFen], that off-peak is
// not dearer than peak, and that no academic price is dearer than its list
// price.
func (p Prices) Validate() error {
	all := []struct {
		name string
		v    int64
	}{
		{"peak", p.PeakFen}, {"off-peak", p.OffPeakFen},
		{"academic peak", p.AcademicPeakFen}, {"academic off-peak", p.AcademicOffPeakFen},
		{"daily", p.DailyFen}, {"weekly", p.WeeklyFen}, {"monthly", p.MonthlyFen},
		{"academic daily", p.AcademicDailyFen}, {"academic weekly", p.AcademicWeeklyFen},
		{"academic monthly", p.AcademicMonthlyFen}, {"no-GPU", p.NoGPUFen},
	}
	for _, x := range all {
		if x.v < 0 || x.v > MaxRateFen {
			return gpurent.Errorf(gpurent.CodeInvalid, "%s price %d fen is out of range [0, %d]", x.name, x.v, MaxRateFen)
		}
	}
	if p.OffPeakFen > p.PeakFen {
		return gpurent.Errorf(gpurent.CodeInvalid, "off-peak price %d fen exceeds the peak price %d fen", p.OffPeakFen, p.PeakFen)
	}
	pairs := []struct {
		name          string
		list, academy int64
	}{
		{"peak", p.PeakFen, p.AcademicPeakFen}, {"off-peak", p.OffPeakFen, p.AcademicOffPeakFen},
		{"daily", p.DailyFen, p.AcademicDailyFen}, {"weekly", p.WeeklyFen, p.AcademicWeeklyFen},
		{"monthly", p.MonthlyFen, p.AcademicMonthlyFen},
	}
	for _, x := range pairs {
		if x.academy > x.list {
			return gpurent.Errorf(gpurent.CodeInvalid, "academic %s price %d fen exceeds its list price %d fen", x.name, x.academy, x.list)
		}
	}
	return nil
}

// Hourly returns the hourly-plan price per GPU-hour for a window.
func (p Prices) Hourly(offPeak, academic bool) int64 {
	switch {
	case offPeak && academic:
		return p.AcademicOffPeakFen
	case offPeak:
		return p.OffPeakFen
	case academic:
		return p.AcademicPeakFen
	default:
		return p.PeakFen
	}
}

// Package returns the price per GPU per period of a package plan.
func (p Prices) Package(plan gpurent.Plan, academic bool) (int64, error) {
	switch {
	case plan == gpurent.PlanDaily && academic:
		return p.AcademicDailyFen, nil
	case plan == gpurent.PlanDaily:
		return p.DailyFen, nil
	case plan == gpurent.PlanWeekly && academic:
		return p.AcademicWeeklyFen, nil
	case plan == gpurent.PlanWeekly:
		return p.WeeklyFen, nil
	case plan == gpurent.PlanMonthly && academic:
		return p.AcademicMonthlyFen, nil
	case plan == gpurent.PlanMonthly:
		return p.MonthlyFen, nil
	}
	return 0, gpurent.Errorf(gpurent.CodeInvalid, "plan %q is not a package plan", plan)
}

// percentUp returns ⌈v × pct / 100⌉ for v ≥ 0.
func percentUp(v, pct int64) int64 { return (v*pct + 99) / 100 }

// DefaultPrices derives a type's prices from its list prices by the default
// rules: off-peak = ⌈peak × 70%⌉; each academic price = ⌈its list price ×
// 80%⌉ (so academic off-peak = ⌈⌈peak × 70%⌉ × 80%⌉, the academic discount
// taken on the off-peak price); no-GPU = 10 fen per instance-hour.
func DefaultPrices(t gpurent.GPUType) Prices {
	off := percentUp(t.PriceHourlyFen, DefaultOffPeakPercent)
	return Prices{
		PeakFen:            t.PriceHourlyFen,
		OffPeakFen:         off,
		AcademicPeakFen:    percentUp(t.PriceHourlyFen, DefaultAcademicPercent),
		AcademicOffPeakFen: percentUp(off, DefaultAcademicPercent),
		DailyFen:           t.PriceDailyFen,
		WeeklyFen:          t.PriceWeeklyFen,
		MonthlyFen:         t.PriceMonthlyFen,
		AcademicDailyFen:   percentUp(t.PriceDailyFen, DefaultAcademicPercent),
		AcademicWeeklyFen:  percentUp(t.PriceWeeklyFen, DefaultAcademicPercent),
		AcademicMonthlyFen: percentUp(t.PriceMonthlyFen, DefaultAcademicPercent),
		NoGPUFen:           DefaultNoGPUFen,
	}
}

// Version is one price list: the off-peak rule and every GPU type's prices,
// in force from Effective (inclusive) until the next version's Effective.
// A change to any price is a new Version; versions never change once made.
type Version struct {
	ID        string    // e.g. "2025-07"; defaults to Effective in RFC 3339
	Effective time.Time // an instant in whole seconds
	Rule      Rule
	Types     map[string]Prices // by GPU type id
}

// Book is a versioned price book in one billing time zone. It is immutable
// and safe for concurrent use; Amend returns a new Book.
type Book struct {
	loc      *time.Location
	versions []Version
}

// LoadBillingZone loads Asia/Shanghai from the embedded tzdata.
func LoadBillingZone() (*time.Location, error) {
	loc, err := time.LoadLocation(BillingZone)
	if err != nil {
		return nil, gpurent.WrapError(gpurent.CodeInternal, err, "loading time zone %s", BillingZone)
	}
	return loc, nil
}

// NewBook returns a book of the given versions in the time zone loc (local
// days, off-peak windows and calendar months are taken there). Versions may
// come in any order; their Effective instants must be distinct whole seconds
// and their IDs distinct.
func NewBook(loc *time.Location, versions ...Version) (*Book, error) {
	if loc == nil {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "price book needs a time zone")
	}
	if len(versions) == 0 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "price book needs at least one version")
	}
	vs := make([]Version, 0, len(versions))
	for _, v := range versions {
		c, err := cleanVersion(v)
		if err != nil {
			return nil, err
		}
		vs = append(vs, c)
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].Effective.Before(vs[j].Effective) })
	ids := make(map[string]bool, len(vs))
	for i, v := range vs {
		if i > 0 && v.Effective.Equal(vs[i-1].Effective) {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "price versions %q and %q have the same effective time", vs[i-1].ID, v.ID)
		}
		if ids[v.ID] {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "price version id %q is repeated", v.ID)
		}
		ids[v.ID] = true
	}
	return &Book{loc: loc, versions: vs}, nil
}

// cleanVersion validates v and returns a private copy in UTC.
func cleanVersion(v Version) (Version, error) {
	if v.Effective.IsZero() || v.Effective.Nanosecond() != 0 {
		return Version{}, gpurent.Errorf(gpurent.CodeInvalid, "price version %q needs an effective time in whole seconds", v.ID)
	}
	if err := v.Rule.Validate(); err != nil {
		return Version{}, err
	}
	c := Version{ID: v.ID, Effective: v.Effective.UTC(), Rule: v.Rule, Types: make(map[string]Prices, len(v.Types))}
	if c.ID == "" {
		c.ID = c.Effective.Format(time.RFC3339)
	}
	for id, p := range v.Types {
		if id == "" {
			return Version{}, gpurent.Errorf(gpurent.CodeInvalid, "price version %q has a GPU type with no id", c.ID)
		}
		if err := p.Validate(); err != nil {
			return Version{}, gpurent.WrapError(gpurent.CodeInvalid, err, "price version %q, GPU type %s: %s", c.ID, id, gpurent.ErrorMessage(err))
		}
		c.Types[id] = p
	}
	return c, nil
}

// DefaultBook returns a one-version book in Asia/Shanghai, effective at
// effective, with the default off-peak rule (22:00–08:00 and weekends) and
// DefaultPrices for each type: off-peak = ⌈peak × 70%⌉, academic = ⌈list ×
// 80%⌉ (on the off-peak price in the off-peak window, and on each package
// price), no-GPU = 10 fen per instance-hour.
func DefaultBook(types []gpurent.GPUType, effective time.Time) (*Book, error) {
	loc, err := LoadBillingZone()
	if err != nil {
		return nil, err
	}
	v := Version{ID: "default", Effective: effective, Rule: DefaultRule(), Types: make(map[string]Prices, len(types))}
	for _, t := range types {
		if _, dup := v.Types[t.ID]; dup {
			return nil, gpurent.Errorf(gpurent.CodeInvalid, "GPU type %s is listed twice", t.ID)
		}
		v.Types[t.ID] = DefaultPrices(t)
	}
	return NewBook(loc, v)
}

// Amend returns a new book with v added. A price change applies from its
// effective time and never retroactively: v.Effective must not be before
// now, and must be after every existing version.
func (b *Book) Amend(v Version, now time.Time) (*Book, error) {
	if v.Effective.Before(now) {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "price version %q would take effect at %s, before now (%s): price changes are never retroactive",
			v.ID, v.Effective.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if last := b.versions[len(b.versions)-1]; !v.Effective.After(last.Effective) {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "price version %q must take effect after the latest version %q (%s)",
			v.ID, last.ID, last.Effective.Format(time.RFC3339))
	}
	return NewBook(b.loc, append(b.Versions(), v)...)
}

// Location returns the book's time zone.
func (b *Book) Location() *time.Location { return b.loc }

// Versions returns copies of the versions, oldest first.
func (b *Book) Versions() []Version {
	out := make([]Version, len(b.versions))
	for i, v := range b.versions {
		out[i] = v
		out[i].Types = make(map[string]Prices, len(v.Types))
		for id, p := range v.Types {
			out[i].Types[id] = p
		}
	}
	return out
}

// index returns the index of the version in force at t, or -1 before the
// first one.
func (b *Book) index(t time.Time) int {
	return sort.Search(len(b.versions), func(i int) bool { return b.versions[i].Effective.After(t) }) - 1
}

// version returns the version in force at t.
func (b *Book) version(t time.Time) (int, error) {
	i := b.index(t)
	if i < 0 {
		return -1, gpurent.Errorf(gpurent.CodeInvalid, "no price list is in force at %s (the first takes effect at %s)",
			t.UTC().Format(time.RFC3339), b.versions[0].Effective.Format(time.RFC3339))
	}
	return i, nil
}

// PricesAt returns the prices of a GPU type in force at t, and the id of
// their version.
func (b *Book) PricesAt(typeID string, t time.Time) (Prices, string, error) {
	i, err := b.version(t)
	if err != nil {
		return Prices{}, "", err
	}
	v := &b.versions[i]
	p, ok := v.Types[typeID]
	if !ok {
		return Prices{}, "", errNoType(typeID, v)
	}
	return p, v.ID, nil
}

func errNoType(typeID string, v *Version) error {
	return gpurent.Errorf(gpurent.CodeNotFound, "GPU type %s has no prices in price list %q", typeID, v.ID)
}
