package main

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/estimate"
	"github.com/pramkit/pramkit/pkg/pram"
	"github.com/pramkit/pramkit/pkg/sample"
)

// methods are the estimators drawn, in legend order.
var methods = []estimate.Method{estimate.MethodInverse, estimate.MethodProjected, estimate.MethodMLE}

// population is the curators' joined table: each row's labels in the
// curators' columns (what sample reads) and the full table's true joint
// type t, the target of every estimate.
type population struct {
	names  []string
	domain pram.Domain
	enc    []*codebook.Encoder
	rows   [][]string // rows[i] = the labels of row i, shared between equal rows
	truth  estimate.Vector
}

// newPopulation joins the named columns of a into one joint alphabet
// G = Z_{k_1} × … × Z_{k_d}.
func newPopulation(a *adult, names []string) (*population, error) {
	ks := make([]uint32, len(names))
	p := &population{names: names, enc: make([]*codebook.Encoder, len(names))}
	for j, name := range names {
		_, c := a.column(name)
		ks[j] = uint32(c.K())
		var err error
		if p.enc[j], err = c.Encoder(codebook.Policy{}); err != nil {
			return nil, fmt.Errorf("newPopulation: %w", err)
		}
	}
	d, err := pram.NewDomain(ks)
	if err != nil {
		return nil, fmt.Errorf("newPopulation: %w", err)
	}
	p.domain = d
	// One label slice per joint value: the rows a curator would read, at
	// no per-row cost (the sampler only keeps a reference).
	labels := make([][]string, d.Size())
	x := make([]uint32, len(names))
	counts := make([]float64, d.Size())
	p.rows = make([][]string, a.n)
	for i := range a.n {
		for j, name := range names {
			x[j] = a.cols[name][i]
		}
		g, err := d.Encode(x)
		if err != nil {
			return nil, fmt.Errorf("newPopulation: %w", err)
		}
		if labels[g] == nil {
			for j, name := range names {
				_, c := a.column(name)
				labels[g] = append(labels[g], c.Label(int(x[j])))
			}
		}
		p.rows[i] = labels[g]
		counts[g]++
	}
	for g := range counts {
		counts[g] /= float64(a.n)
	}
	p.truth = estimate.FromDense(counts)
	return p, nil
}

// releaser runs one Lin–Wang–Rane release at a time with reusable buffers;
// one per worker.
type releaser struct {
	pop    *population
	cur    int             // the row being offered to the sampler
	rowFn  func() []string // returns pop.rows[cur]; built once
	cols   [][]uint32      // the sample's value indexes, by column
	x      []uint32        // one joint row
	counts []int64         // released joint counts
	secret [32]byte        // the curators' shared sampling secret
}

func newReleaser(pop *population) *releaser {
	r := &releaser{pop: pop, cols: make([][]uint32, pop.domain.Dims()), x: make([]uint32, pop.domain.Dims()),
		counts: make([]int64, pop.domain.Size())}
	r.rowFn = func() []string { return r.pop.rows[r.cur] }
	return r
}

// release samples m of the n rows with the curators' coordinated bottom-m
// sampler under a fresh secret (SPEC §3.1), perturbs the sample's joint rows
// with mech (§3.3) and returns the released joint counts. The pads of §3.2
// are left out: the researcher's decrypted rows equal the perturbed sample
// exactly (Lemma III.1).
func (s *releaser) release(r *rand.Rand, m int, mech *pram.Mechanism) (estimate.Counts, error) {
	for i := 0; i < len(s.secret); i += 8 {
		u := r.Uint64()
		for b := range 8 {
			s.secret[i+b] = byte(u >> (8 * b))
		}
	}
	prf, err := sample.NewPRF(s.secret[:])
	if err != nil {
		return estimate.Counts{}, fmt.Errorf("release: %w", err)
	}
	bm, err := sample.NewBottomM(m)
	if err != nil {
		return estimate.Counts{}, fmt.Errorf("release: %w", err)
	}
	defer bm.Close()
	for i := range s.pop.rows {
		p := prf.Position(uint64(i))
		if bm.Wants(p) {
			s.cur = i
			if err := bm.Offer(p, s.rowFn); err != nil {
				return estimate.Counts{}, fmt.Errorf("release: %w", err)
			}
		}
	}
	var items []sample.Item
	if err := bm.Sample(func(it sample.Item) error { items = append(items, it); return nil }); err != nil {
		return estimate.Counts{}, fmt.Errorf("release: %w", err)
	}
	for j := range s.cols {
		s.cols[j] = s.cols[j][:0]
		for _, it := range items {
			v, err := s.pop.enc[j].Index(it.Row[j])
			if err != nil {
				return estimate.Counts{}, fmt.Errorf("release: %w", err)
			}
			s.cols[j] = append(s.cols[j], v)
		}
	}
	if err := mech.PerturbColumns(r, s.cols); err != nil {
		return estimate.Counts{}, fmt.Errorf("release: %w", err)
	}
	clear(s.counts)
	for i := range items {
		for j := range s.x {
			s.x[j] = s.cols[j][i]
		}
		g, err := s.pop.domain.Encode(s.x)
		if err != nil {
			return estimate.Counts{}, fmt.Errorf("release: %w", err)
		}
		s.counts[g]++
	}
	c, err := estimate.CountsFromDense(s.counts)
	if err != nil {
		return estimate.Counts{}, fmt.Errorf("release: %w", err)
	}
	return c, nil
}

