// Package sla is the pure SLA credit calculator of gpurent and the source of
// its published service terms. It does no I/O, reads no clock and keeps no
// state; it imports only the standard library and the root package. The
// rules are those of shared/reference/billing.md ("SLA and automatic
// compensation").
//
// # Terms
//
// Terms hold every number of the SLA: the hour rule's threshold, the
// incident credit's ceiling, the monthly availability tiers, the monthly
// cap, the credits' expiry, the posting deadline, whether a degraded GPU
// counts as down, and the closed set of exclusions. DefaultTerms are the
// product's defaults; Validate checks an operator's terms; ParseTerms reads
// them from JSON. Markdown renders the public SLA page from the same Terms
// in English or Simplified Chinese, so the page and the code cannot
// disagree; docs/sla.md is that rendering of DefaultTerms, held to it by a
// test.
//
// # Credits
//
// All amounts are int64 fen. Each credit is computed exactly (128-bit
// integer arithmetic, no floats) and rounded half-up once.
//
//   - IncidentCredit: a GPU or host failure earns min(time since the last
//     power-on, IncidentCreditMaxHours) × the affected GPUs' hourly price.
//   - HourRuleHours: the clock hours (in the billing zone) in which down time
//     totals more than HourRuleMinutes; such an hour is not charged at all.
//   - AvailabilityBP and TierCredit: the month's availability in basis points
//     (floored, so a fraction below a threshold stays below it) and the
//     best tier's percentage of the instance's monthly charge.
//   - CapCredit: what may still be posted in the month under the cap, given
//     what was already credited; never negative.
//
// # Intervals
//
// Interval is a half-open [From, To) span of time. Merge, Clip, Intersect
// and Total are the set operations the calculator is built on; they return
// sorted, disjoint, non-empty intervals in UTC and never modify their
// input.
//
// # Time
//
// Clock hours and calendar months are taken in the billing zone,
// Asia/Shanghai (LoadZone; tzdata is embedded, never a fixed +8). Functions
// that take a *time.Location panic on nil: a missing zone is a programming
// error that would silently move every hour. Results are UTC instants.
package sla
