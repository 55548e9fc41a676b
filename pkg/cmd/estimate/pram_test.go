package estimate

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/estimate"
	"github.com/pramkit/pramkit/pkg/pram"
	"github.com/pramkit/pramkit/pkg/table"
)

// The pramFixture release: columns a (x, y) and b (numbers bucketed by cuts
// 10, 20 into <10, 10-19, 20+), K = 6, γ = 3 (q = 8), n = 100, m = 12
// rows with the counts below. The inverse estimate by hand,
// T̂(g) = (8·T(g) − 1)/2:
//
//	x,<10    4/12 → 5/6      y,<10    1/12 → −1/6
//	x,10-19  2/12 → 1/6      y,10-19  3/12 → 1/2
//	x,20+    0    → −1/2     y,20+    2/12 → 1/6
const pramFixtureCodebook = `{"columns": [
  {"name": "a", "categories": ["x", "y"]},
  {"name": "b", "cuts": [10, 20]}
]}`

var (
	pramFixtureCounts = map[[2]string]int{
		{"x", "<10"}: 4, {"x", "10-19"}: 2, {"y", "<10"}: 1, {"y", "10-19"}: 3, {"y", "20+"}: 2,
	}
	pramFixtureInverse = []float64{5.0 / 6, 1.0 / 6, -0.5, -1.0 / 6, 0.5, 1.0 / 6}
	pramFixtureLabels  = [][2]string{{"x", "<10"}, {"x", "10-19"}, {"x", "20+"}, {"y", "<10"}, {"y", "10-19"}, {"y", "20+"}}
)

type pramFixture struct {
	t   *testing.T
	dir string
	cb  *codebook.Codebook
}

func newPRAMFixture(t *testing.T) *pramFixture {
	t.Helper()
	cb, err := codebook.Parse([]byte(pramFixtureCodebook))
	if err != nil {
		t.Fatal(err)
	}
	return &pramFixture{t: t, dir: t.TempDir(), cb: cb}
}

func (f *pramFixture) path(name string) string { return filepath.Join(f.dir, name) }

// meta returns the metadata decrypt writes for the pramFixture.
func (f *pramFixture) meta() table.Meta {
	f.t.Helper()
	meta := table.Meta{
		"stage": "decrypt", "mechanism": "gamma-diagonal", "gamma": "3", "K": "6",
		"n": "100", "m": "12", "fingerprint": "00ff", "releases": "1", "sample_id": "position",
	}
	meta.SetFloat("epsilon", math.Log(1.24))
	var cols []map[string]any
	for _, c := range f.cb.Columns {
		one, err := f.cb.Select([]string{c.Name()})
		if err != nil {
			f.t.Fatal(err)
		}
		cols = append(cols, map[string]any{"name": c.Name(), "k": c.K(), "codebook_hash": one.Hash(), "key_id": "1", "pad": "otp"})
	}
	if err := meta.SetJSON("columns", cols); err != nil {
		f.t.Fatal(err)
	}
	js, err := f.cb.MarshalJSON()
	if err != nil {
		f.t.Fatal(err)
	}
	meta["codebook"] = string(js)
	return meta
}

// rows returns the pramFixture's released rows in a scrambled order.
func pramFixtureRows() [][]string {
	var rows [][]string
	for _, l := range pramFixtureLabels {
		for range pramFixtureCounts[l] {
			rows = append(rows, []string{l[0], l[1]})
		}
	}
	// Interleave, so that nothing depends on the rows being grouped.
	out := make([][]string, 0, len(rows))
	for i := range rows {
		out = append(out, rows[(i*5)%len(rows)])
	}
	return out
}

// write writes a table (CSV with its metadata sidecar; meta nil: none).
func (f *pramFixture) write(name string, header []string, rows [][]string, meta table.Meta) string {
	f.t.Helper()
	p := f.path(name)
	if meta == nil {
		var b strings.Builder
		w := csv.NewWriter(&b)
		w.Write(header)
		w.WriteAll(rows)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			f.t.Fatal(err)
		}
		return p
	}
	schema := table.StringSchema(header)
	w, err := table.Create(p, schema, meta, table.WriteOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	defer w.Abort()
	bb := table.NewBatchBuilder(schema)
	defer bb.Release()
	for _, r := range rows {
		bb.AppendStrings(r)
	}
	rec := bb.NewBatch()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		f.t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// release writes the pramFixture release, with edit applied to its metadata.
func (f *pramFixture) release(name string, edit func(table.Meta)) string {
	meta := f.meta()
	if edit != nil {
		edit(meta)
	}
	return f.write(name, []string{"a", "b"}, pramFixtureRows(), meta)
}

// truth writes Alice's (id, a) and Bob's (id, b) original tables: n = 100
// people, b as raw numbers; Bob's rows reversed when reversed.
func (f *pramFixture) truth(reversed bool) (alice, bob string, t []float64) {
	var ra, rb [][]string
	t = make([]float64, 6)
	for i := range 100 {
		a, x := "x", 0
		if i%3 == 0 {
			a, x = "y", 1
		}
		b := (i * 7) % 30
		ra = append(ra, []string{fmt.Sprint("p", i), a})
		rb = append(rb, []string{fmt.Sprint("p", i), fmt.Sprint(b)})
		t[x*3+b/10] += 1.0 / 100
	}
	if reversed {
		slices.Reverse(rb)
	}
	name := "bob.csv"
	if reversed {
		name = "bob-reversed.csv"
	}
	return f.write("alice.csv", []string{"id", "a"}, ra, nil), f.write(name, []string{"id", "b"}, rb, nil), t
}

// parseOutput reads estimate's CSV output (after the #pramkit line).
func pramParseOutput(t *testing.T, out string) (header []string, rows []map[string]string) {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "#pramkit ") {
			lines = append(lines, l)
		}
	}
	recs, err := csv.NewReader(strings.NewReader(strings.Join(lines, "\n"))).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("output is not CSV (%v): %q", err, out)
	}
	header = recs[0]
	for _, r := range recs[1:] {
		row := map[string]string{}
		for j, h := range header {
			row[h] = r[j]
		}
		rows = append(rows, row)
	}
	return header, rows
}

