package confseq

import "math"

// Fixed-sample intervals, for the offline comparison of two trace files
// (`shadoweval eval --baseline`, SPEC §5.3): both files are one look at a
// paired design, so a sequence's price for being read at any time need
// not be paid.

// TQuantile is Student's t quantile t_{df}(p), 1/2 ≤ p < 1, solved for
// from the CDF (the t density integrated by Simpson's rule) by bisection;
// the upper end of the last bracket is returned, so it is never short.
// df < 1 gives +Inf.
func TQuantile(p, df float64) float64 {
	if !(df >= 1) {
		return math.Inf(1)
	}
	lo, hi := 0.0, max(ZQuantile(p), 1.0)
	for tCDF(hi, df) < p {
		lo, hi = hi, 2*hi
	}
	for hi-lo > 1e-9*hi {
		mid := (lo + hi) / 2
		if tCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// tCDF is P(T ≤ x), x ≥ 0, for Student's t with df degrees of freedom:
// ½ plus the density's integral from 0 to x by Simpson's rule, in the
// variable u = atan(x/√df), where the integrand cos^{df−1}(u) is smooth
// and bounded even for the heaviest tails.
func tCDF(x, df float64) float64 {
	lg1, _ := math.Lgamma((df + 1) / 2)
	lg2, _ := math.Lgamma(df / 2)
	// f(t)dt with t = √df·tan(u) is c·cos^{df−1}(u) du, c = Γ((df+1)/2)/(√π·Γ(df/2)).
	c := math.Exp(lg1-lg2) / math.Sqrt(math.Pi)
	end := math.Atan(x / math.Sqrt(df))
	const n = 2000
	h := end / n
	f := func(u float64) float64 { return math.Pow(math.Cos(u), df-1) }
	sum := f(0) + f(end)
	for i := 1; i < n; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		sum += w * f(float64(i)*h)
	}
	return 0.5 + c*sum*h/3
}

// PairedRatioDiff compares two ratios over the same clusters (the
// questions both files answer): cluster q has numerator nc[q] and
// denominator dc[q] in the candidate, nb[q] and db[q] in the baseline. The
// estimate is Σnc/Σdc − Σnb/Σdb; its interval is a t-interval over the
// clusters of the linearised difference (the delta method, clusters as the
// unit), Z_q = (nc_q − p_c·dc_q)/d̄_c − (nb_q − p_b·db_q)/d̄_b, each side at
// its level of lv. ok is false when a side has an empty denominator or
// fewer than two clusters count.
func PairedRatioDiff(lv Levels, nc, dc, nb, db []float64) (est float64, iv Interval, clusters int, ok bool) {
	var snc, sdc, snb, sdb float64
	for q := range nc {
		if dc[q] == 0 && db[q] == 0 {
			continue
		}
		clusters++
		snc, sdc, snb, sdb = snc+nc[q], sdc+dc[q], snb+nb[q], sdb+db[q]
	}
	if clusters < 2 || sdc == 0 || sdb == 0 {
		return 0, Interval{}, clusters, false
	}
	k := float64(clusters)
	pc, pb := snc/sdc, snb/sdb
	mc, mb := sdc/k, sdb/k
	est = pc - pb
	var ss float64
	for q := range nc {
		if dc[q] == 0 && db[q] == 0 {
			continue
		}
		z := (nc[q]-pc*dc[q])/mc - (nb[q]-pb*db[q])/mb
		ss += z * z // Σ Z_q is 0
	}
	se := math.Sqrt(ss / (k - 1) / k)
	return est, Interval{est - TQuantile(1-lv.Lo, k-1)*se, est + TQuantile(1-lv.Hi, k-1)*se}, clusters, true
}
