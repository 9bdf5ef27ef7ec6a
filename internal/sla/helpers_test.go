package sla_test

import (
	"math/big"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/sla"
)

// shanghai loads the billing zone or fails the test.
func shanghai(t testing.TB) *time.Location {
	t.Helper()
	loc, err := sla.LoadZone()
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// zone loads a named zone from the embedded tzdata or fails the test.
func zone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// at parses "2006-01-02 15:04:05" in loc.
func at(t testing.TB, loc *time.Location, s string) time.Time {
	t.Helper()
	x, err := time.ParseInLocation(time.DateTime, s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// iv builds an interval from two local times.
func iv(t testing.TB, loc *time.Location, from, to string) sla.Interval {
	t.Helper()
	return sla.Interval{From: at(t, loc, from), To: at(t, loc, to)}
}

// oracleIncident is the incident credit by exact rational arithmetic.
func oracleIncident(maxHours int, d time.Duration, hourlyFen int64) *big.Int {
	if d <= 0 || hourlyFen <= 0 {
		return new(big.Int)
	}
	d = min(d, time.Duration(maxHours)*time.Hour)
	x := new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(int64(d)), big.NewInt(hourlyFen)), big.NewInt(int64(time.Hour)))
	return bigRoundHalfUp(x)
}

// bigRoundHalfUp rounds a non-negative rational half-up without limits.
func bigRoundHalfUp(x *big.Rat) *big.Int {
	num := new(big.Int).Mul(x.Num(), big.NewInt(2))
	num.Add(num, x.Denom())
	return num.Quo(num, new(big.Int).Mul(x.Denom(), big.NewInt(2)))
}