func pramNum(t *testing.T, s string) float64 {
	t.Helper()
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return x
}

func TestPRAMFlagsParse(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(*testing.T, *Options)
	}{
		{"defaults", nil, func(t *testing.T, o *Options) {
			p := *o.pramOpts()
			if p.Method != "mle" || p.CI != "wilson" || p.Level != 0.95 || p.Reps != 200 ||
				p.MaxIter != estimate.DefaultMaxIter || p.Tol != estimate.DefaultTol || len(p.Marginals) != 0 {
				t.Errorf("defaults: %+v", p)
			}
		}},
		{"marginals repeat and split", []string{"--marginal", "a,b", "--marginal", "c"}, func(t *testing.T, o *Options) {
			got, err := o.pramOpts().marginalNames()
			if err != nil || !slices.Equal(got, []string{"a", "b", "c"}) {
				t.Errorf("marginalNames = %v, %v", got, err)
			}
		}},
		{"overrides", []string{"--gamma", "2.5", "-n", "1000", "-m", "50", "--method", "inverse", "rel.csv"}, func(t *testing.T, o *Options) {
			if o.pramOpts().Gamma != 2.5 || o.pramOpts().N != 1000 || o.pramOpts().M != 50 || o.pramOpts().Method != "inverse" || o.Input != "rel.csv" {
				t.Errorf("parsed %+v, input %q", *o.pramOpts(), o.Input)
			}
		}},
		{"truth files and id", []string{"--truth", "a.csv", "--truth", "b.csv", "--truth-id", "id"}, func(t *testing.T, o *Options) {
			if !slices.Equal(o.Truth, []string{"a.csv", "b.csv"}) || o.pramOpts().TruthID != "id" {
				t.Errorf("truth %v, id %q", o.Truth, o.pramOpts().TruthID)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *Options
			cmd := NewCmd(&cli.Streams{}, func(o *Options) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			tt.check(t, got)
		})
	}
}

func TestPRAMSettingsRejectBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--method", "ls"}, "--method"},
		{[]string{"--ci", "wald"}, "--ci"},
		{[]string{"--ci", "bootstrap", "--method", "inverse"}, "bootstrap"},
		{[]string{"--level", "1"}, "--level"},
		{[]string{"--level", "NaN"}, "--level"},
		{[]string{"--replicates", "1"}, "--replicates"},
		{[]string{"--max-iter", "0"}, "--max-iter"},
		{[]string{"--tol", "-1"}, "--tol"},
		{[]string{"--tol", "+Inf"}, "--tol"},
		{[]string{"--gamma", "1"}, "--gamma"},
		{[]string{"--gamma", "NaN"}, "--gamma"},
		{[]string{"-n", "0"}, "-n"},
		{[]string{"-m", "-3"}, "-m"},
		{[]string{"--truth-id", "id"}, "--truth"},
	}
	for _, tt := range tests {
		var got *Options
		cmd := NewCmd(&cli.Streams{}, func(o *Options) error { got = o; return nil })
		cmd.SetArgs(tt.args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		_, err := got.parsePRAMSettings()
		if err == nil || cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want a usage error naming %s", tt.args, err, tt.want)
		}
	}
}

func TestPRAMInverseHandValues(t *testing.T) {
	// Every one of the K = 6 values is listed, the never-observed x,20+
	// included (its inverse estimate is −1/(γ − 1) = −1/2).
	f := newPRAMFixture(t)
	rel := f.release("rel.csv", nil)
	out := pramMustRun(t, NewCmd, "--method", "inverse", rel)
	header, rows := pramParseOutput(t, out)
	if want := []string{"a", "b", "estimate", "observed", "count", "ci_low", "ci_high"}; !slices.Equal(header, want) {
		t.Fatalf("header %v, want %v", header, want)
	}
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 6", len(rows))
	}
	for g, row := range rows {
		l := pramFixtureLabels[g]
		if row["a"] != l[0] || row["b"] != l[1] {
			t.Errorf("row %d is %s,%s, want %s,%s (codebook order)", g, row["a"], row["b"], l[0], l[1])
		}
		if got := pramNum(t, row["estimate"]); math.Abs(got-pramFixtureInverse[g]) > 1e-12 {
			t.Errorf("%v: estimate %v, want %v", l, got, pramFixtureInverse[g])
		}
		n := pramFixtureCounts[l]
		if row["count"] != fmt.Sprint(n) || math.Abs(pramNum(t, row["observed"])-float64(n)/12) > 1e-15 {
			t.Errorf("%v: observed %s count %s, want %v and %d", l, row["observed"], row["count"], float64(n)/12, n)
		}
		lo, hi := pramNum(t, row["ci_low"]), pramNum(t, row["ci_high"])
		if !(0 <= lo && lo <= hi && hi <= 1) {
			t.Errorf("%v: interval [%v, %v] not inside [0, 1]", l, lo, hi)
		}
	}
}

