package bitflip

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// MaxExactBits is the largest L for which Anonymity computes A_p exactly.
// It needs about 22·2^L bytes (370 MB at L = 24) and O(L·2^L) time.
const MaxExactBits = 24

// AnonymityResult is A_p and where it is attained.
type AnonymityResult struct {
	// Ap = min over v ∈ T, s of P[s ∈ R(T∖{v})] / P[R(v) = s]. Values below
	// about 1e−300 lose precision or underflow to 0.
	Ap float64
	// Record is a v ∈ T attaining the minimum (a nearest record to Report).
	Record uint64
	// Report is the report s attaining the minimum.
	Report uint64
}

// minLogProbability is the smallest log P[R(v) = s] the exact computation
// handles: p(d) stays a normal float64 with room for the sums.
const minLogProbability = -700

// seriesMax is where the exact computation switches from the series to the
// Walsh–Hadamard convolution (see Anonymity): below it at most 9 series
// terms are needed, (1/64)^9/(10·(63/64)) < 2^−52.
const seriesMax = 1.0 / 64

// seriesLength returns the number J ≥ 1 of terms of
// −log(1 − p) = Σ_j p^j/j, summed over the records, that bring the relative
// truncation error E^J/((J+1)(1 − E)) below 2^−52 when E = Σ p < 1/64.
func seriesLength(e float64) int {
	j := 1
	for t := e; t/float64(j+1)/(1-e) >= 0x1p-52; j++ {
		t *= e
	}
	return j
}

// Anonymity computes A_p (Zhilyaev–Zeber §2) of the multiset of records
// (each in the low L bits of one word; duplicates allowed) exactly, for
// L ≤ MaxExactBits, without enumerating record–report pairs.
//
// Reduction. Write p(d) = q^d (1 − q)^(L−d), so P[R(v) = s] = p(d(v,s)),
// and for a report s let v(s) be a record nearest to s. With
// Π_T(s) = Π_{w∈T}(1 − p(d(w,s))),
//
//	P[s ∈ R(T∖{v})] / p(d(v,s)) = (1 − Π_T(s)/(1 − p_v)) / p_v,  p_v = p(d(v,s)),
//
// which decreases in p_v for fixed Π_T(s) (its derivative has the sign of
// Π_T(s)(1 − 2p_v) − (1 − p_v)² ≤ 0 because Π_T(s) ≤ 1 − p_v), so the
// minimum over v is attained at v(s), and removing v(s) removes exactly one
// factor (other copies of v(s) stay in T∖{v}). Hence
//
//	A_p = min_s (1 − exp S′(s)) / p(D(s)),
//	S′(s) = Σ_{w ∈ T∖{v(s)}} log(1 − p(d(w,s))),   D(s) = d(v(s), s).
//
// Steps, each O(L·2^L):
//
//  1. D(s) and v(s) for all s by min-plus sweeps over the L dimensions:
//     D ← min(D(s), D(s ⊕ e_b) + 1) for b = 1..L (Hamming distance is a sum
//     over coordinates, so one sweep per coordinate is exact).
//  2. Far reports, where E′(s) = Σ_{w≠v(s)} p(d(w,s)) < 1/64: the answer is
//     small and needs relative accuracy, so S′ = −Σ_{j=1..J} E′_j(s)/j with
//     E′_j = Σ_{w≠v(s)} p(d(w,s))^j (the series of log(1 − p), whose
//     truncation error is at most E′·E′^J/((J+1)(1 − E′)); J ≤ 9 is chosen
//     per report to make it below 2^−52 relative). p^j is
//     multiplicative in d — p(d)^j = (1 − q)^(jL)·ρ^d, ρ = (q/(1 − q))^j —
//     so each E′_j is a product-kernel transform with the kernel
//     [[1, ρ], [ρ, 1]] on every coordinate, computed one coordinate at a
//     time. To leave v(s) out without subtracting (which would cancel
//     catastrophically when v(s) dominates), T∖{v(s)} is split into the
//     other copies of v(s) and, for each bit b, the records that agree with
//     v(s) above b and differ at b; after the transform of bits < b the
//     array holds exactly those partial sums. Every operation adds positive
//     terms, so E′_j has relative error ≈ 2L·2^−53.
//  3. Near reports (E′ ≥ 1/64): 1 − exp S′ is at least 1/65, so absolute
//     accuracy suffices. S(s) = Σ_w cnt(w)·g(d(w,s)), g(d) = log1p(−p(d)),
//     is an XOR-convolution of the record counts with a function of
//     Hamming weight: one fast Walsh–Hadamard transform of the counts
//     (exact, integers), a product with ĝ(y) = Σ_d g(d)·K_d(|y|) (K_d the
//     Krawtchouk polynomials) and an inverse transform give S for all s,
//     with absolute error about L·n·2^−53·Σ_x|g(x)|; then
//     S′(s) = S(s) − g(D(s)).
//
// Memory is about 22·2^L bytes.
func (m *Mechanism) Anonymity(records []uint64) (AnonymityResult, error) {
	L := m.bits
	if L > MaxExactBits {
		return AnonymityResult{}, fmt.Errorf("bitflip.Mechanism.Anonymity: exact A_p needs L ≤ %d (memory ~22·2^L bytes), got L = %d; use AnonymityMonteCarlo", MaxExactBits, L)
	}
	if len(records) == 0 {
		return AnonymityResult{}, fmt.Errorf("bitflip.Mechanism.Anonymity: no records")
	}
	if lp := m.logReportProbability(L); lp < minLogProbability {
		return AnonymityResult{}, fmt.Errorf("bitflip.Mechanism.Anonymity: P[R(v) = ¬v] = q^L = e^%.0f is below float64 range; use AnonymityMonteCarlo", lp)
	}
	for i, v := range records {
		if v>>uint(L) != 0 {
			return AnonymityResult{}, fmt.Errorf("bitflip.Mechanism.Anonymity: record %d has bits set at or above L = %d", i, L)
		}
	}
	ratio, nearest := m.ratios(records)
	best := 0
	for s, r := range ratio {
		if r < ratio[best] {
			best = s
		}
	}
	return AnonymityResult{Ap: ratio[best], Record: uint64(nearest[best]), Report: uint64(best)}, nil
}

