package ddps

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/rng"
)

func relErr(got, want float64) float64 {
	if got == want {
		return 0
	}
	return math.Abs(got-want) / math.Abs(want)
}

func TestNewRejectsInvalidParameters(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name string
		o    Options
	}{
		{"V zero", Options{Values: 0, PiS: 0.2}},
		{"V negative", Options{Values: -2, PiS: 0.2}},
		{"V too large", Options{Values: MaxValues + 1, PiS: 0.2}},
		{"π_s zero", Options{Values: 3, PiS: 0}},
		{"π_s one", Options{Values: 3, PiS: 1}},
		{"π_s negative", Options{Values: 3, PiS: -0.1}},
		{"π_s NaN", Options{Values: 3, PiS: nan}},
		{"π_s +Inf", Options{Values: 3, PiS: inf}},
		{"π_s -Inf", Options{Values: 3, PiS: -inf}},
		{"π_⊥ too short", Options{Values: 3, PiS: 0.2, PiBottom: []float64{0.4, 0.2, 0.2}}},
		{"π_⊥ too long", Options{Values: 3, PiS: 0.2, PiBottom: []float64{0.2, 0.2, 0.2, 0.1, 0.1}}},
		{"π_⊥ negative", Options{Values: 3, PiS: 0.2, PiBottom: []float64{0.5, 0.2, 0.2, -0.1}}},
		{"π_⊥ NaN", Options{Values: 3, PiS: 0.2, PiBottom: []float64{nan, 0.2, 0.2, 0.2}}},
		{"π_⊥ +Inf", Options{Values: 3, PiS: 0.2, PiBottom: []float64{inf, 0.2, 0.2, 0.2}}},
		{"sum below 1", Options{Values: 3, PiS: 0.2, PiBottom: []float64{0.2, 0.2, 0.2, 0.1}}},
		{"sum above 1", Options{Values: 3, PiS: 0.2, PiBottom: []float64{0.3, 0.2, 0.2, 0.2}}},
		{"zero mass on a value", Options{Values: 3, PiS: 0.2, PiBottom: []float64{0.4, 0.4, 0, 0}}},
		{"zero ⊥0 with non-participants", Options{Values: 3, PiS: 0.2, PiBottom: []float64{0, 0.3, 0.3, 0.2}, NonParticipants: true}},
	}
	for _, c := range cases {
		if _, err := New(c.o); err == nil {
			t.Errorf("%s: New(%+v) accepted", c.name, c.o)
		}
	}
	// Zero ⊥0 mass is fine when nobody can be a non-participant, and a
	// single-valued domain needs no noise at all.
	for _, o := range []Options{
		{Values: 3, PiS: 0.2, PiBottom: []float64{0, 0.3, 0.3, 0.2}},
		{Values: 1, PiS: 0.2, PiBottom: []float64{0.8, 0}},
		{Values: 3, PiS: 0.2, PiBottom: []float64{0.2, 0.2, 0.2, 0.2 + 5e-10}},
	} {
		if _, err := New(o); err != nil {
			t.Errorf("New(%+v): %v", o, err)
		}
	}
}

