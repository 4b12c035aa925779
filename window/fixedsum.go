package window

import "math/bits"

// fixedSum is a sum of values in [0, 1] kept as an exact 128-bit integer
// of units of 2^-62: adding is exact and so the same in any order. With
// several ingest goroutines the events of a bucket arrive in no fixed
// order, and a float64 sum would differ in its last bits from one run to
// the next. Each value is truncated to a multiple of 2^-62 (exact for
// values ≥ 2^-10; below, off by less than 2^-62).
type fixedSum struct{ hi, lo uint64 }

const fixedOne = 1 << 62

func (s *fixedSum) add(v float64) {
	var carry uint64
	s.lo, carry = bits.Add64(s.lo, uint64(v*fixedOne), 0)
	s.hi += carry
}

// addUnits adds u units of 2^-62, a value add would have truncated to.
func (s *fixedSum) addUnits(u uint64) {
	var carry uint64
	s.lo, carry = bits.Add64(s.lo, u, 0)
	s.hi += carry
}

// sub takes o away from s (o was merged into s before).
func (s *fixedSum) sub(o fixedSum) {
	var borrow uint64
	s.lo, borrow = bits.Sub64(s.lo, o.lo, 0)
	s.hi -= o.hi + borrow
}

func (s *fixedSum) merge(o fixedSum) {
	var carry uint64
	s.lo, carry = bits.Add64(s.lo, o.lo, 0)
	s.hi += o.hi + carry
}

// float is the sum, rounded to a float64.
func (s fixedSum) float() float64 {
	return float64(s.hi)*(1<<64/fixedOne) + float64(s.lo)/fixedOne
}
