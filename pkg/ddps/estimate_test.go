package ddps

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/pramkit/pramkit/internal/adulttest"
	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/rng"
)

// release draws the reports of counts[o] owners with true value o, for
// every o, and returns their tally.
func release(t *testing.T, m *Mechanism, g *rand.Rand, counts []int) *Tally {
	t.Helper()
	tally := m.NewTally()
	for o, c := range counts {
		for range c {
			one, two, err := m.Report(g, o)
			if err != nil {
				t.Fatal(err)
			}
			_ = tally.Add(one, two)
		}
	}
	return tally
}

func TestEstimatedCountsAreUnbiasedWithTheStatedSD(t *testing.T) {
	// Over seeded runs, for each output o and both estimators:
	//   mean of the estimates vs the true count (normal bound),
	//   sample variance vs the stated variance at the true counts
	//     ((runs−1)s²/σ² ~ χ²(runs−1), the estimates being near-normal sums
	//     of thousands of Bernoulli draws),
	//   mean of the plug-in stated variance vs σ² (the variance is linear
	//     in the count, so the plug-in is unbiased when nothing is clamped;
	//     checked for counts at least 6 sd away from 0 and N).
	// False-alarm probability 1e-6 per check.
	const runs = 800
	cases := []struct {
		o      Options
		counts []int // counts[0]: non-participants
	}{
		{Options{Values: 4, PiS: 0.3}, []int{0, 1200, 500, 250, 50}},
		{Options{Values: 3, PiS: 0.1, PiBottom: []float64{0.3, 0.3, 0.2, 0.1}, NonParticipants: true}, []int{900, 600, 300, 200}},
	}
	chi := distuv.ChiSquared{K: runs - 1}
	lo, hi := chi.Quantile(0.5e-6)/(runs-1), chi.Quantile(1-0.5e-6)/(runs-1)
	for k, c := range cases {
		m, err := New(c.o)
		if err != nil {
			t.Fatal(err)
		}
		var N int
		for _, n := range c.counts {
			N += n
		}
		g := rng.NewSeeded(uint64(100 + k))
		type acc struct{ sum, sumSq, statedVar, statedVarSq float64 }
		stats := map[bool][]acc{true: make([]acc, len(c.counts)+1), false: make([]acc, len(c.counts)+1)}
		for range runs {
			tally := release(t, m, g, c.counts)
			for _, paired := range []bool{true, false} {
				est, err := m.Estimate(tally)
				if !paired {
					est, err = m.EstimateRoundTwo(tally)
				}
				if err != nil {
					t.Fatal(err)
				}
				if est.N != int64(N) {
					t.Fatalf("N = %d, want %d", est.N, N)
				}
				for o := range est.Values() + 2 {
					e := est.Participants
					if o <= est.Values() {
						e = est.Count(o)
					}
					s := &stats[paired][o]
					s.sum += e.Count
					s.sumSq += e.Count * e.Count
					s.statedVar += e.SD * e.SD
					s.statedVarSq += e.SD * e.SD * e.SD * e.SD
				}
			}
		}
		for _, paired := range []bool{true, false} {
			name := "Eq. 41"
			if !paired {
				name = "round two"
			}
			for o, s := range stats[paired] {
				label := fmt.Sprintf("case %d %s ⊥%d", k, name, o)
				want := float64(0)
				var sd float64
				if o < len(c.counts) {
					want = float64(c.counts[o])
					sd = m.countSD(o, float64(N), want, paired)
				} else {
					label = fmt.Sprintf("case %d %s participants", k, name)
					want = float64(N - c.counts[0])
					sd = m.countSD(0, float64(N), float64(c.counts[0]), paired)
				}
				mean := s.sum / runs
				stattest.AssertMean(t, label+": estimate", mean, want, sd, runs, 1e-6)
				v := (s.sumSq - runs*mean*mean) / (runs - 1)
				if r := v / (sd * sd); r < lo || r > hi {
					t.Errorf("%s: sample variance / stated variance = %.3f outside [%.3f, %.3f]", label, r, lo, hi)
				}
				if want < 6*sd || want > float64(N)-6*sd {
					continue // the plug-in count is clamped to [0, N] too often to be unbiased
				}
				mv := s.statedVar / runs
				sdv := math.Sqrt(max(s.statedVarSq/runs-mv*mv, 0) * runs / (runs - 1))
				stattest.AssertMean(t, label+": plug-in variance", mv, sd*sd, max(sdv, 1e-9*sd*sd), runs, 1e-6)
			}
		}
	}
}

