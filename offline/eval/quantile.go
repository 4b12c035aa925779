package eval

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// exactQuantile is the q-quantile of vals, linearly interpolated between
// order statistics as the windows' sketches are (and numpy's default), but
// from the values themselves. It reorders vals. Selection rather than a
// sort: two order statistics cost O(n), where sorting ten million retrieved
// ΔS values would take a good part of the time budget.
func exactQuantile(vals []float64, q float64) float64 {
	n := len(vals)
	pos := q * float64(n-1)
	lo := math.Floor(pos)
	frac := pos - lo
	i := int(lo)
	v := selectNth(vals, i)
	if frac == 0 || i+1 >= n {
		return v
	}
	// After selection everything past i is at least v: the next order
	// statistic is their minimum.
	next := slices.Min(vals[i+1:])
	return v + (next-v)*frac
}

// selectNth returns the i-th smallest value of a (0-based) and leaves a
// partitioned around it: a[:i] ≤ a[i] ≤ a[i+1:]. Quickselect with a random
// pivot and a three-way partition, so runs of equal values (ΔS files hold
// many) and adversarial orders stay linear in expectation.
func selectNth(a []float64, i int) float64 {
	lo, hi := 0, len(a)
	for hi-lo > 32 {
		p := a[lo+rand.IntN(hi-lo)]
		lt, j, gt := lo, lo, hi
		for j < gt {
			switch x := a[j]; {
			case x < p:
				a[lt], a[j] = x, a[lt]
				lt++
				j++
			case x > p:
				gt--
				a[j], a[gt] = a[gt], x
			default:
				j++
			}
		}
		switch {
		case i < lt:
			hi = lt
		case i >= gt:
			lo = gt
		default:
			return p
		}
	}
	slices.Sort(a[lo:hi])
	return a[i]
}

// quantileOf is the probability of a quantile metric, read from its name
// ("delta_s_median", "delta_s_p90", "…_p99"): the registry keeps it to
// itself, and the names are part of the product's contract.
func quantileOf(name string) (float64, bool) {
	if strings.HasSuffix(name, "_median") {
		return 0.5, true
	}
	i := strings.LastIndex(name, "_p")
	if i < 0 {
		return 0, false
	}
	p, err := strconv.Atoi(name[i+2:])
	if err != nil || p <= 0 || p >= 100 {
		return 0, false
	}
	return float64(p) / 100, true
}

// values are ΔS values kept for exact quantiles, in blocks of fixed size:
// appending never copies what is there, where a growing array would copy
// it and fault in fresh memory at every doubling.
type values struct {
	blocks [][]float64
	n      int
}

const valueBlock = 1 << 15

func (v *values) add(xs []float64) {
	for len(xs) > 0 {
		if len(v.blocks) == 0 || len(v.blocks[len(v.blocks)-1]) == valueBlock {
			v.blocks = append(v.blocks, make([]float64, 0, valueBlock))
		}
		b := &v.blocks[len(v.blocks)-1]
		k := min(len(xs), valueBlock-len(*b))
		*b = append(*b, xs[:k]...)
		xs = xs[k:]
		v.n += k
	}
}

// appendTo appends the values to dst.
func (v *values) appendTo(dst []float64) []float64 {
	for _, b := range v.blocks {
		dst = append(dst, b...)
	}
	return dst
}
