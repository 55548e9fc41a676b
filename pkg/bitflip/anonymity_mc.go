package bitflip

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// AnonymitySample is a Monte Carlo look at A_p for any L.
//
// Reports are sampled where the minimum is likely attained: s = R(u) for a
// record u drawn uniformly from T. For each sampled s the ratio
//
//	a(s) = min_v P[s ∈ R(T∖{v})] / P[R(v) = s]
//
// is computed exactly (its minimizing v is a record nearest to s; see
// Mechanism.Anonymity), from the distances of s to all records.
type AnonymitySample struct {
	// Samples is the number of sampled reports K.
	Samples int
	// Min is the smallest a(s) seen. A_p is the minimum over all s, so
	// Min ≥ A_p: an upper bound, not an estimate with a standard error.
	Min float64
	// MinReport is the sampled report attaining Min (⌈L/64⌉ words) and
	// MinRecord the index in rows of a record nearest to it.
	MinReport []uint64
	MinRecord int
	// Mean estimates E[a(R(u))], u uniform in T: the anonymity ratio of a
	// typical release. StdErr = sd/√K is its standard error.
	Mean, StdErr float64
}

// AnonymityMonteCarlo samples the anonymity ratio of samples reports of
// records drawn uniformly from rows (flat, Words() words per row). Each
// sample costs O(n·⌈L/64⌉) for n distinct rows.
func (m *Mechanism) AnonymityMonteCarlo(r *rand.Rand, rows []uint64, samples int) (AnonymitySample, error) {
	W := m.words
	if len(rows) == 0 || len(rows)%W != 0 {
		return AnonymitySample{}, fmt.Errorf("bitflip.Mechanism.AnonymityMonteCarlo: rows must be a non-empty multiple of %d words, got %d", W, len(rows))
	}
	if samples < 2 {
		return AnonymitySample{}, fmt.Errorf("bitflip.Mechanism.AnonymityMonteCarlo: need at least 2 samples, got %d", samples)
	}
	n := len(rows) / W
	if extra := m.bits % 64; extra != 0 {
		for i := 0; i < n; i++ {
			if rows[i*W+W-1]>>uint(extra) != 0 {
				return AnonymitySample{}, fmt.Errorf("bitflip.Mechanism.AnonymityMonteCarlo: row %d has bits set at or above L = %d", i, m.bits)
			}
		}
	}

	// Distinct rows with their multiplicities and the index of one copy.
	row := func(i int) []uint64 { return rows[i*W : (i+1)*W] }
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return slices.Compare(row(a), row(b)) })
	var distinct []uint64
	var cnt []int64
	var first []int
	for k, i := range order {
		if k > 0 && slices.Equal(row(i), row(order[k-1])) {
			cnt[len(cnt)-1]++
			continue
		}
		distinct = append(distinct, row(i)...)
		cnt = append(cnt, 1)
		first = append(first, i)
	}

	z := m.NewRandomizer(r)
	s := make([]uint64, W)
	hist := make([]int64, m.bits+1)
	logp := make([]float64, m.bits+1)
	for d := range logp {
		logp[d] = m.logReportProbability(d)
	}
	out := AnonymitySample{Samples: samples, Min: math.Inf(1), MinReport: make([]uint64, W)}
	var mean, m2 float64 // Welford
	for k := 1; k <= samples; k++ {
		copy(s, row(r.IntN(n)))
		if err := z.Randomize(s); err != nil {
			return AnonymitySample{}, fmt.Errorf("bitflip.Mechanism.AnonymityMonteCarlo: %w", err)
		}
		clear(hist)
		best, bestD := 0, m.bits+1
		for i := range cnt {
			d := 0
			for w, x := range distinct[i*W : (i+1)*W] {
				d += bits.OnesCount64(x ^ s[w])
			}
			hist[d] += cnt[i]
			if d < bestD {
				best, bestD = i, d
			}
		}
		hist[bestD]-- // T∖{v(s)}: one copy of the nearest record removed
		a := leaveOneOutRatio(hist, logp, bestD)
		if a < out.Min {
			out.Min = a
			copy(out.MinReport, s)
			out.MinRecord = first[best]
		}
		delta := a - mean
		mean += delta / float64(k)
		m2 += delta * (a - mean)
	}
	out.Mean = mean
	out.StdErr = math.Sqrt(m2/float64(samples-1)) / math.Sqrt(float64(samples))
	return out, nil
}

// leaveOneOutRatio returns (1 − Π_d (1 − p(d))^hist[d]) / p(D) where
// hist[d] counts the records of T∖{v} at distance d from s and
// logp[d] = log p(d). When every remaining p(d) is below e^−40, the
// numerator is Σ hist[d]·p(d) to relative accuracy n·e^−40, and the ratio is
// formed from differences of logarithms so that nothing underflows.
func leaveOneOutRatio(hist []int64, logp []float64, D int) float64 {
	top := math.Inf(-1)
	var n int64
	for d, c := range hist {
		if c > 0 {
			top = max(top, logp[d])
			n += c
		}
	}
	if n == 0 {
		return 0 // T∖{v} is empty: nobody else can report s
	}
	if top+math.Log(float64(n)) < -40 {
		var s float64
		for d, c := range hist {
			if c > 0 {
				s += float64(c) * math.Exp(logp[d]-logp[D])
			}
		}
		return s
	}
	var sp float64
	for d, c := range hist {
		if c > 0 {
			sp += float64(c) * math.Log1p(-math.Exp(logp[d]))
		}
	}
	return -math.Expm1(sp) / math.Exp(logp[D])
}