func TestRoundTwoEstimatorHasTheSmallerVariance(t *testing.T) {
	m, _ := New(Options{Values: 4, PiS: 0.25, NonParticipants: true})
	for o := range 5 {
		paired, single := m.countSD(o, 5000, 800, true), m.countSD(o, 5000, 800, false)
		if !(single < paired) {
			t.Errorf("⊥%d: round-two sd %.4g not below paired sd %.4g", o, single, paired)
		}
	}
}

func TestEstimatesMatchHandValues(t *testing.T) {
	// V = 2, π_s = 0.4, π_⊥ = (0.2, 0.2, 0.2), N = 100,
	// C1 = (62, 20, 18), C2 = (21, 50, 29):
	//   n̂_1 = (50 − 20)/0.4 = 75, n̂_2 = (29 − 18)/0.4 = 27.5,
	//   n̂_0 = (21 − 62)/0.4 + 100 = −2.5, participants = 102.5;
	//   ñ_1 = (50 − 20)/0.4 = 75, ñ_2 = (29 − 20)/0.4 = 22.5, ñ_0 = (21 − 20)/0.4 = 2.5.
	//   sd(n̂_1) at n_1 = 75: √(100·0.16 + 75·0.24 + 25·0.16)/0.4 = √38/0.4.
	m, _ := New(Options{Values: 2, PiS: 0.4})
	tally := tallyOf(t, m, []int64{62, 20, 18}, []int64{21, 50, 29})
	est, err := m.Estimate(tally)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{-2.5, 75, 27.5}
	for o, w := range want {
		if math.Abs(est.Count(o).Count-w) > 1e-12 {
			t.Errorf("n̂_%d = %v, want %v", o, est.Count(o).Count, w)
		}
	}
	if math.Abs(est.Participants.Count-102.5) > 1e-12 {
		t.Errorf("participants %v, want 102.5", est.Participants.Count)
	}
	if sd := math.Sqrt(38) / 0.4; relErr(est.Count(1).SD, sd) > 1e-12 {
		t.Errorf("sd(n̂_1) = %v, want %v", est.Count(1).SD, sd)
	}
	var sum float64
	for o := range est.Values() + 1 {
		sum += est.Count(o).Count
	}
	if math.Abs(sum-100) > 1e-9 {
		t.Errorf("counts sum to %v, want N = 100", sum)
	}
	two, _ := m.EstimateRoundTwo(tally)
	for o, w := range []float64{2.5, 75, 22.5} {
		if math.Abs(two.Count(o).Count-w) > 1e-12 {
			t.Errorf("ñ_%d = %v, want %v", o, two.Count(o).Count, w)
		}
	}
}

