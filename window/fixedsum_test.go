package window

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestFixedSumOrderFree: the same values added in any order, or split over
// buckets and merged, give the same float; it is the exact sum rounded
// (within one ulp), where a float64 running sum of the same values differs
// between orders.
func TestFixedSumOrderFree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, 100000)
	for i := range vals {
		switch i % 3 {
		case 0:
			vals[i] = float64(r.IntN(11)) / 10 // P@10
		case 1:
			vals[i] = float64(r.IntN(4)) / 3
		default:
			vals[i] = r.Float64()
		}
	}
	sum := func(vs []float64) (fixed, float float64) {
		var s fixedSum
		var f float64
		for _, v := range vs {
			s.add(v)
			f += v
		}
		return s.float(), f
	}
	want, floatA := sum(vals)
	exact := new(big.Float).SetPrec(200)
	for _, v := range vals {
		exact.Add(exact, new(big.Float).SetPrec(200).SetFloat64(v))
	}
	ex, _ := exact.Float64()
	if math.Abs(want-ex) > math.Abs(ex)*0x1p-52 {
		t.Fatalf("fixed sum %v, exact %v", want, ex)
	}
	floatsDiffer := false
	for range 5 {
		r.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
		got, floatB := sum(vals)
		if got != want {
			t.Fatalf("shuffled: fixed sum %v, first order %v", got, want)
		}
		floatsDiffer = floatsDiffer || floatB != floatA
		// Split into buckets and merged.
		var a, b fixedSum
		for i, v := range vals {
			if i%7 == 0 {
				a.add(v)
			} else {
				b.add(v)
			}
		}
		b.merge(a)
		if b.float() != want {
			t.Fatalf("merged: %v, want %v", b.float(), want)
		}
	}
	if !floatsDiffer {
		t.Log("float64 running sums happened to agree in every order")
	}
	// The ends of the range.
	var s fixedSum
	for range 1000 {
		s.add(1)
		s.add(0)
	}
	if s.float() != 1000 {
		t.Fatalf("1000 ones: %v", s.float())
	}
}