func TestDefaultMassesAreUniformAndSumToOne(t *testing.T) {
	m, err := New(Options{Values: 4, PiS: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	sum := m.PiS()
	for o, p := range m.PiBottom() {
		if p != 0.1 {
			t.Errorf("π_⊥%d = %v, want 0.1", o, p)
		}
		sum += p
	}
	if math.Abs(sum-1) > 1e-15 {
		t.Errorf("masses sum to %v", sum)
	}
}

// Masses that sum to 1 up to rounding are kept bit for bit: perturb records
// a mechanism's PiS and PiBottom, and estimate must rebuild the same
// mechanism from them.
func TestNewKeepsMassesThatSumToOneUpToRounding(t *testing.T) {
	uniform := func(V int, ps float64) []float64 {
		pb := make([]float64, V+1)
		for o := range pb {
			pb[o] = (1 - ps) / float64(V+1)
		}
		return pb
	}
	cases := []struct {
		name string
		o    Options
	}{
		// 0.1 + 16·(0.9/16) is 1 + 2⁻⁵² in floats; dividing by it made
		// π_s 0.09999999999999998.
		{"Adult occupation, uniform", Options{Values: 15, PiS: 0.1, PiBottom: uniform(15, 0.1)}},
		// 0.2 + 8·(0.8/8) is 1 + 2⁻⁵².
		{"V = 7, uniform", Options{Values: 7, PiS: 0.2, PiBottom: uniform(7, 0.2)}},
		{"hand masses", Options{Values: 3, PiS: 0.2, PiBottom: []float64{0.1, 0.3, 0.2, 0.2}, NonParticipants: true}},
		{"large V, uniform", Options{Values: 1 << 20, PiS: 0.3, PiBottom: uniform(1<<20, 0.3)}},
	}
	for _, c := range cases {
		m, err := New(c.o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if m.PiS() != c.o.PiS {
			t.Errorf("%s: π_s = %.17g, want %.17g as given", c.name, m.PiS(), c.o.PiS)
		}
		for o, p := range m.PiBottom() {
			if p != c.o.PiBottom[o] {
				t.Errorf("%s: π_⊥%d = %.17g, want %.17g as given", c.name, o, p, c.o.PiBottom[o])
				break
			}
		}
	}
	// A sum off by more than rounding (5e-10, within the tolerance) is still
	// divided out: π_s and every π_⊥ shrink by the same factor.
	m, err := New(Options{Values: 3, PiS: 0.2, PiBottom: []float64{0.2, 0.2, 0.2, 0.2 + 5e-10}})
	if err != nil {
		t.Fatal(err)
	}
	total := 1 + 5e-10
	if relErr(m.PiS(), 0.2/total) > 1e-15 || m.PiS() == 0.2 {
		t.Errorf("π_s = %.17g, want 0.2/%v", m.PiS(), total)
	}
}

// New(m.PiS(), m.PiBottom()) is m again, whether New kept the masses or
// renormalized them, for random masses and domain sizes.
func TestNewRebuildsItsOwnMasses(t *testing.T) {
	r := rng.NewSeeded(11)
	for trial := range 500 {
		V := 1 + r.IntN(200)
		if trial%50 == 0 {
			V = 1 + r.IntN(1<<16)
		}
		ps := 0.01 + 0.98*r.Float64()
		w := make([]float64, V+1)
		var sw float64
		for o := range w {
			w[o] = 0.01 + r.Float64()
			sw += w[o]
		}
		pb := make([]float64, V+1)
		for o := range pb {
			// Off from a sum of 1 by rounding, or by up to 5e-10 on purpose.
			pb[o] = w[o] / sw * (1 - ps) * (1 + float64(trial%3)*2e-10*(r.Float64()-0.5))
		}
		m, err := New(Options{Values: V, PiS: ps, PiBottom: pb})
		if err != nil {
			t.Fatalf("V = %d: %v", V, err)
		}
		again, err := New(Options{Values: V, PiS: m.PiS(), PiBottom: m.PiBottom()})
		if err != nil {
			t.Fatalf("V = %d, rebuilt: %v", V, err)
		}
		if again.PiS() != m.PiS() || !slices.Equal(again.PiBottom(), m.PiBottom()) || again.Epsilon() != m.Epsilon() {
			t.Fatalf("V = %d: rebuilt π_s %.17g (ε %v), want %.17g (ε %v)", V, again.PiS(), again.Epsilon(), m.PiS(), m.Epsilon())
		}
	}
}

func TestEpsilonMatchesHandValues(t *testing.T) {
	cases := []struct {
		name string
		o    Options
		want float64
	}{
		// Default π_⊥ = 0.8/4 = 0.2: ln((0.2 + 0.2)/0.2) = ln 2.
		{"uniform", Options{Values: 3, PiS: 0.2}, math.Ln2},
		// Worst value is ⊥3 (π_⊥3 = 0.2): ln 2; ⊥0 (0.05) does not count.
		{"participants only", Options{Values: 3, PiS: 0.2, PiBottom: []float64{0.05, 0.3, 0.25, 0.2}}, math.Ln2},
		// With non-participants ⊥0 counts: ln(0.25/0.05) = ln 5.
		{"with non-participants", Options{Values: 3, PiS: 0.2, PiBottom: []float64{0.05, 0.3, 0.25, 0.2}, NonParticipants: true}, math.Log(5)},
		// V = 2, π_s = 0.05: π_⊥ = 0.95/3, ε = ln(1 + 0.05·3/0.95) = ln(1.1/0.95).
		{"small π_s", Options{Values: 2, PiS: 0.05}, math.Log(1.1 / 0.95)},
		{"one value", Options{Values: 1, PiS: 0.3}, 0},
	}
	for _, c := range cases {
		m, err := New(c.o)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Epsilon(); relErr(got, c.want) > 1e-14 && !(c.want == 0 && got == 0) {
			t.Errorf("%s: ε = %.17g, want %.17g", c.name, got, c.want)
		}
	}
}

func TestRoundTwoWorstRatioIsExpEpsilon(t *testing.T) {
	// Exact, from the probability vectors: the largest P[⊥o | a]/P[⊥o | b]
	// over outputs o and true values a, b equals e^ε; round one's ratio is 1.
	configs := []Options{
		{Values: 5, PiS: 0.3},
		{Values: 3, PiS: 0.2, PiBottom: []float64{0.05, 0.3, 0.25, 0.2}},
		{Values: 3, PiS: 0.2, PiBottom: []float64{0.05, 0.3, 0.25, 0.2}, NonParticipants: true},
		{Values: 4, PiS: 0.6, PiBottom: []float64{0.01, 0.09, 0.1, 0.15, 0.05}, NonParticipants: true},
	}
	for _, o := range configs {
		m, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		start := 1
		if o.NonParticipants {
			start = 0
		}
		worst := 0.0
		for a := start; a <= o.Values; a++ {
			pa, _ := m.RoundTwo(a)
			for b := start; b <= o.Values; b++ {
				pb, _ := m.RoundTwo(b)
				for out := range pa {
					worst = max(worst, pa[out]/pb[out])
				}
			}
		}
		if e := math.Exp(m.Epsilon()); relErr(worst, e) > 1e-12 {
			t.Errorf("%+v: worst round-two ratio %.17g, e^ε = %.17g", o, worst, e)
		}
		var sum float64
		for _, p := range m.RoundOne() {
			sum += p
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("%+v: round one sums to %v", o, sum)
		}
	}
}

func TestReportsFollowRoundOneAndRoundTwoDistributions(t *testing.T) {
	const draws = 200000
	configs := []Options{
		{Values: 4, PiS: 0.3},
		{Values: 3, PiS: 0.2, PiBottom: []float64{0.05, 0.3, 0.25, 0.2}, NonParticipants: true},
		{Values: 3, PiS: 0.5, PiBottom: []float64{0, 0.2, 0.2, 0.1}}, // ⊥0 only via π_s
	}
	for k, o := range configs {
		m, _ := New(o)
		g := rng.NewSeeded(uint64(k + 1))
		for _, v := range []int{o.Values, 1, 0} {
			if v == 0 && !o.NonParticipants {
				if _, _, err := m.Report(g, 0); err == nil {
					t.Errorf("%+v: true value 0 accepted without NonParticipants", o)
				}
				continue
			}
			tally := m.NewTally()
			for range draws {
				one, two, err := m.Report(g, v)
				if err != nil {
					t.Fatal(err)
				}
				_ = tally.Add(one, two)
			}
			p2, _ := m.RoundTwo(v)
			c1, c2 := roundCounts(tally)
			// False-alarm probability 1e-6 per check.
			stattest.AssertChiSquare(t, fmt.Sprintf("config %d v %d round one", k, v), c1, m.RoundOne(), 1e-6)
			stattest.AssertChiSquare(t, fmt.Sprintf("config %d v %d round two", k, v), c2, p2, 1e-6)
		}
		if _, _, err := m.Report(g, o.Values+1); err == nil {
			t.Errorf("%+v: true value V + 1 accepted", o)
		}
	}
}

func TestRoundOneDoesNotDependOnTheTrueValue(t *testing.T) {
	// Homogeneity chi-square of the 2 × (V + 1) table of round-one reports of
	// owners with true values 1 and V: (V − 1)·1 = V degrees of freedom
	// (one per output beyond the first), false-alarm probability 1e-6.
	const draws = 100000
	m, _ := New(Options{Values: 5, PiS: 0.4})
	g := rng.NewSeeded(8)
	rows := [2][]int64{make([]int64, 6), make([]int64, 6)}
	for i, v := range []int{1, 5} {
		for range draws {
			one, _, _ := m.Report(g, v)
			rows[i][one]++
		}
	}
	var stat float64
	for o := range 6 {
		col := float64(rows[0][o] + rows[1][o])
		for i := range 2 {
			e := col / 2 // equal row totals
			d := float64(rows[i][o]) - e
			stat += d * d / e
		}
	}
	if p := (distuv.ChiSquared{K: 5}).Survival(stat); p < 1e-6 {
		t.Errorf("round one differs between true values 1 and 5: chi-square %.1f, p = %.3g\n%v\n%v", stat, p, rows[0], rows[1])
	}
}

func TestRoundsAreDrawnIndependently(t *testing.T) {
	// The pair (round one, round two) must have the product distribution;
	// a shared draw would put all π_s mass on the pair (⊥0, ⊥v).
	const draws = 300000
	m, _ := New(Options{Values: 3, PiS: 0.3})
	g := rng.NewSeeded(13)
	const v = 2
	joint := make([]int64, 16)
	for range draws {
		one, two, _ := m.Report(g, v)
		joint[one*4+two]++
	}
	p1 := m.RoundOne()
	p2, _ := m.RoundTwo(v)
	probs := make([]float64, 16)
	for a := range 4 {
		for b := range 4 {
			probs[a*4+b] = p1[a] * p2[b]
		}
	}
	// False-alarm probability 1e-6.
	stattest.AssertChiSquare(t, "joint of rounds one and two", joint, probs, 1e-6)
}

func BenchmarkReport(b *testing.B) {
	for _, V := range []int{2, 16, 1000} {
		b.Run(fmt.Sprintf("V%d", V), func(b *testing.B) {
			m, _ := New(Options{Values: V, PiS: 0.3})
			g := rng.NewSeeded(1)
			v := 1
			for b.Loop() {
				_, _, _ = m.Report(g, v)
				if v++; v > V {
					v = 1
				}
			}
		})
	}
}

// cdfTable is the table C_0..C_V of ⌊2^64·(π_⊥0 + … + π_⊥i)⌋ that draws
// searched before the strided sums.
func cdfTable(m *Mechanism) []uint64 {
	cdf := make([]uint64, m.Values()+1)
	var cum float64
	for o, p := range m.PiBottom() {
		cum += p
		cdf[o] = toUint64(cum)
	}
	return cdf
}

// tableOutcome is the draw as it was made with the table: the smallest i
// with u < C_i, or V + 1 when there is none.
func tableOutcome(cdf []uint64, u uint64) int {
	i, _ := slices.BinarySearchFunc(cdf, u, func(c, u uint64) int {
		if c <= u {
			return -1
		}
		return 1
	})
	return i
}

// The strided partial sums give every word u the outcome the full table
// gave, so a seeded release is the same bytes: at every table entry C_i and
// its neighbours, and at random words, for equal masses (one number) and
// unequal ones, with every C_i stored and strided.
func TestStridedDrawEqualsTheTableDraw(t *testing.T) {
	r := rng.NewSeeded(17)
	unequal := func(V int, ps float64) []float64 {
		pb := make([]float64, V+1)
		var sum float64
		for o := range pb {
			if o > 0 { // a zero π_⊥0 is never drawn
				pb[o] = r.Float64()
			}
			sum += pb[o]
		}
		for o := range pb {
			pb[o] *= (1 - ps) / sum
		}
		return pb
	}
	cases := []Options{
		{Values: 1, PiS: 0.5},
		{Values: 15, PiS: 0.1},
		{Values: 1000, PiS: 0.9},
		{Values: smallTable - 1, PiS: 0.3}, // every C_i stored
		{Values: smallTable, PiS: 0.3},     // strides of 16
		{Values: smallTable + 16*3 + 5, PiS: 0.05},
		{Values: 100003, PiS: 0.1},
		{Values: 40, PiS: 0.2, PiBottom: unequal(40, 0.2)},
		{Values: 10000, PiS: 0.01, PiBottom: unequal(10000, 0.01)},
	}
	for _, c := range cases {
		m, err := New(c)
		if err != nil {
			t.Fatalf("V = %d: %v", c.Values, err)
		}
		if _, uniform := m.UniformMass(); uniform != (c.PiBottom == nil) {
			t.Errorf("V = %d: UniformMass says %v", c.Values, uniform)
		}
		cdf := cdfTable(m)
		check := func(u uint64) bool {
			if got, want := m.outcome(u), tableOutcome(cdf, u); got != want {
				t.Errorf("V = %d, u = %#x: outcome %d, the table's %d", c.Values, u, got, want)
				return false
			}
			return true
		}
		for o, ci := range cdf {
			if o%97 != 0 && c.Values > 5000 {
				continue // every entry of the smaller tables, a sample of the large
			}
			if !check(ci-1) || !check(ci) || !check(ci+1) {
				break
			}
		}
		for range 20000 {
			if !check(r.Uint64()) {
				break
			}
		}
		for _, u := range []uint64{0, 1, math.MaxUint64 - 1, math.MaxUint64} {
			check(u)
		}
	}
}