func TestEstimateRejectsBadTallies(t *testing.T) {
	m, _ := New(Options{Values: 2, PiS: 0.4})
	short, _ := New(Options{Values: 1, PiS: 0.4})
	one := short.NewTally()
	_ = one.Add(1, 1)
	bad := map[string]*Tally{
		"nil":   nil,
		"empty": m.NewTally(),
		"short": one,
	}
	for name, tl := range bad {
		if _, err := m.Estimate(tl); err == nil {
			t.Errorf("%s tally accepted", name)
		}
		if _, err := m.EstimateRoundTwo(tl); err == nil {
			t.Errorf("%s tally accepted by EstimateRoundTwo", name)
		}
	}
	tl := m.NewTally()
	for _, c := range []struct {
		one, two int
		n        int64
	}{{3, 0, 1}, {0, -1, 1}, {1, 1, -1}} {
		if err := tl.AddN(c.one, c.two, c.n); err == nil {
			t.Errorf("AddN(%d, %d, %d) accepted for V = 2", c.one, c.two, c.n)
		}
	}
	if err := tl.AddN(1, 1, math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if err := tl.Add(1, 1); err == nil {
		t.Error("a report past 2^63 − 1 accepted")
	}
}

// A count past 2^32 − 1 widens its round's counts, which keep every
// count exactly: the uint32 storage never wraps around.
func TestTallyCountsPastUint32Exactly(t *testing.T) {
	m, _ := New(Options{Values: 2, PiS: 0.4})
	tl := m.NewTally()
	steps := []struct {
		one, two int
		n        int64
	}{{1, 2, math.MaxUint32 - 1}, {1, 0, 1}, {1, 2, 2}, {0, 1, 5}, {1, 1, 1 << 40}}
	var c1, c2 [3]int64
	for _, s := range steps {
		if err := tl.AddN(s.one, s.two, s.n); err != nil {
			t.Fatal(err)
		}
		c1[s.one] += s.n
		c2[s.two] += s.n
		for o := range 3 {
			if tl.RoundOne(o) != c1[o] || tl.RoundTwo(o) != c2[o] {
				t.Fatalf("after AddN%v: C1[%d] = %d, C2[%d] = %d, want %d, %d", s, o, tl.RoundOne(o), o, tl.RoundTwo(o), c1[o], c2[o])
			}
		}
	}
	if want := c1[0] + c1[1] + c1[2]; tl.N() != want {
		t.Errorf("N = %d, want %d", tl.N(), want)
	}
}

// tallyOf returns a tally whose rounds have the counts c1 and c2 (equal
// sums), pairing the reports in order.
func tallyOf(t *testing.T, m *Mechanism, c1, c2 []int64) *Tally {
	t.Helper()
	tl := m.NewTally()
	c1, c2 = slices.Clone(c1), slices.Clone(c2)
	for a, b := 0, 0; a < len(c1) && b < len(c2); {
		n := min(c1[a], c2[b])
		if err := tl.AddN(a, b, n); err != nil {
			t.Fatal(err)
		}
		if c1[a] -= n; c1[a] == 0 {
			a++
		}
		if c2[b] -= n; c2[b] == 0 {
			b++
		}
	}
	return tl
}

// roundCounts returns the tally's counts C1, C2.
func roundCounts(tl *Tally) (c1, c2 []int64) {
	for o := range tl.Outputs() {
		c1, c2 = append(c1, tl.RoundOne(o)), append(c2, tl.RoundTwo(o))
	}
	return c1, c2
}

func TestAdultOccupationCounts(t *testing.T) {
	// Occupation (14 values and "?", V = 15) of the 32561 Adult rows; every
	// row participates. Each estimate must lie within z·sd of the truth,
	// z for a two-sided 1e-6/15 level (false-alarm 1e-6 over the values).
	rows := adulttest.Load(t, "data")
	labels := []string{"Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
		"Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical", "Farming-fishing",
		"Transport-moving", "Priv-house-serv", "Protective-serv", "Armed-Forces", "?"}
	V := len(labels)
	counts := make([]int, V+1)
	for _, r := range rows {
		v := slices.Index(labels, r[6])
		if v < 0 {
			t.Fatalf("occupation %q not in the codebook", r[6])
		}
		counts[v+1]++
	}
	z := stattest.ZForAlpha(1e-6 / float64(V))
	for _, ps := range []float64{0.1, 0.3, 0.6} {
		m, _ := New(Options{Values: V, PiS: ps})
		tally := release(t, m, rng.NewSeeded(uint64(ps*10)), counts)
		for _, paired := range []bool{true, false} {
			est, _ := m.Estimate(tally)
			name := "Eq. 41"
			if !paired {
				est, _ = m.EstimateRoundTwo(tally)
				name = "round two"
			}
			var l2, relSum float64
			for v := 1; v <= V; v++ {
				e, truth := est.Count(v), float64(counts[v])
				if math.Abs(e.Count-truth) > z*e.SD {
					t.Errorf("π_s %g %s %s: %.0f estimated, %0.f true, sd %.0f", ps, name, labels[v-1], e.Count, truth, e.SD)
				}
				d := (e.Count - truth) / float64(len(rows))
				l2 += d * d
				relSum += math.Abs(e.Count-truth) / truth
			}
			t.Logf("π_s %.1f (ε %.2f) %-9s: ℓ2 error of the distribution %.4f, mean relative count error %.3f, participants %.0f ± %.0f (true %d)",
				ps, m.Epsilon(), name, math.Sqrt(l2), relSum/float64(V), est.Participants.Count, est.Participants.SD, len(rows))
		}
	}
}
