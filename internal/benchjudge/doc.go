// Package benchjudge holds the pure logic of the compute transparency report
// (issue #7): the reference figures each GPU type is compared with (an
// embedded, sourced data file), the record a benchmark program emits for one
// run, the statistics over a card's runs, and the verdict that judges a card
// against the fleet median of its own type.
//
// A card is judged against its peers only: PASS at 0.95 of the fleet median of
// the same type, probe and setup or more, WARN from 0.90, FAIL below 0.90, and
// a FAIL stands only once a re-run confirms it. The ratios to the dense spec and
// to a healthy reference measurement are reported beside the verdict, never
// judged, because harnesses and boards move them by more than a bad card does.
//
// The package does no I/O beyond reading what it is given and imports only the
// root package and the standard library. docs/transparency.md describes the
// record schema and the rules for operators.
package benchjudge
