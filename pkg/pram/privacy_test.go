package pram

import (
	"fmt"
	"math"
	"testing"
)

// samplings returns Θ, every ordered m-tuple of distinct row positions out
// of n: the paper's sampling outcomes, each of probability 1/|Θ|.
func samplings(n, m int) [][]int {
	var out [][]int
	var rec func(prefix []int, used []bool)
	rec = func(prefix []int, used []bool) {
		if len(prefix) == m {
			out = append(out, append([]int(nil), prefix...))
			return
		}
		for i := range n {
			if !used[i] {
				used[i] = true
				rec(append(prefix, i), used)
				used[i] = false
			}
		}
	}
	rec(nil, make([]bool, n))
	return out
}

// tuples returns all length-l sequences over [0, K).
func tuples(K uint64, l int) [][]uint64 {
	out := [][]uint64{{}}
	for range l {
		var next [][]uint64
		for _, p := range out {
			for g := range K {
				next = append(next, append(append([]uint64(nil), p...), g))
			}
		}
		out = next
	}
	return out
}

// releaseProbability is P(outputs | table) for r releases of one sample:
//
//	(1/|Θ|) Σ_{π∈Θ} Π_{s=1..r} Π_{i=1..m} A[out_s[i], table[π_i]],
//
// out holding the r releases one after the other (length r·m).
func releaseProbability(mech *Mechanism, table []uint64, out []uint64, theta [][]int) float64 {
	m := len(theta[0])
	var sum float64
	for _, pi := range theta {
		p := 1.0
		for k, o := range out {
			p *= mech.Transition(o, table[pi[k%m]])
		}
		sum += p
	}
	return sum / float64(len(theta))
}

func TestBruteForceLikelihoodRatioMatchesTheoremIII2(t *testing.T) {
	// Exhaustive check of Theorem III.2 and Example III.3 on tiny cases:
	// over every table x ∈ G^n, every neighbour ẋ (one row replaced) and
	// every release, the largest ratio P(out | x)/P(out | ẋ) must equal
	// (n + m(γ^r − 1))/n (upper bound attained = tight). For r = 1 that is
	// e^ε of Theorem III.2; for r = 2 releases of the same sample it is
	// ComposedEpsilon and strictly more than e^{2ε} when m < n.
	tests := []struct {
		ks    []uint32
		n, m  int
		gamma float64
		r     int
	}{
		{[]uint32{3}, 4, 2, 2.5, 1},
		{[]uint32{2}, 3, 1, 4, 1},
		{[]uint32{2}, 3, 3, 3, 1}, // m = n: PRAM alone, ε = ln γ
		{[]uint32{2, 2}, 3, 2, 1.5, 1},
		{[]uint32{2}, 4, 2, 3, 2},
		{[]uint32{3}, 3, 1, 6, 2},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("ks=%v n=%d m=%d γ=%v r=%d", tt.ks, tt.n, tt.m, tt.gamma, tt.r)
		mech := mustMechanism(t, tt.gamma, tt.ks...)
		K := mech.Domain().Size()
		theta := samplings(tt.n, tt.m)
		tables := tuples(K, tt.n)
		outs := tuples(K, tt.m*tt.r)
		// P[t][o] for table index t (base-K digits, first row most significant).
		P := make([][]float64, len(tables))
		for ti, table := range tables {
			P[ti] = make([]float64, len(outs))
			for oi, out := range outs {
				P[ti][oi] = releaseProbability(mech, table, out, theta)
			}
		}
		maxRatio := 0.0
		for ti, table := range tables {
			stride := 1
			for pos := tt.n - 1; pos >= 0; pos-- {
				for v := range K {
					if v == table[pos] {
						continue
					}
					tj := ti + (int(v)-int(table[pos]))*stride
					for oi := range outs {
						maxRatio = math.Max(maxRatio, P[ti][oi]/P[tj][oi])
					}
				}
				stride *= int(K)
			}
		}
		want, err := ComposedEpsilon(tt.n, tt.m, tt.gamma, tt.r)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(maxRatio-math.Exp(want)) > 1e-12*math.Exp(want) {
			t.Errorf("%s: max likelihood ratio %.15g, want e^ε = %.15g", name, maxRatio, math.Exp(want))
		}
		single, _ := EpsilonFromGamma(tt.n, tt.m, tt.gamma)
		if tt.r == 1 && math.Abs(want-single) > 1e-15 {
			t.Errorf("%s: ComposedEpsilon(r=1) %v != EpsilonFromGamma %v", name, want, single)
		}
		if tt.r > 1 && tt.m < tt.n && !(maxRatio > math.Exp(float64(tt.r)*single)*(1+1e-9)) {
			t.Errorf("%s: ratio %v not above e^{rε} = %v", name, maxRatio, math.Exp(float64(tt.r)*single))
		}
	}
}

func TestExampleIII3(t *testing.T) {
	// The paper's example: x = (b, a, …, a), ẋ = (a, …, a), release
	// (b, …, b). Sampling row 1 (probability m/n) gives γ·q^{-m}, otherwise
	// q^{-m}; under ẋ always q^{-m}. Ratio (m/n)γ + (1 − m/n) =
	// (n + m(γ − 1))/n. Hand value for n = 5, m = 2, γ = 3.5:
	// (5 + 2·2.5)/5 = 2.
	const n, m, gamma = 5, 2, 3.5
	mech := mustMechanism(t, gamma, 2) // a = 0, b = 1
	theta := samplings(n, m)
	x := []uint64{1, 0, 0, 0, 0}
	xdot := []uint64{0, 0, 0, 0, 0}
	out := []uint64{1, 1}
	ratio := releaseProbability(mech, x, out, theta) / releaseProbability(mech, xdot, out, theta)
	eps, _ := EpsilonFromGamma(n, m, gamma)
	if math.Abs(ratio-2) > 1e-12 || math.Abs(math.Exp(eps)-2) > 1e-12 {
		t.Errorf("ratio %.15g, e^ε %.15g; both should be 2", ratio, math.Exp(eps))
	}
}
