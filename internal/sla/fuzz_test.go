package sla_test

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/sla"
)

// FuzzIncidentCredit holds IncidentCredit to the exact rational oracle, to
// zero for a fault not after the power-on, and to monotonicity in time.
func FuzzIncidentCredit(f *testing.F) {
	f.Add(int64(1740963600), int64(12000*time.Second), int64(1042), 24)
	f.Add(int64(0), int64(time.Nanosecond), int64(math.MaxInt64), 24)
	f.Add(int64(-62135596800), int64(-time.Hour), int64(5), 1)
	f.Add(int64(253402300799), int64(math.MaxInt64), int64(math.MaxInt64), 744)
	f.Fuzz(func(t *testing.T, startUnix, dur, price int64, maxHours int) {
		terms := sla.DefaultTerms()
		terms.IncidentCreditMaxHours = maxHours
		on := time.Unix(startUnix, 0)
		fault := on.Add(time.Duration(dur))
		got := sla.IncidentCredit(terms, on, fault, price)
		if got < 0 {
			t.Fatalf("negative credit %d", got)
		}
		if !fault.After(on) || price <= 0 || maxHours <= 0 {
			if got != 0 {
				t.Fatalf("credit %d for a fault at %v after power-on, price %d, %d h", got, fault.Sub(on), price, maxHours)
			}
			return
		}
		h := min(maxHours, sla.MaxIncidentCreditHours)
		want := oracleIncident(h, fault.Sub(on), price)
		if want.IsInt64() && got != want.Int64() {
			t.Fatalf("IncidentCredit(%v, %d, %d h) = %d, want %v", fault.Sub(on), price, h, got, want)
		}
		if !want.IsInt64() && got != math.MaxInt64 {
			t.Fatalf("IncidentCredit(%v, %d) = %d, want saturation", fault.Sub(on), price, got)
		}
		if later := sla.IncidentCredit(terms, on, fault.Add(time.Second), price); later < got {
			t.Fatalf("credit fell from %d to %d a second later", got, later)
		}
	})
}

// decodeIntervals reads intervals as pairs of little-endian uint16 minute
// offsets from base.
func decodeIntervals(data []byte, base time.Time) []sla.Interval {
	var out []sla.Interval
	for len(data) >= 4 {
		a, b := binary.LittleEndian.Uint16(data), binary.LittleEndian.Uint16(data[2:])
		out = append(out, sla.Interval{From: base.Add(time.Duration(a) * time.Second), To: base.Add(time.Duration(b) * time.Second)})
		data = data[4:]
	}
	return out
}

// FuzzAvailability holds AvailabilityBP and HourRuleHours to their bounds
// and to each other's definitions on arbitrary interval sets.
func FuzzAvailability(f *testing.F) {
	f.Add([]byte{0, 0, 0x10, 0x0e}, []byte{0x10, 0, 0x20, 0})
	f.Add([]byte{}, []byte{1, 0, 2, 0})
	f.Add([]byte{0xff, 0xff, 0, 0, 1, 0, 0xff, 0xff}, []byte{0, 0, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, svcData, downData []byte) {
		sh := shanghai(t)
		base := time.Date(2025, 1, 31, 15, 0, 0, 0, time.UTC) // 23:00 local, month end
		svc, down := decodeIntervals(svcData, base), decodeIntervals(downData, base)
		bp := sla.AvailabilityBP(svc, down)
		if bp < 0 || bp > 10000 {
			t.Fatalf("availability %d outside [0, 10000]", bp)
		}
		total, lost := sla.Total(svc), sla.Total(sla.Intersect(down, svc))
		if total == 0 {
			if bp != 10000 {
				t.Fatalf("nothing in service but availability %d", bp)
			}
		} else if want := int((total - lost) * 10000 / total); bp != want {
			t.Fatalf("availability %d, want %d", bp, want)
		}
		if with := sla.AvailabilityBP(svc, append(down, svc...)); with != 0 && total > 0 {
			t.Fatalf("all in-service time down but availability %d", with)
		}
		terms := sla.DefaultTerms()
		hours := sla.HourRuleHours(terms, down, sh)
		var sum time.Duration
		for i, h := range hours {
			if i > 0 && !h.After(hours[i-1]) {
				t.Fatalf("hours not strictly increasing: %v", hours)
			}
			if h.Minute() != 0 || h.Second() != 0 || h.Nanosecond() != 0 {
				t.Fatalf("hour %v is not a Shanghai clock hour", h)
			}
			d := sla.Total(sla.Clip(down, sla.Interval{From: h, To: h.Add(time.Hour)}))
			if d <= 6*time.Minute {
				t.Fatalf("hour %v with %v down was voided", h, d)
			}
			sum += d
		}
		if sum > sla.Total(down) {
			t.Fatalf("voided hours hold %v of down time, more than the %v there is", sum, sla.Total(down))
		}
	})
}
