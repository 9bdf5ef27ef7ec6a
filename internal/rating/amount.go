package rating

import (
	"math/big"
	"math/bits"

	"github.com/gpurent/gpurent"
)

// Denominator is the fixed denominator of every Amount: 3,600 seconds per hour
// times 10^12, the scale of the three basis-point factors (degraded listing,
// promotion and contract, each out of 10,000) that may multiply a price.
// Every exact amount the engine produces is an integer number of
// 1/Denominator fen.
const Denominator = 3600 * 1_000_000_000_000

// MaxAmountFen bounds every Amount, so that Floor and RoundHalfUp always fit
// in an int64. The input bounds (MaxRateFen, MaxGPUCount, MaxLineSeconds,
// MaxPackagePeriods) keep any single line far below it; only sums of absurd
// size reach it, and they are refused with an error.
const MaxAmountFen = 1 << 62

// maxNum returns MaxAmountFen × Denominator as a 128-bit number.
func maxNum() (hi, lo uint64) { return bits.Mul64(MaxAmountFen, Denominator) }

// Amount is an exact, non-negative amount of money: a 128-bit integer
// numerator over the fixed Denominator, in fen. Its zero value is zero fen.
// Amounts are values; they compare with Cmp and add with Add. Rated amounts
// are never negative: credits and refunds are separate postings of positive
// amounts, so the type has no sign.
type Amount struct{ hi, lo uint64 }

// AmountOf returns the exact amount of n whole fen, 0 ≤ n ≤ MaxAmountFen.
func AmountOf(n int64) (Amount, error) {
	if n < 0 || n > MaxAmountFen {
		return Amount{}, gpurent.Errorf(gpurent.CodeInvalid, "amount of %d fen is out of range [0, %d]", n, int64(MaxAmountFen))
	}
	hi, lo := bits.Mul64(uint64(n), Denominator)
	return Amount{hi: hi, lo: lo}, nil
}

// amountFromWide returns the amount a × (bhi·2^64 + blo) / Denominator fen,
// or an error if it exceeds MaxAmountFen (or 128 bits on the way).
func amountFromWide(a, bhi, blo uint64) (Amount, error) {
	h1, l1 := bits.Mul64(a, blo)
	if bhi == 0 { // the usual case: a price of up to about 18 million fen
		x := Amount{hi: h1, lo: l1}
		if !x.inRange() {
			return Amount{}, errTooLarge()
		}
		return x, nil
	}
	h2, l2 := bits.Mul64(a, bhi)
	hi, carry := bits.Add64(l2, h1, 0)
	x := Amount{hi: hi, lo: l1}
	if h2 != 0 || carry != 0 || !x.inRange() {
		return Amount{}, errTooLarge()
	}
	return x, nil
}

// wideLess reports whether the 128-bit a is below the 128-bit b.
func wideLess(ahi, alo, bhi, blo uint64) bool { return ahi < bhi || (ahi == bhi && alo < blo) }

func errTooLarge() error {
	return gpurent.Errorf(gpurent.CodeInvalid, "amount exceeds %d fen", int64(MaxAmountFen))
}

func (a Amount) inRange() bool {
	mhi, mlo := maxNum()
	return a.hi < mhi || (a.hi == mhi && a.lo <= mlo)
}

// Add returns a + b, or an error if the sum exceeds MaxAmountFen.
func (a Amount) Add(b Amount) (Amount, error) {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, c2 := bits.Add64(a.hi, b.hi, c)
	s := Amount{hi: hi, lo: lo}
	if c2 != 0 || !s.inRange() {
		return Amount{}, errTooLarge()
	}
	return s, nil
}

// Cmp compares a and b: -1 if a < b, 0 if equal, +1 if a > b.
func (a Amount) Cmp(b Amount) int {
	switch {
	case a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo):
		return -1
	case a == b:
		return 0
	default:
		return 1
	}
}

// IsZero reports whether a is zero fen.
func (a Amount) IsZero() bool { return a.hi == 0 && a.lo == 0 }

// divmod returns the whole fen and the remainder in 1/Denominator fen. The
// range bound guarantees hi < Denominator, which bits.Div64 requires.
func (a Amount) divmod() (q, r uint64) { return bits.Div64(a.hi, a.lo, Denominator) }

// Floor returns a rounded down to the whole fen.
func (a Amount) Floor() int64 {
	q, _ := a.divmod()
	return int64(q)
}

// RoundHalfUp returns a rounded to the nearest whole fen, halves up
// (x.5 fen becomes x+1). This is the one rounding a line gets.
func (a Amount) RoundHalfUp() int64 {
	q, r := a.divmod()
	if r >= Denominator-r { // 2r ≥ Denominator without overflow
		q++
	}
	return int64(q)
}

// Numerator returns the numerator over Denominator as a big.Int.
func (a Amount) Numerator() *big.Int {
	n := new(big.Int).SetUint64(a.hi)
	n.Lsh(n, 64)
	return n.Or(n, new(big.Int).SetUint64(a.lo))
}

// Rat returns a as an exact rational number of fen.
func (a Amount) Rat() *big.Rat {
	return new(big.Rat).SetFrac(a.Numerator(), big.NewInt(Denominator))
}

// String returns the exact amount in fen as a reduced fraction, e.g. "371/2"
// for 185.5 fen, or an integer when it is whole.
func (a Amount) String() string { return a.Rat().RatString() }