func TestPRAMIntervalsAreTheLibrarys(t *testing.T) {
	// The table's ci_low/ci_high are estimate.InverseInterval of the
	// release's counts (Wilson, tested for coverage in pkg/estimate), at
	// --level.
	f := newPRAMFixture(t)
	rel := f.release("rel.csv", nil)
	var dense []int64
	for _, l := range pramFixtureLabels {
		dense = append(dense, int64(pramFixtureCounts[l]))
	}
	c, err := estimate.CountsFromDense(dense)
	if err != nil {
		t.Fatal(err)
	}
	iv, err := estimate.InverseInterval(c, 3, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	_, rows := pramParseOutput(t, pramMustRun(t, NewCmd, "--level", "0.9", rel))
	for g, row := range rows {
		lo, hi := iv.RestLo, iv.RestHi
		if i, ok := slices.BinarySearch(iv.Index, uint64(g)); ok {
			lo, hi = iv.Lo[i], iv.Hi[i]
		}
		if pramNum(t, row["ci_low"]) != lo || pramNum(t, row["ci_high"]) != hi {
			t.Errorf("value %d: interval [%s, %s], want [%v, %v]", g, row["ci_low"], row["ci_high"], lo, hi)
		}
	}
}

func TestPRAMMarginalSumsTheJointEstimate(t *testing.T) {
	f := newPRAMFixture(t)
	rel := f.release("rel.csv", nil)
	for _, method := range pramMethods {
		_, joint := pramParseOutput(t, pramMustRun(t, NewCmd, "--method", method, rel))
		for _, col := range []string{"a", "b"} {
			sum := map[string]float64{}
			for _, row := range joint {
				sum[row[col]] += pramNum(t, row["estimate"])
			}
			header, marg := pramParseOutput(t, pramMustRun(t, NewCmd, "--method", method, "--marginal", col, rel))
			if header[0] != col || len(marg) != len(sum) {
				t.Fatalf("%s --marginal %s: header %v, %d rows", method, col, header, len(marg))
			}
			for _, row := range marg {
				if got, want := pramNum(t, row["estimate"]), sum[row[col]]; math.Abs(got-want) > 1e-12 {
					t.Errorf("%s --marginal %s: %s estimate %v, joint sums to %v", method, col, row[col], got, want)
				}
			}
		}
	}
}

func TestPRAMColumnsAgreesWithMarginalForInverse(t *testing.T) {
	// --columns b estimates from the release restricted to b with
	// γ′ = 1 + (γ − 1)·K′/K; for the (linear) inverse this must equal the
	// marginal of the joint estimate, which checks γ′.
	f := newPRAMFixture(t)
	rel := f.release("rel.csv", nil)
	for _, col := range []string{"a", "b"} {
		_, byCols := pramParseOutput(t, pramMustRun(t, NewCmd, "--method", "inverse", "--columns", col, rel))
		_, byMarg := pramParseOutput(t, pramMustRun(t, NewCmd, "--method", "inverse", "--marginal", col, rel))
		if len(byCols) != len(byMarg) {
			t.Fatalf("%s: %d rows vs %d", col, len(byCols), len(byMarg))
		}
		for i := range byCols {
			a, b := pramNum(t, byCols[i]["estimate"]), pramNum(t, byMarg[i]["estimate"])
			if math.Abs(a-b) > 1e-12 {
				t.Errorf("%s=%s: --columns gives %v, --marginal %v", col, byCols[i][col], a, b)
			}
			// Same counts, same γ′: the Wilson intervals agree too.
			if byCols[i]["ci_low"] != byMarg[i]["ci_low"] || byCols[i]["ci_high"] != byMarg[i]["ci_high"] {
				t.Errorf("%s=%s: intervals differ", col, byCols[i][col])
			}
		}
	}
}

func TestPRAMRestrictGammaIsTheMarginalMechanism(t *testing.T) {
	// Exact check of γ′ against the matrix: for every true row x̌ and
	// every subset S of columns, the probability that the release agrees
	// with x̌ on S is Σ_{x̄ : x̄_S = x̌_S} A[x̄, x̌] = γ′/q′, and it equals a
	// given other value on S with probability 1/q′, q′ = γ′ + K′ − 1.
	for _, ks := range [][]uint32{{2, 3}, {3, 2, 4}} {
		d, err := pram.NewDomain(ks)
		if err != nil {
			t.Fatal(err)
		}
		mech, err := pram.NewMechanism(3.7, d)
		if err != nil {
			t.Fatal(err)
		}
		K := d.Size()
		x, y := make([]uint32, len(ks)), make([]uint32, len(ks))
		for mask := 1; mask < 1<<len(ks); mask++ {
			var keep []int
			Kp := uint64(1)
			for j := range ks {
				if mask&(1<<j) != 0 {
					keep = append(keep, j)
					Kp *= uint64(ks[j])
				}
			}
			gp := pram.RestrictGamma(3.7, K, Kp)
			qp := gp + float64(Kp) - 1
			for from := range K {
				d.Decode(from, x)
				var same, other float64
				for to := range K {
					d.Decode(to, y)
					agree := true
					for _, j := range keep {
						agree = agree && x[j] == y[j]
					}
					if agree {
						same += mech.Transition(to, from)
					} else {
						other += mech.Transition(to, from)
					}
				}
				if math.Abs(same-gp/qp) > 1e-12 || math.Abs(other-float64(Kp-1)/qp) > 1e-12 {
					t.Fatalf("ks %v keep %v from %d: P(same) %v, want γ′/q′ = %v", ks, keep, from, same, gp/qp)
				}
			}
		}
	}
}

// pramMatrix is A(γ) over K values, dense.
func pramMatrix(gamma float64, K int) *mat.Dense {
	q := gamma + float64(K) - 1
	a := mat.NewDense(K, K, nil)
	for i := range K {
		for j := range K {
			a.Set(i, j, 1/q)
		}
		a.Set(i, i, gamma/q)
	}
	return a
}

func TestPRAMCombineGammaIsTheMatrixProduct(t *testing.T) {
	// A re-perturbed release went through A(γ₂)·A(γ₁): it must be
	// A(pram.CombineGammas(K, {γ₁, γ₂})), to rounding.
	for _, tt := range []struct {
		g1, g2 float64
		K      int
	}{{3, 3, 6}, {28.2, 14.6, 32}, {1.5, 100, 5}} {
		var prod mat.Dense
		prod.Mul(pramMatrix(tt.g2, tt.K), pramMatrix(tt.g1, tt.K))
		g, err := pram.CombineGammas(uint64(tt.K), []float64{tt.g1, tt.g2})
		if err != nil {
			t.Fatal(err)
		}
		if want := pramMatrix(g, tt.K); !mat.EqualApprox(&prod, want, 1e-14) {
			t.Errorf("γ %v then %v, K = %d: product is not A(%v)", tt.g1, tt.g2, tt.K, g)
		}
	}
}

func TestPRAMSummaryAccountsPrivacy(t *testing.T) {
	f := newPRAMFixture(t)
	rel := f.release("rel.csv", nil)
	s, err := pramEstimateJSON(rel)
	if err != nil {
		t.Fatal(err)
	}
	eps, _ := pram.EpsilonFromGamma(100, 12, 3)
	bound, _ := estimate.Bound(6, 3, 12)
	plan, _ := estimate.NewPlan(100, 6, eps)
	if s.Method != "mle" || s.Epsilon != eps || s.Gamma != 3 || s.N != 100 || s.M != 12 || s.K != 6 ||
		s.Bound != bound || s.Releases != 1 || s.EpsilonComposed != nil || s.MOpt != plan.M || s.BoundAtMOpt != plan.Bound ||
		s.ObservedValues != 5 || !slices.Equal(s.Columns, []string{"a", "b"}) || s.Converged == nil || !*s.Converged || s.L2Error != nil {
		t.Errorf("summary %+v", s)
	}
	// ε = ln((n + m(γ − 1))/n) = ln(1.24) here (Theorem III.2).
	if math.Abs(s.Epsilon-math.Log(1.24)) > 1e-15 {
		t.Errorf("ε = %v, want ln 1.24", s.Epsilon)
	}

	// Overrides change ε, with a warning each.
	code, out, errs := pramRunTool(NewCmd, "--json", "--gamma", "5", "-n", "400", rel)
	if code != 0 {
		t.Fatal(errs)
	}
	var o pramSummary
	json.Unmarshal([]byte(out), &o)
	if want := math.Log((400 + 12*4) / 400.0); math.Abs(o.Epsilon-want) > 1e-15 || o.Gamma != 5 || o.N != 400 {
		t.Errorf("with --gamma 5 -n 400: %+v, want ε = %v", o, want)
	}
	if !strings.Contains(errs, "--gamma 5 overrides γ = 3") || !strings.Contains(errs, "-n 400 overrides n = 100") {
		t.Errorf("no override warnings: %q", errs)
	}
}

func TestPRAMRePerturbedRelease(t *testing.T) {
	// The second release of a sample (γ₁ = 2, then γ₂ = 3: Γ = 6) is
	// estimated with their combined γ, and reports ε₂ = ln((n + m(Γ − 1))/n).
	f := newPRAMFixture(t)
	rel := f.release("rel.csv", func(m table.Meta) { m["releases"] = "2"; m["gamma_composed"] = "6" })
	s, err := pramEstimateJSON("--method", "inverse", rel)
	if err != nil {
		t.Fatal(err)
	}
	composed, _ := pram.ComposedEpsilon(100, 12, math.Sqrt(6), 2)
	if s.Releases != 2 || s.EpsilonComposed == nil || math.Abs(*s.EpsilonComposed-composed) > 1e-12 ||
		math.Abs(*s.EpsilonComposed-math.Log((100+12*5)/100.0)) > 1e-12 {
		t.Errorf("summary %+v, want epsilon_composed %v", s, composed)
	}
	if want, _ := pram.CombineGammas(6, []float64{2, 3}); s.GammaEstimated == nil || *s.GammaEstimated != want {
		t.Errorf("gamma_estimated %v, want %v", s.GammaEstimated, want)
	}
}

// TestPRAMThreePerturbations: a release perturbed three times (γ = 2, 4,
// then 3) whose metadata lists its γ's is estimated with their combined γ,
// which for K = 6 is, by a = a₁a₂/(a₁ + a₂ + K): 1·3/(1 + 3 + 6) = 0.3,
// then 0.3·2/(0.3 + 2 + 6) = 0.6/8.3, so γ = 1 + 6/83; and reports
// ε₃ = ln((n + m(24 − 1))/n) = ln((100 + 12·23)/100) = ln 3.76.
func TestPRAMThreePerturbations(t *testing.T) {
	f := newPRAMFixture(t)
	three := func(m table.Meta) { m["releases"] = "3"; m["gamma_composed"] = "24"; m["gammas"] = "[2,4,3]" }
	s, err := pramEstimateJSON("--method", "inverse", f.release("r3.csv", three))
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + 6.0/83; s.GammaEstimated == nil || math.Abs(*s.GammaEstimated-want) > 1e-15 {
		t.Errorf("gamma_estimated %v, want %v", s.GammaEstimated, want)
	}
	if s.Releases != 3 || s.EpsilonComposed == nil || math.Abs(*s.EpsilonComposed-math.Log(3.76)) > 1e-12 {
		t.Errorf("summary %+v, want releases 3, epsilon_composed ln 3.76", s)
	}
	// A list that contradicts the rest of the metadata is refused.
	for _, tt := range []struct {
		edit func(table.Meta)
		want string
	}{
		{func(m table.Meta) { three(m); m["gammas"] = "[2,3,4]" }, "is not the last of its"},
		{func(m table.Meta) { three(m); m["gammas"] = "[2,4,4]" }, "multiplies to 32"},
		{func(m table.Meta) { three(m); m["gammas"] = "[24]" }, "lists 1 γ's for 3 releases"},
	} {
		_, err := pramEstimateJSON(f.release("bad.csv", tt.edit))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want %q", err, tt.want)
		}
	}
}