// errorPoint is the mean ℓ2 error of each estimator over releases of m rows
// at privacy ε, with the Theorem III.4 bound.
type errorPoint struct {
	Epsilon float64
	M       int
	Gamma   float64
	Bound   float64
	Runs    int
	Mean    [3]float64 // by methods
	SE      [3]float64 // standard error of Mean: sd/√Runs
}

// measure runs runs releases of m rows at privacy eps and estimates each
// with every method. Release k draws from stream(seed, name/release=k), so the
// result does not depend on workers.
func measure(pop *population, m int, eps float64, runs, workers int, seed uint64, name string) (errorPoint, error) {
	n := len(pop.rows)
	gamma, err := pram.GammaFromEpsilon(n, m, eps)
	if err != nil {
		return errorPoint{}, fmt.Errorf("measure: %w", err)
	}
	mech, err := pram.NewMechanism(gamma, pop.domain)
	if err != nil {
		return errorPoint{}, fmt.Errorf("measure: %w", err)
	}
	bound, err := estimate.Bound(pop.domain.Size(), gamma, m)
	if err != nil {
		return errorPoint{}, fmt.Errorf("measure: %w", err)
	}
	errs := make([][3]float64, runs)
	rels := make([]*releaser, workers)
	for w := range rels {
		rels[w] = newReleaser(pop)
	}
	err = parallel(runs, workers, func(w, k int) error {
		r := stream(seed, fmt.Sprintf("%s/release=%d", name, k))
		c, err := rels[w].release(r, m, mech)
		if err != nil {
			return err
		}
		for i, method := range methods {
			est, err := estimate.Run(method, c, gamma, estimate.EMOptions{})
			if err != nil {
				return err
			}
			if errs[k][i], err = estimate.L2(est, pop.truth); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return errorPoint{}, fmt.Errorf("measure: m=%d ε=%v: %w", m, eps, err)
	}
	pt := errorPoint{Epsilon: eps, M: m, Gamma: gamma, Bound: bound, Runs: runs}
	for i := range methods {
		var s, s2 float64
		for _, e := range errs {
			s += e[i]
			s2 += e[i] * e[i]
		}
		mean := s / float64(runs)
		pt.Mean[i] = mean
		if runs > 1 {
			v := (s2 - float64(runs)*mean*mean) / float64(runs-1)
			pt.SE[i] = math.Sqrt(max(v, 0) / float64(runs))
		}
	}
	return pt, nil
}

// sizeGrid returns the sample sizes of error_vs_m: m*·2^(k/perOctave) from
// m*/8 up to n, rounded, then n itself (PRAM alone). Anchoring the grid at
// m* puts m* on it exactly.
func sizeGrid(mStar float64, n, perOctave int) []int {
	var grid []int
	for k := -3 * perOctave; ; k++ {
		m := int(math.Round(mStar * math.Exp2(float64(k)/float64(perOctave))))
		if m >= n {
			break
		}
		if m >= 1 && (len(grid) == 0 || m > grid[len(grid)-1]) {
			grid = append(grid, m)
		}
	}
	return append(grid, n)
}
