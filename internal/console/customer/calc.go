package customer

import (
	"math/big"
	"strconv"
	"strings"

	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/rating"
)

// The rent-or-buy calculator. rentOrBuy is a pure function of its input:
// the console's page and its JSON twin both call it, and its unit tests
// hold its properties. Money is int64 fen; every product is formed
// exactly (math/big) and each line is rounded half-up once.

// calcDaysPerMonth is the calculator's month: 30 days, the monthly
// package's period, so "months" means the same on both sides.
const calcDaysPerMonth = 30

// calcGPUsPerServer is the server the buy side is priced in: the seed's
// 8-GPU server.
const calcGPUsPerServer = 8

// Bounds of the calculator's inputs: they keep every figure meaningful
// and every total far inside int64.
const (
	calcMaxCount       = 4096
	calcMaxMonths      = 60
	calcMaxHoursTenths = 240
	calcMaxWatts       = 5000
	calcMaxPriceFen    = 10_000_000_000 // 100 million CNY for one GPU or server
	calcMaxKWhFen      = 10_000         // 100 CNY per kWh
	calcMaxHostingFen  = 1_000_000_000  // 10 million CNY per server-month
	calcMaxResalePct   = 90
)

// rentOrBuyInput is what the calculator is asked.
type rentOrBuyInput struct {
	Count       int // GPUs
	HoursTenths int // hours a day the GPUs work, in tenths (1..240)
	Months      int // project length in 30-day months (1..60)

	// Rent side, per GPU, from the price book in force.
	PeakFen        int64 // hourly plan, peak, per GPU-hour
	OffPeakFen     int64 // hourly plan, off-peak, per GPU-hour
	MonthlyFen     int64 // monthly package, per GPU per 30 days
	OffPeakPercent int   // share of the working hours at the off-peak price

	// Buy side.
	GPUPriceFen       int64 // one GPU
	ServerPriceFen    int64 // a complete 8-GPU server, its GPUs included
	Watts             int   // per GPU while it works
	KWhFen            int64 // electricity per kWh
	HostingFen        int64 // rack, network and care per server per month
	DepreciationYears int   // 2 or 3
	ResalePercent     int   // value left at the end of depreciation
}

// rentOrBuyResult is the calculator's answer for the whole project.
type rentOrBuyResult struct {
	GPUHoursTenths int64 // GPU-hours worked over the project, in tenths
	Servers        int64 // 8-GPU servers bought

	RentHourlyFen  int64 // hourly plan at the off-peak share
	RentPackageFen int64 // monthly packages for the whole project
	RentFen        int64 // the cheaper of the two
	RentPackage    bool  // the package is the cheaper (ties: hourly)

	CapexFen        int64 // paid up front: GPUs and the rest of the servers
	ResaleFen       int64 // value left after the depreciation period
	DepreciationFen int64 // the project's share of capex − resale
	PowerFen        int64
	HostingFen      int64
	BuyFen          int64 // depreciation + power + hosting

	// BuyCheaper says buying costs less than renting over the project.
	BuyCheaper bool
	// BreakEvenFrom and BreakEvenTo are the range of hours per day (in
	// tenths) over which buying costs no more than renting for a project
	// of this length; -1 and -1 when renting is cheaper at any hours.
	// The range may end before 24 h: above it the monthly package, a flat
	// price, beats buying's growing power bill.
	BreakEvenFrom, BreakEvenTo int
}