// ratios returns, for every report s, min_v P[s ∈ R(T∖{v})]/P[R(v) = s]
// and the record v(s) attaining it (see Anonymity). Memory: about
// 22·2^L bytes, in the arrays the steps below share.
func (m *Mechanism) ratios(records []uint64) (ratio []float64, nearest []uint32) {
	L := m.bits
	recs, cnts := distinctRecords(records)
	dist, nearest := nearestRecords(L, recs)
	acc, terms, a, anyNear := m.seriesSums(recs, cnts, dist, nearest)

	// p(d) and g(d) = log1p(−p(d)).
	p := make([]float64, L+1)
	g := make([]float64, L+1)
	for d := range g {
		p[d] = m.ReportProbability(d)
		g[d] = math.Log1p(-p[d])
	}

	if anyNear {
		nearSums(a, L, recs, cnts, g)
	}

	// Ratios, into acc.
	for s := range acc {
		d := dist[s]
		var sp float64 // S′(s)
		if terms[s] == 0 {
			sp = min(a[s]-g[d], 0)
		} else {
			sp = -acc[s]
		}
		acc[s] = -math.Expm1(sp) / p[d]
	}
	return acc, nearest
}

// distinctRecords lists the distinct records in increasing order and
// their multiplicities.
func distinctRecords(records []uint64) (recs []uint32, cnts []float64) {
	sorted := slices.Clone(records)
	slices.Sort(sorted)
	for i, v := range sorted {
		if i > 0 && v == sorted[i-1] {
			cnts[len(cnts)-1]++
			continue
		}
		recs = append(recs, uint32(v))
		cnts = append(cnts, 1)
	}
	return recs, cnts
}

// nearestRecords finds, for every report s of L bits, the nearest record
// v(s) and its Hamming distance (≤ 24), by relaxing one bit at a time.
func nearestRecords(L int, recs []uint32) (dist []uint8, nearest []uint32) {
	size := 1 << L
	const unreached = 100
	dist = make([]uint8, size)
	nearest = make([]uint32, size)
	for i := range dist {
		dist[i] = unreached
	}
	for _, v := range recs {
		dist[v] = 0
		nearest[v] = v
	}
	for b := 0; b < L; b++ {
		bit := 1 << b
		for hi := 0; hi < size; hi += 2 * bit {
			for s := hi; s < hi+bit; s++ {
				t := s | bit
				if a, c := dist[s], dist[t]; c+1 < a {
					dist[s], nearest[s] = c+1, nearest[t]
				} else if a+1 < c {
					dist[t], nearest[t] = a+1, nearest[s]
				}
			}
		}
	}

	return dist, nearest
}