// TestPRAMLedgerReleases: a release whose sample perturb had released
// before from another copy of its files (sample_releases in the metadata)
// reports perturb's composed ε, while the estimate undoes this file's one
// perturbation.
func TestPRAMLedgerReleases(t *testing.T) {
	f := newPRAMFixture(t)
	rel := f.release("rel.csv", func(m table.Meta) { m["sample_releases"] = "2"; m["epsilon_composed"] = "0.5" })
	s, err := pramEstimateJSON("--method", "inverse", rel)
	if err != nil {
		t.Fatal(err)
	}
	if s.Releases != 1 || s.SampleReleases != 2 || s.EpsilonComposed == nil || *s.EpsilonComposed != 0.5 || s.GammaEstimated != nil {
		t.Errorf("summary %+v", s)
	}
	bad := f.release("bad.csv", func(m table.Meta) { m["sample_releases"] = "2" })
	if _, err := pramEstimateJSON(bad); err == nil || !strings.Contains(err.Error(), "sample_releases and epsilon_composed are not valid") {
		t.Errorf("error %v", err)
	}
}

// TestPRAMInverseUnbiasedAfterThreePerturbations perturbs a fixed sample
// of m = 200 rows over K = 6 values three times (γ = 4, 6, 9, as perturb
// does to a release perturbed again twice) in each of 4000 draws, and
// checks that the inverse estimate with the combined γ of pram.CombineGammas
// averages to the sample's true type in every cell. Each cell's mean has a
// standard deviation of q/(γ − 1)·sqrt(p(1 − p)/m)/sqrt(draws), p the
// probability that a released row has that value; a tolerance of 5 of them
// falsely rejects a cell with probability 5.7·10⁻⁷, all six together below
// 3.5·10⁻⁶.
func TestPRAMInverseUnbiasedAfterThreePerturbations(t *testing.T) {
	dom, err := pram.NewDomain([]uint32{2, 3})
	if err != nil {
		t.Fatal(err)
	}
	gammas := []float64{4, 6, 9}
	gc, err := pram.CombineGammas(dom.Size(), gammas)
	if err != nil {
		t.Fatal(err)
	}
	const m, draws, K = 200, 4000, 6
	share := []float64{0.4, 0.05, 0.2, 0.15, 0.2, 0} // a type of m = 200 rows
	var rows []uint64
	for g, s := range share {
		for range int(math.Round(s * m)) {
			rows = append(rows, uint64(g))
		}
	}
	mechs := make([]*pram.Mechanism, len(gammas))
	for i, g := range gammas {
		if mechs[i], err = pram.NewMechanism(g, dom); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(9, 3))
	mean := make([]float64, K)
	cols := [][]uint32{make([]uint32, m), make([]uint32, m)}
	x := make([]uint32, 2)
	for range draws {
		for i, g := range rows {
			dom.Decode(g, x)
			cols[0][i], cols[1][i] = x[0], x[1]
		}
		for _, mech := range mechs {
			if err := mech.PerturbColumns(r, cols); err != nil {
				t.Fatal(err)
			}
		}
		count := make([]int64, K)
		for i := range m {
			g, _ := dom.Encode([]uint32{cols[0][i], cols[1][i]})
			count[g]++
		}
		c, err := estimate.CountsFromDense(count)
		if err != nil {
			t.Fatal(err)
		}
		v, err := estimate.Inverse(c, gc)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := v.Dense()
		for g := range mean {
			mean[g] += d[g] / draws
		}
	}
	q := gc + K - 1
	for g := range mean {
		p := (gc*share[g] + (1 - share[g])) / q // P(released value = g)
		sd := q / (gc - 1) * math.Sqrt(p*(1-p)/m) / math.Sqrt(draws)
		if math.Abs(mean[g]-share[g]) > 5*sd {
			t.Errorf("cell %d: mean estimate %.4f over %d draws, true share %.4f (sd %.4f)", g, mean[g], draws, share[g], sd)
		}
	}
}