// calcRound divides a non-negative exact amount by den, rounding half-up.
func calcRound(num *big.Int, den int64) int64 {
	d := big.NewInt(den)
	q, r := new(big.Int).QuoRem(num, d, new(big.Int))
	if r.Lsh(r, 1).Cmp(d) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// calcMul multiplies non-negative integers exactly.
func calcMul(vs ...int64) *big.Int {
	p := big.NewInt(1)
	for _, v := range vs {
		p.Mul(p, big.NewInt(v))
	}
	return p
}

// rentOrBuy prices the project both ways. The buy side is amortized:
// the hardware loses value on a straight line from its price to the
// resale share over the depreciation period, and the project bears the
// loss of its months (after the period, nothing more); power is paid for
// the working hours only (idle draw and cooling are left to the hosting
// figure); hosting is paid per server per month.
func rentOrBuy(in rentOrBuyInput) rentOrBuyResult {
	r := rentOrBuyResult{BreakEvenFrom: -1, BreakEvenTo: -1}
	r.fill(in)
	for h := 1; h <= calcMaxHoursTenths; h++ {
		at := in
		at.HoursTenths = h
		var x rentOrBuyResult
		x.fill(at)
		if x.BuyFen <= x.RentFen {
			if r.BreakEvenFrom < 0 {
				r.BreakEvenFrom = h
			}
			r.BreakEvenTo = h
		}
	}
	return r
}

// fill computes every total of in except the break-even range.
func (r *rentOrBuyResult) fill(in rentOrBuyInput) {
	days := int64(in.Months) * calcDaysPerMonth
	count := int64(in.Count)
	r.GPUHoursTenths = count * int64(in.HoursTenths) * days
	r.Servers = (count + calcGPUsPerServer - 1) / calcGPUsPerServer

	// Rent: the hourly plan at the share of off-peak hours, or packages.
	blend := in.PeakFen*int64(100-in.OffPeakPercent) + in.OffPeakFen*int64(in.OffPeakPercent)
	r.RentHourlyFen = calcRound(calcMul(r.GPUHoursTenths, blend), 10*100)
	r.RentPackageFen = count * int64(in.Months) * in.MonthlyFen
	r.RentFen, r.RentPackage = r.RentHourlyFen, false
	if r.RentPackageFen < r.RentHourlyFen {
		r.RentFen, r.RentPackage = r.RentPackageFen, true
	}

	// Buy: GPUs, and for every started server what it costs beyond its
	// eight GPUs (chassis, CPUs, memory, network).
	rest := max(0, in.ServerPriceFen-calcGPUsPerServer*in.GPUPriceFen)
	r.CapexFen = count*in.GPUPriceFen + r.Servers*rest
	r.ResaleFen = calcRound(calcMul(r.CapexFen, int64(in.ResalePercent)), 100)
	period := int64(max(in.DepreciationYears, 1)) * 12
	used := min(int64(in.Months), period)
	r.DepreciationFen = calcRound(calcMul(r.CapexFen-r.ResaleFen, used), period)
	// W × tenths of hours × fen/kWh / (1000 W/kW × 10 tenths/h).
	r.PowerFen = calcRound(calcMul(r.GPUHoursTenths, int64(in.Watts), in.KWhFen), 1000*10)
	r.HostingFen = r.Servers * in.HostingFen * int64(in.Months)
	r.BuyFen = r.DepreciationFen + r.PowerFen + r.HostingFen
	r.BuyCheaper = r.BuyFen < r.RentFen
}

// calcSeries is the cumulative cost of each way at the end of every month
// of the project, month 0 (nothing spent) first: the chart's lines.
type calcSeries struct {
	Months     []int
	RentHourly []int64
	RentPkg    []int64
	Buy        []int64
}

// rentOrBuySeries computes the totals for each month 0..in.Months with the
// same function, so the last point is the project's total.
func rentOrBuySeries(in rentOrBuyInput) calcSeries {
	s := calcSeries{}
	for m := 0; m <= in.Months; m++ {
		at := in
		at.Months = m
		var x rentOrBuyResult
		x.fill(at)
		s.Months = append(s.Months, m)
		s.RentHourly = append(s.RentHourly, x.RentHourlyFen)
		s.RentPkg = append(s.RentPkg, x.RentPackageFen)
		s.Buy = append(s.Buy, x.BuyFen)
	}
	return s
}

// calcOffPeakAllDay is the share, in percent rounded half-up, of a week
// that is off-peak under rule: what a GPU working around the clock gets.
// The daily window counts on every day; with Weekends, Saturday and Sunday
// count whole.
func calcOffPeakAllDay(rule rating.Rule) int {
	window := int64(rule.End - rule.Start)
	if window < 0 {
		window += 86400
	}
	weekend := window
	if rule.Weekends {
		weekend = 86400
	}
	off := 5*window + 2*weekend
	return int(calcRound(big.NewInt(off*100), 7*86400))
}

// calcPurchase is a GPU type's default purchase figures for the
// calculator, and where they come from.
type calcPurchase struct {
	GPUFen, ServerFen int64
	// Seed: the figures are the seed article's; otherwise they are the
	// project's own rough estimates, to be replaced by a real quote.
	Seed bool
}

// calcPurchaseDefaults are the default purchase prices per GPU type. The
// H100's are the seed article's ("an H100 costs over 300,000 CNY; an
// 8-GPU server over 2,600,000"); the others are estimates. Every figure is
// editable on the page.
func calcPurchaseDefaults(typeID string) (calcPurchase, bool) {
	switch typeID {
	case "h100-80g-sxm":
		return calcPurchase{GPUFen: 300_000_00, ServerFen: 2_600_000_00, Seed: true}, true
	case "a100-80g-sxm":
		return calcPurchase{GPUFen: 120_000_00, ServerFen: 1_150_000_00}, true
	case "rtx4090-24g":
		return calcPurchase{GPUFen: 18_000_00, ServerFen: 220_000_00}, true
	}
	return calcPurchase{}, false
}

// calcParseYuan reads an amount of yuan as typed ("300000", "2,600,000",
// "2 600 000", "0.8", "¥1,234.56") into fen with web.ParseYuan. At most two
// decimals; no sign.
func calcParseYuan(s string) (int64, bool) {
	fen, problem := web.ParseYuan(strings.NewReplacer("，", "", " ", "").Replace(s))
	return fen, problem == web.YuanOK
}

// calcParseTenths reads hours like "8", "8.5" or "0.1" into tenths.
func calcParseTenths(s string) (int, bool) {
	s = strings.TrimSpace(s)
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || len(whole) > 4 || len(frac) > 1 || dot && frac == "" {
		return 0, false
	}
	n := 0
	for _, c := range whole + frac {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	w, _ := strconv.Atoi(whole)
	n = w * 10
	if frac != "" {
		n += int(frac[0] - '0')
	}
	return n, true
}

// calcFormatTenths writes tenths of hours: "8", "8.5".
func calcFormatTenths(t int) string {
	if t%10 == 0 {
		return strconv.Itoa(t / 10)
	}
	return strconv.Itoa(t/10) + "." + strconv.Itoa(t%10)
}