// seriesSums computes, for every far report s, acc(s) = Σ_{j≤J(s)}
// E′_j(s)/j and the number of terms J(s) it needed (terms[s] = 0 marks a
// near report, whose sum nearSums computes instead; anyNear says whether
// there is one), else seriesLength(E′(s)). a is scratch space of 2^L values, returned for nearSums.
func (m *Mechanism) seriesSums(recs []uint32, cnts []float64, dist []uint8, nearest []uint32) (acc []float64, terms []uint8, a []float64, anyNear bool) {
	L := m.bits
	size := 1 << L
	q := m.q
	// Positive product-kernel sums, one pass per series term j.
	r := q / (1 - q)
	a = make([]float64, size)
	acc = make([]float64, size)
	terms = make([]uint8, size)
	pw := make([]float64, L+1)
	passes := 1
	for j := 1; j <= passes; j++ {
		rho := math.Pow(r, float64(j))
		// pw[e] = (1 − q)^(jL)·ρ^e / j = p(e)^j / j.
		for e := range pw {
			pw[e] = math.Exp(float64(j)*(float64(L)*math.Log1p(-q)+float64(e)*math.Log(r))) / float64(j)
		}
		clear(a)
		for i, v := range recs {
			a[v] = cnts[i]
		}
		jj := uint8(j)
		// Other copies of v(s): (cnt(v) − 1)·p(D)^j/j.
		for s := range acc {
			if c := a[nearest[s]]; c > 1 && (j == 1 || terms[s] >= jj) {
				acc[s] += (c - 1) * pw[dist[s]]
			}
		}
		for b := 0; b < L; b++ {
			bit := uint32(1) << b
			low := bit - 1
			// a[x] = Σ_{w: w agrees with x on bits ≥ b} cnt(w)·ρ^(d_{<b}(w,x)).
			// Records agreeing with v above b and differing at b, seen from s:
			// x = (v above b, ¬v_b, s below b); their remaining distance to s
			// above b is d_{>b}(v,s) + [v_b = s_b].
			for s := range acc {
				if j > 1 && terms[s] < jj {
					continue
				}
				v := nearest[s]
				x := ((v ^ bit) &^ low) | (uint32(s) & low)
				diff := v ^ uint32(s)
				e := bits.OnesCount32(diff>>(b+1)) + int(^(diff>>b)&1)
				acc[s] += pw[e] * a[x]
			}
			// Transform coordinate b: kernel [[1, ρ], [ρ, 1]].
			step := int(bit)
			for hi := 0; hi < size; hi += 2 * step {
				lo, up := a[hi:hi+step], a[hi+step:hi+2*step]
				for i := range lo {
					x, y := lo[i], up[i]
					lo[i], up[i] = x+rho*y, y+rho*x
				}
			}
		}
		if j == 1 {
			for s, e := range acc {
				if e >= seriesMax {
					anyNear = true
					continue
				}
				terms[s] = uint8(seriesLength(e))
				passes = max(passes, int(terms[s]))
			}
		}
	}
	return acc, terms, a, anyNear
}

// nearSums computes S(s) for every report s into a, by Walsh–Hadamard
// convolution of the record counts with g(d) = log1p(−p(d)).
func nearSums(a []float64, L int, recs []uint32, cnts []float64, g []float64) {
	clear(a)
	for i, v := range recs {
		a[v] = cnts[i]
	}
	fwht(a) // integer sums ≤ n < 2^53: exact
	ghat := krawtchoukTransform(g)
	for y := range a {
		a[y] *= ghat[bits.OnesCount32(uint32(y))]
	}
	fwht(a)
	scale := math.Ldexp(1, -L)
	for s := range a {
		a[s] *= scale
	}
}

// fwht applies the unnormalized Walsh–Hadamard transform
// x̂(y) = Σ_x x(x)·(−1)^popcount(x∧y) in place; len(a) is a power of two.
func fwht(a []float64) {
	for step := 1; step < len(a); step *= 2 {
		for hi := 0; hi < len(a); hi += 2 * step {
			lo, up := a[hi:hi+step], a[hi+step:hi+2*step]
			for i := range lo {
				x, y := lo[i], up[i]
				lo[i], up[i] = x+y, x-y
			}
		}
	}
}

// krawtchoukTransform returns ĝ(k), the Walsh–Hadamard transform of the
// function x ↦ g(popcount x) on {0,1}^L (L = len(g) − 1) at any y of
// weight k:
//
//	ĝ(k) = Σ_d g(d)·K_d(k),   K_d(k) = Σ_i (−1)^i C(k, i)·C(L − k, d − i),
//
// K_d(k) counting the x of weight d by their overlap i with y.
func krawtchoukTransform(g []float64) []float64 {
	L := len(g) - 1
	binom := make([][]int64, L+1)
	for n := range binom {
		binom[n] = make([]int64, n+1)
		binom[n][0], binom[n][n] = 1, 1
		for k := 1; k < n; k++ {
			binom[n][k] = binom[n-1][k-1] + binom[n-1][k]
		}
	}
	c := func(n, k int) int64 {
		if k < 0 || k > n {
			return 0
		}
		return binom[n][k]
	}
	out := make([]float64, L+1)
	for k := 0; k <= L; k++ {
		var s float64
		for d := 0; d <= L; d++ {
			var kd int64
			for i := 0; i <= d; i++ {
				t := c(k, i) * c(L-k, d-i)
				if i%2 == 1 {
					t = -t
				}
				kd += t
			}
			s += g[d] * float64(kd)
		}
		out[k] = s
	}
	return out
}
