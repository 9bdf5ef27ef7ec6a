// Package rating is the pure rating engine of billing: a versioned price
// book, the splitting of usage intervals at every price boundary, exact
// rating of the pieces, live-debit arithmetic and quotes. It does no I/O,
// reads no clock and keeps no state; it imports only the standard library
// and the root package. The rules are those of shared/reference/billing.md.
//
// # Price book
//
// A Book holds Versions, each a complete price list in force from its
// Effective instant (inclusive) until the next one: the off-peak Rule and,
// per GPU type, Prices in int64 fen — the hourly plan's peak (list),
// off-peak, academic peak and academic off-peak prices per GPU-hour, the
// daily/weekly/monthly package prices per GPU per period and their academic
// prices, and the no-GPU token price per instance-hour. Off-peak and academic
// prices are stored as their own integer prices. Book.Amend adds a version
// and refuses one effective before "now" (passed in): a change never applies
// retroactively. DefaultBook builds the demo book: off-peak = ⌈peak × 70%⌉,
// academic = ⌈list × 80%⌉ for every list price (academic off-peak is 80% of
// the off-peak price), no-GPU = 10 fen per hour, the default Rule, zone
// Asia/Shanghai (tzdata embedded, never a fixed +8).
//
// The Rule: an instant is off-peak when its local clock time is in the daily
// window [Start, End) (default 22:00–08:00, wrapping midnight) or, with
// Weekends, its local day is a Saturday or Sunday. Boundaries are half-open.
//
// # Segments
//
// Split(book, type, start, end) cuts [start, end) — UTC instants in whole
// seconds — exactly at every off-peak boundary, every version boundary and
// every calendar-month boundary in the book's zone (the statement period).
// The Segments never overlap, leave no gap, and each carries one rate: its
// off-peak state, version, period and the prices of its window. Rates are
// selected by usage time, never by the time of rating.
//
// The 60-second minimum per power-on is SplitRun: a run of 1–59 s becomes
// one segment, not cut at boundaries, with the rate of its start and
// MinimumTopUp seconds bringing it to 60 s billed. Longer runs split as
// Split does; a zero-length run costs nothing. Callers rate each power-on
// (each allocation run interval) with SplitRun, not a merged interval.
//
// # Rating
//
// Rate(segments, Terms) is a pure function giving one Line per segment:
//
//	rate  = the window's academic price if Terms.Academic, else its list
//	        price (no-GPU mode, GPUCount 0: the no-GPU price for one unit)
//	exact = seconds × units × max(rate × (1−degraded) × (1−promotion) × (1−contract),
//	                              list × (1−degraded) × 50%) / 3600
//
// The academic step is the choice of the academic price; promotion and
// contract are basis points applied after it, in that order; the product
// is floored at 50% of the window's list price. Degraded (Terms.DegradedBps,
// from a GPU listing's price share: DegradedBpsOf) scales the list price of
// GPUs listed as degraded, so it scales the floor too; the no-GPU price is
// never scaled. Package plans rate their
// running time as Prepaid lines of zero; the package itself is RatePackage.
//
// Amounts are exact: an Amount is a 128-bit integer numerator over the fixed
// Denominator 3600 × 10^12 (three basis-point factors), so every line and
// every sum is exact with no
// floats and no math/big on the hot path (math/big is used only to print and
// to test). Input bounds (MaxRateFen, MaxGPUCount, MaxLineSeconds) keep a
// line far from the 128-bit limit; an out-of-range sum is an error.
// Line.Fen rounds half-up once per line. Total sums lines exactly, to round
// an invoice line made of several segments once; SumRounded sums rounded
// lines.
//
// # Live debits
//
// While a line is open, DebitSoFar(exact so far, debited) takes
// floor(exact) − debited; at the close FinalDebit takes RoundHalfUp(exact) −
// debited. The debits of a line sum to its rounded amount and the customer
// never owes more than 1 fen between debits.
//
// # Quotes
//
// Quote(book, type, count, start, duration, academic) rates a planned rental
// as usage would be rated, groups it into peak and off-peak lines (seconds,
// hours, rate, amount), totals it, and lists the daily/weekly/monthly
// package alternatives (periods needed to cover the duration; a month is 30
// days) with the cheapest way to pay. QuoteShare quotes GPUs listed as
// degraded at a price share: hourly only, each line showing the scaled
// rate.
//
// # Errors
//
// Bad input (non-whole seconds, end before start, no version in force,
// prices or terms out of range) is gpurent.CodeInvalid; a GPU type missing
// from the version in force is gpurent.CodeNotFound.
package rating
