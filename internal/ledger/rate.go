package ledger

import (
	"math"
	"time"

	"github.com/gpurent/gpurent"
)

// Rate is a burn rate: Fen spent every Per, an exact rational (a GPU at 521
// fen per hour is Rate{521, time.Hour}; a volume at 30 fen per day is
// Rate{30, 24 * time.Hour}). Per is a whole number of seconds.
type Rate struct {
	Fen int64
	Per time.Duration
}

// PerHour is a rate of fen per hour.
func PerHour(fen int64) Rate { return Rate{Fen: fen, Per: time.Hour} }

// PerDay is a rate of fen per day.
func PerDay(fen int64) Rate { return Rate{Fen: fen, Per: 24 * time.Hour} }

// seconds validates r and returns its period in seconds.
func (r Rate) seconds() (int64, error) {
	if r.Fen < 0 || r.Per <= 0 || r.Per%time.Second != 0 {
		return 0, gpurent.Errorf(gpurent.CodeInvalid,
			"ledger: a rate needs fen >= 0 and a period of whole seconds, got %d fen per %s", r.Fen, r.Per)
	}
	return int64(r.Per / time.Second), nil
}

// BurnRate adds rates exactly: the result's period is the least common
// multiple of theirs (in seconds), reduced. No rates, or only zero rates,
// give a zero rate. It answers CodeInvalid for a malformed rate or a sum
// that does not fit in an int64.
func BurnRate(rates ...Rate) (Rate, error) {
	num, den := int64(0), int64(1)
	for _, r := range rates {
		per, err := r.seconds()
		if err != nil {
			return Rate{}, err
		}
		if r.Fen == 0 {
			continue
		}
		// num/den + r.Fen/per over l = lcm(den, per).
		g := gcd(den, per)
		l, ok := mulDivFloor(den, per, g)
		if !ok || l > math.MaxInt64/int64(time.Second) {
			return Rate{}, overflowRate()
		}
		a, ok1 := mulDivFloor(num, l, den)
		b, ok2 := mulDivFloor(r.Fen, l, per)
		s, ok3 := addFen(a, b)
		if !ok1 || !ok2 || !ok3 {
			return Rate{}, overflowRate()
		}
		num, den = s, l
		if g := gcd(num, den); g > 1 {
			num, den = num/g, den/g
		}
	}
	if num == 0 {
		return Rate{Per: time.Second}, nil
	}
	return Rate{Fen: num, Per: time.Duration(den) * time.Second}, nil
}

func overflowRate() error {
	return gpurent.Errorf(gpurent.CodeInvalid, "ledger: burn rate out of range")
}

// NoLimit is the runway of a wallet that burns nothing.
const NoLimit int64 = math.MaxInt64

// Runway is how many whole seconds spendableFen lasts at rate r:
// floor(spendable × per seconds / fen), in exact integer arithmetic. It is 0
// when nothing is spendable and NoLimit when the rate is zero (or the
// runway does not fit in an int64). A malformed rate has runway 0, so that a
// caller's bug stops an instance rather than letting it run unpaid.
func Runway(spendableFen int64, r Rate) int64 {
	per, err := r.seconds()
	if err != nil || spendableFen <= 0 {
		return 0
	}
	if r.Fen == 0 {
		return NoLimit
	}
	s, ok := mulDivFloor(spendableFen, per, r.Fen)
	if !ok {
		return NoLimit
	}
	return s
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