func TestPRAMTruthJoinsByPositionAndByID(t *testing.T) {
	// Alice's file has a, Bob's b as raw numbers (bucketed by the codebook's
	// cuts). Joined by position, or by id with Bob's rows reversed, the
	// l2_error must be ‖T̂ − t‖₂ for the hand-computed inverse T̂.
	f := newPRAMFixture(t)
	rel := f.release("rel.csv", nil)
	alice, bob, truth := f.truth(false)
	_, bobRev, _ := f.truth(true)
	var want float64
	for g, e := range pramFixtureInverse {
		want += (e - truth[g]) * (e - truth[g])
	}
	want = math.Sqrt(want)
	for _, args := range [][]string{
		{"--truth", alice, "--truth", bob},
		{"--truth", bob, "--truth", alice},
		{"--truth", alice, "--truth", bobRev, "--truth-id", "id"},
	} {
		s, err := pramEstimateJSON(append([]string{"--method", "inverse", rel}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if s.L2Error == nil || math.Abs(*s.L2Error-want) > 1e-12 {
			t.Errorf("%v: l2_error %v, want %v", args, s.L2Error, want)
		}
	}
	// The table gets the true shares, and the marginal its own error.
	_, rows := pramParseOutput(t, pramMustRun(t, NewCmd, "--method", "inverse", "--truth", alice, "--truth", bob, rel))
	for g, row := range rows {
		if math.Abs(pramNum(t, row["truth"])-truth[g]) > 1e-15 {
			t.Errorf("value %d: truth %s, want %v", g, row["truth"], truth[g])
		}
	}
	s, err := pramEstimateJSON("--method", "inverse", "--marginal", "a", "--truth", alice, "--truth", bob, rel)
	if err != nil {
		t.Fatal(err)
	}
	ex, ey := pramFixtureInverse[0]+pramFixtureInverse[1]+pramFixtureInverse[2], pramFixtureInverse[3]+pramFixtureInverse[4]+pramFixtureInverse[5]
	tx, ty := truth[0]+truth[1]+truth[2], truth[3]+truth[4]+truth[5]
	if wantM := math.Hypot(ex-tx, ey-ty); s.L2Marginal == nil || math.Abs(*s.L2Marginal-wantM) > 1e-12 {
		t.Errorf("l2_error_marginal %v, want %v", s.L2Marginal, wantM)
	}
}

func TestPRAMAggregatesHugeDomains(t *testing.T) {
	// K = 1100 × 1000 > 1e6: the table lists the observed values and one
	// line (empty labels) for the K − L others, with a cells column.
	f := newPRAMFixture(t)
	cat := func(name string, k int) map[string]any {
		c := make([]string, k)
		for i := range c {
			c[i] = fmt.Sprint(name, i)
		}
		return map[string]any{"name": name, "categories": c}
	}
	js, _ := json.Marshal(map[string]any{"columns": []any{cat("u", 1100), cat("v", 1000)}})
	rows := [][]string{{"u3", "v7"}, {"u3", "v7"}, {"u1099", "v0"}, {"u0", "v999"}, {"u3", "v8"}}
	meta := table.Meta{"stage": "decrypt", "mechanism": "gamma-diagonal", "gamma": "5e5", "K": "1100000", "n": "1000", "m": "5", "codebook": string(js)}
	rel := f.write("huge.csv", []string{"u", "v"}, rows, meta)
	for _, method := range pramMethods {
		header, out := pramParseOutput(t, pramMustRun(t, NewCmd, "--method", method, rel))
		if !slices.Equal(header[:3], []string{"u", "v", "cells"}) || len(out) != 5 {
			t.Fatalf("%s: header %v, %d rows, want u,v,cells and 4 observed + 1", method, header, len(out))
		}
		var cells, mass float64
		for _, row := range out {
			c, e := pramNum(t, row["cells"]), pramNum(t, row["estimate"])
			cells += c
			mass += c * e
		}
		last := out[4]
		if last["u"] != "" || last["v"] != "" || last["count"] != "0" || pramNum(t, last["cells"]) != 1100000-4 {
			t.Errorf("%s: aggregate line %v", method, last)
		}
		if cells != 1100000 || math.Abs(mass-1) > 1e-9 {
			t.Errorf("%s: cells sum to %v, mass to %v; want K and 1", method, cells, mass)
		}
	}
}

func TestPRAMBootstrapIsReproducible(t *testing.T) {
	f := newPRAMFixture(t)
	rel := f.release("rel.csv", nil)
	args := []string{"--method", "projected", "--ci", "bootstrap", "--replicates", "50", "--seed", "7", rel}
	a, b := pramMustRun(t, NewCmd, args...), pramMustRun(t, NewCmd, args...)
	if a != b {
		t.Errorf("two runs with --seed 7 differ:\n%s\n%s", a, b)
	}
	_, rows := pramParseOutput(t, a)
	for _, row := range rows {
		lo, hi := pramNum(t, row["ci_low"]), pramNum(t, row["ci_high"])
		if !(0 <= lo && lo <= hi && hi <= 1) {
			t.Errorf("%v: bootstrap interval [%v, %v]", row, lo, hi)
		}
	}
}

func TestPRAMTableFileCarriesTheSummary(t *testing.T) {
	// --json with -o: the summary on stdout, the table in the file, whose
	// metadata holds the same items (and no mechanism: it is not a release).
	f := newPRAMFixture(t)
	rel := f.release("rel.csv", nil)
	out := f.path("est.parquet")
	s, err := pramEstimateJSON("--method", "inverse", "-o", out, rel)
	if err != nil {
		t.Fatal(err)
	}
	r, err := table.Open(out, table.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	meta := r.Meta()
	if meta["method"] != "inverse" || meta["stage"] != "estimate" || meta["bound"] != strconv.FormatFloat(s.Bound, 'g', -1, 64) {
		t.Errorf("metadata %v", meta)
	}
	if _, ok := meta["mechanism"]; ok {
		t.Errorf("the estimate's metadata names a mechanism: %v", meta)
	}
	if n := r.NumRows(); n != 6 {
		t.Errorf("%d rows, want 6", n)
	}
}

func TestPRAMBadInputFailsCleanly(t *testing.T) {
	// Each bad input: one line on stderr (plus the --help pointer for
	// usage errors), the right exit code, and no output file.
	f := newPRAMFixture(t)
	good := f.release("rel.csv", nil)
	alice, bob, _ := f.truth(false)
	_, bobRev, _ := f.truth(true)
	del := func(key string) func(table.Meta) { return func(m table.Meta) { delete(m, key) } }
	set := func(key, v string) func(table.Meta) { return func(m table.Meta) { m[key] = v } }
	otherCB, _ := codebook.Parse([]byte(`{"columns": [{"name": "a", "categories": ["y", "x"]}, {"name": "b", "cuts": [10, 20]}]}`))
	otherJS, _ := otherCB.MarshalJSON()
	otherPath := f.path("other.json")
	os.WriteFile(otherPath, otherJS, 0o644)
	badRows := pramFixtureRows()
	badRows[2] = []string{"z", "<10"}
	tests := []struct {
		name string
		file func() string
		args []string
		code int
		want string
	}{
		{"not a release", func() string { return f.write("plain.csv", []string{"a", "b"}, pramFixtureRows(), nil) }, nil, 1, "is not a pramkit release"},
		{"still encrypted", func() string { return f.release("enc.csv", set("stage", "perturb")) }, nil, 1, "still encrypted \\(stage perturb\\): decrypt it first"},
		{"no gamma", func() string { return f.release("nog.csv", del("gamma")) }, nil, 1, `no "gamma" in the metadata: pass --gamma G`},
		{"bad gamma", func() string { return f.release("g1.csv", set("gamma", "0.5")) }, nil, 1, "needs a finite γ > 1"},
		{"no n", func() string { return f.release("non.csv", del("n")) }, nil, 1, `no "n" in the metadata: pass -n N`},
		{"no codebook", func() string { return f.release("nocb.csv", del("codebook")) }, nil, 1, `no "codebook" in the metadata: pass --codebook FILE`},
		{"K not the codebooks'", func() string { return f.release("k.csv", set("K", "8")) }, nil, 1, `K = 8 joint values but the codebook gives a \(2\) × b \(3\) = 6: K does not match the codebooks`},
		{"k not the codebook's", func() string {
			return f.release("kj.csv", set("columns", `[{"name":"a","k":4},{"name":"b","k":3}]`))
		}, nil, 1, `column "a" has k = 4 values in the release but 2 in the codebook`},
		{"another codebook", func() string { return good }, []string{"--codebook", otherPath}, 1, `codebook of column "a" differs`},
		{"label outside the codebook", func() string { return f.write("lab.csv", []string{"a", "b"}, badRows, f.meta()) }, nil, 1, `row 3, column "a": value "z" is not one of the column's 2 codebook labels`},
		{"rows are not m", func() string {
			return f.release("m.csv", func(m table.Meta) {
				m["m"] = "13"
				eps, _ := pram.EpsilonFromGamma(100, 13, 3)
				m.SetFloat("epsilon", eps)
			})
		}, nil, 1, "has 12 rows but m = 13 rows were released"},
		{"epsilon not a number", func() string { return f.release("banana.csv", set("epsilon", "banana")) }, nil, 1, `banana.csv: metadata "epsilon" = "banana" is not a number; the file was edited or damaged — re-run perturb`},
		{"gamma edited", func() string { return f.release("g15.csv", set("gamma", "1.5")) }, nil, 1, `g15.csv: metadata "epsilon" = 0.21511137961694\d* does not match γ = 1.5, n = 100, m = 12 \(ε = ln\(\(n \+ m\(γ−1\)\)/n\) = 0.058268908123975\d*\); the file was edited or damaged — re-run perturb`},
		{"gamma edited, stage removed", func() string {
			return f.release("g15s.csv", func(m table.Meta) { m["gamma"] = "1.5"; delete(m, "stage") })
		}, nil, 1, `g15s.csv: metadata "epsilon" = 0.21511137961694\d* does not match γ = 1.5`},
		{"m above n", func() string { return f.release("m200.csv", set("m", "200")) }, nil, 1, `m200.csv: metadata "m" = 200 is out of range: a sample needs 1 ≤ m ≤ n = 100`},
		{"epsilon_composed edited", func() string {
			return f.release("ec.csv", func(m table.Meta) { m["releases"] = "2"; m["gamma_composed"] = "6"; m["epsilon_composed"] = "0.5" })
		}, nil, 1, `ec.csv: metadata "epsilon_composed" = 0.5 does not match Γ = 6, r = 2, n = 100, m = 12`},
		{"no rows", func() string { return f.write("empty.csv", []string{"a", "b"}, nil, f.meta()) }, nil, 1, "no data rows"},
		{"perturbed three times", func() string {
			return f.release("r3.csv", func(m table.Meta) { m["releases"] = "3"; m["gamma_composed"] = "27" })
		}, nil, 1, "perturbed 3 times"},
		{"unknown marginal", func() string { return good }, []string{"--marginal", "c"}, 2, `--marginal "c": .* has no such column \(its columns: a, b\)`},
		{"unknown columns", func() string { return good }, []string{"--columns", "a,c"}, 2, `--columns "c"`},
		{"truth with other rows", func() string { return good }, []string{"--truth", alice, "--truth", f.write("short.csv", []string{"b"}, [][]string{{"1"}}, nil)}, 1, "mismatched --truth: .*ends after 1 rows"},
		{"truth of another table", func() string { return good }, []string{"--truth", f.write("t99.csv", []string{"a", "b"}, slices.Repeat([][]string{{"x", "1"}}, 99), nil)}, 1, "mismatched --truth: the tables have 99 rows but the release was sampled from n = 100"},
		{"truth without a column", func() string { return good }, []string{"--truth", alice}, 1, "mismatched --truth: no --truth file has column b"},
		{"truth value outside the codebook", func() string { return good }, []string{"--truth", alice, "--truth", f.write("nan.csv", []string{"b"}, slices.Repeat([][]string{{"many"}}, 100), nil)}, 1, `row 1, column "b": value "many" is not in the codebook`},
		{"truth ids that differ", func() string { return good }, []string{"--truth", alice, "--truth", f.write("ids.csv", []string{"id", "b"}, slices.Repeat([][]string{{"q", "1"}}, 1), nil), "--truth-id", "id"}, 1, `mismatched --truth: id "q" is not in .*alice.csv`},
		{"truth without the id column", func() string { return good }, []string{"--truth", alice, "--truth", bobRev, "--truth-id", "key"}, 1, `has no id column "key"`},
		{"json and table on stdout", func() string { return good }, []string{"--json", "-o", "-"}, 2, "--json prints the summary on standard output"},
		{"a truth file with nothing new is ignored", func() string { return good }, []string{"--truth", alice, "--truth", bob, "--truth", bob, "--truth-id", "id"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := f.path("out-" + strings.ReplaceAll(tt.name, " ", "-") + ".csv")
			args := append([]string{tt.file(), "-o", out}, tt.args...)
			if slices.Contains(tt.args, "-o") {
				args = append([]string{tt.file()}, tt.args...)
			}
			code, _, errs := pramRunTool(NewCmd, args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tt.code, errs)
			}
			if tt.code == 0 {
				return
			}
			lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
			if tt.code == cli.ExitUsage && len(lines) == 2 && strings.HasPrefix(lines[1], "Run 'estimate --help'") {
				lines = lines[:1]
			}
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "estimate: ") {
				t.Errorf("stderr is not one line: %q", errs)
			}
			if !regexp.MustCompile(tt.want).MatchString(errs) {
				t.Errorf("stderr %q does not match %q", errs, tt.want)
			}
			if m, _ := filepath.Glob(out + "*"); len(m) > 0 {
				t.Errorf("output left behind: %v", m)
			}
		})
	}
}

func TestPRAMEMGapBoundsTheLikelihoodGap(t *testing.T) {
	// For the fixture's counts, ℓ(x̂) − ℓ(x) ≤ pramEMGap(x) for EM iterates
	// x after a few steps, x̂ the converged maximum (ℓ computed densely
	// here), and the gap is ~0 at the maximum.
	var dense []int64
	for _, l := range pramFixtureLabels {
		dense = append(dense, int64(pramFixtureCounts[l]))
	}
	c, err := estimate.CountsFromDense(dense)
	if err != nil {
		t.Fatal(err)
	}
	const gamma = 3.0
	loglik := func(x estimate.Vector) float64 {
		var ll float64
		for j, n := range dense {
			var ax float64
			for g := range uint64(6) {
				a := 1.0 / (gamma + 5)
				if g == uint64(j) {
					a = gamma / (gamma + 5)
				}
				ax += a * x.At(g)
			}
			ll += float64(n) * math.Log(ax)
		}
		return ll
	}
	best, err := estimate.MLE(c, gamma, estimate.EMOptions{Iterative: true, Tol: 1e-15, MaxIter: 1_000_000})
	if err != nil {
		t.Fatal(err)
	}
	if g := pramEMGap(c, gamma, best.Estimate); g > 1e-6 {
		t.Errorf("gap %v at the maximum", g)
	}
	top := loglik(best.Estimate)
	for _, iters := range []int{1, 3, 10, 100} {
		r, err := estimate.MLE(c, gamma, estimate.EMOptions{Iterative: true, MaxIter: iters})
		if err != nil {
			t.Fatal(err)
		}
		gap, real := pramEMGap(c, gamma, r.Estimate), top-loglik(r.Estimate)
		if real < 0 || real > gap+1e-12 {
			t.Errorf("after %d iterations: ℓ* − ℓ = %v, not within [0, gap = %v]", iters, real, gap)
		}
		// The gap is max_g ∂ℓ/∂x_g − ⟨∇ℓ, x⟩, here from the dense matrix.
		grad := make([]float64, 6)
		for j, n := range dense {
			var ax float64
			for g := range 6 {
				ax += pramMatrix(gamma, 6).At(j, g) * r.Estimate.At(uint64(g))
			}
			for g := range 6 {
				grad[g] += float64(n) * pramMatrix(gamma, 6).At(j, g) / ax
			}
		}
		var dot float64
		for g, d := range grad {
			dot += d * r.Estimate.At(uint64(g))
		}
		if want := slices.Max(grad) - dot; math.Abs(gap-want) > 1e-9 {
			t.Errorf("after %d iterations: gap %v, dense Frank–Wolfe gap %v", iters, gap, want)
		}
	}
}
