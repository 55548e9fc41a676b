package main

import (
	"bytes"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/adultquery"

	"github.com/pramkit/pramkit/internal/adulttest"
	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/estimate"
	"github.com/pramkit/pramkit/pkg/pram"
)

// adultFiles writes Adult's training rows as CSV (adult.csv is derived by
// scripts/fetch-adult.sh and may be absent where adult.data is present, as
// under CI) and returns it with the repository's codebook. It skips, or
// fails under CI, when Adult is absent (adulttest).
func adultFiles(t testing.TB) (data, cb string) {
	t.Helper()
	rows := adulttest.Load(t, "data")
	return adulttest.WriteCSV(t, rows), filepath.Join(adulttest.RepoRoot(t), "testdata", "adult", "codebook.json")
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return recs
}

// number parses a CSV cell that must be a finite number.
func number(t *testing.T, file string, rec []string, col string, header []string) float64 {
	t.Helper()
	i := slices.Index(header, col)
	if i < 0 {
		t.Fatalf("%s: no column %q in %v", file, col, header)
	}
	x, err := strconv.ParseFloat(rec[i], 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		t.Fatalf("%s: column %s holds %q, not a finite number", file, col, rec[i])
	}
	return x
}

func TestQuickRunWritesEveryFigureAndParsableCSVs(t *testing.T) {
	data, cb := adultFiles(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-quick", "-data", data, "-codebook", cb, "-out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	t.Logf("summary:\n%s", stdout.String())

	for _, name := range []string{"error_vs_m", "error_vs_epsilon", "anonymize_error_vs_l"} {
		b, err := os.ReadFile(filepath.Join(out, name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		checkPNG(t, name+".png", b)
		if b, err = os.ReadFile(filepath.Join(out, name+".svg")); err != nil {
			t.Fatal(err)
		}
		checkSVG(t, name+".svg", b)
	}

	// error_vs_m: one row per size of the quick grid (m*/8 … 4m*, n), sizes
	// increasing to n, every estimator's mean under Theorem III.4's bound.
	recs := readCSV(t, filepath.Join(out, "error_vs_m.csv"))
	header := recs[0]
	if len(recs)-1 != 8 {
		t.Errorf("error_vs_m.csv: %d rows, want 8 (m*/8 … 4m*, n)", len(recs)-1)
	}
	prev := 0.0
	for _, rec := range recs[1:] {
		m := number(t, "error_vs_m.csv", rec, "m", header)
		if m <= prev {
			t.Errorf("error_vs_m.csv: m = %v after %v", m, prev)
		}
		prev = m
		bound := number(t, "error_vs_m.csv", rec, "bound", header)
		for _, method := range methods {
			if e := number(t, "error_vs_m.csv", rec, method.String()+"_mean", header); !(e > 0 && e < bound) {
				t.Errorf("error_vs_m.csv: m = %v: %v mean error %v not in (0, bound %v)", m, method, e, bound)
			}
		}
	}
	if prev != 32561 {
		t.Errorf("error_vs_m.csv: last m = %v, want n = 32561", prev)
	}

	recs = readCSV(t, filepath.Join(out, "error_vs_epsilon.csv"))
	header = recs[0]
	if len(recs)-1 != len(epsilons) {
		t.Errorf("error_vs_epsilon.csv: %d rows, want %d", len(recs)-1, len(epsilons))
	}
	for i, rec := range recs[1:] {
		if eps := number(t, "error_vs_epsilon.csv", rec, "epsilon", header); eps != epsilons[i] {
			t.Errorf("error_vs_epsilon.csv row %d: ε = %v, want %v", i+1, eps, epsilons[i])
		}
		for _, col := range append(pointColumns(""), pointColumns("n_")...) {
			number(t, "error_vs_epsilon.csv", rec, col, header)
		}
	}

	// anonymize_error_vs_l: ℓ′ = 2…7 (Adult's occupation allows ℓ′ ≤ 7),
	// two count ranges, four mechanisms, each with queries.
	recs = readCSV(t, filepath.Join(out, "anonymize_error_vs_l.csv"))
	header = recs[0]
	if want := 6 * numRanges * numSeries; len(recs)-1 != want {
		t.Errorf("anonymize_error_vs_l.csv: %d rows, want %d", len(recs)-1, want)
	}
	for _, rec := range recs[1:] {
		if l := number(t, "anonymize_error_vs_l.csv", rec, "l", header); l < 2 || l > 7 {
			t.Errorf("anonymize_error_vs_l.csv: ℓ′ = %v outside 2…7", l)
		}
		if e := number(t, "anonymize_error_vs_l.csv", rec, "mean_relative_error", header); !(e > 0) {
			t.Errorf("anonymize_error_vs_l.csv: %v: mean relative error %v", rec, e)
		}
		if q := number(t, "anonymize_error_vs_l.csv", rec, "queries", header); q < 100 {
			t.Errorf("anonymize_error_vs_l.csv: %v: only %v queries", rec, q)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "summary.txt")); err != nil {
		t.Error(err)
	}
}

func TestBadArgumentsAreUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"unknown flag", []string{"-nope"}, 2},
		{"stray argument", []string{"adult.csv"}, 2},
		{"zero runs", []string{"-runs", "0"}, 2},
		{"zero workers", []string{"-workers", "0"}, 2},
		{"missing data file", []string{"-data", filepath.Join(t.TempDir(), "none.csv"), "-out", t.TempDir()}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}

func TestSizeGridIsAnchoredAtMStarAndEndsAtN(t *testing.T) {
	for _, tc := range []struct {
		mStar     float64
		n, per    int
		want      []int
		wantFirst int
	}{
		{2057.5, 32561, 1, []int{257, 514, 1029, 2058, 4115, 8230, 16460, 32561}, 257},
		{1000, 5000, 2, []int{125, 177, 250, 354, 500, 707, 1000, 1414, 2000, 2828, 4000, 5000}, 125},
		{3, 10, 1, []int{1, 2, 3, 6, 10}, 1}, // m*/8 rounds to 0: left out
	} {
		got := sizeGrid(tc.mStar, tc.n, tc.per)
		if !slices.Equal(got, tc.want) {
			t.Errorf("sizeGrid(%v, %d, %d) = %v, want %v", tc.mStar, tc.n, tc.per, got, tc.want)
		}
	}
}

// The regression rng.Derive would have: names longer than 24 bytes that
// differ only at the end must still give different streams.
func TestStreamsOfLongNamesDiffer(t *testing.T) {
	seen := map[uint64]string{}
	for _, name := range []string{"error_vs_m/m=257/release=0", "error_vs_m/m=257/release=1", "error_vs_m/m=257/release=10", "anonymize/l=2/release=0/aprime"} {
		for seed := range uint64(3) {
			x := stream(seed, name).Uint64()
			if prev, ok := seen[x]; ok {
				t.Errorf("seed %d %q draws as %s", seed, name, prev)
			}
			seen[x] = name
		}
		if stream(1, name).Uint64() != stream(1, name).Uint64() {
			t.Errorf("%q: the same seed and name gave different draws", name)
		}
	}
}

// Each released row of a release is, over the uniform sample and PRAM,
// distributed as A·t (E[T] = A·t, Lin–Wang–Rane §III-A): the pooled counts
// of many releases must pass a chi-square test against A·t. Sampling
// without replacement only lowers the counts' variance below the
// multinomial's, so the test is conservative. alpha = 1e-6.
func TestReleasedRowsFollowPRAMOfTheFullTable(t *testing.T) {
	data, cb := adultFiles(t)
	a, err := loadAdult(data, cb, jointColumns)
	if err != nil {
		t.Fatal(err)
	}
	pop, err := newPopulation(a, jointColumns)
	if err != nil {
		t.Fatal(err)
	}
	const m, runs, eps = 2000, 60, 1.0
	gamma, err := pram.GammaFromEpsilon(a.n, m, eps)
	if err != nil {
		t.Fatal(err)
	}
	mech, err := pram.NewMechanism(gamma, pop.domain)
	if err != nil {
		t.Fatal(err)
	}
	K := int(pop.domain.Size())
	truth, err := pop.truth.Dense()
	if err != nil {
		t.Fatal(err)
	}
	probs := make([]float64, K)
	for to := range K {
		for from := range K {
			probs[to] += mech.Transition(uint64(to), uint64(from)) * truth[from]
		}
	}
	pooled := make([]int64, K)
	rel := newReleaser(pop)
	for k := range runs {
		c, err := rel.release(stream(9, "test/release="+strconv.Itoa(k)), m, mech)
		if err != nil {
			t.Fatal(err)
		}
		for i, g := range c.Index {
			pooled[g] += c.Count[i]
		}
	}
	stattest.AssertChiSquare(t, "pooled released counts vs A·t", pooled, probs, 1e-6)
}

func TestRandomPredicatesMatchExactlyTheirRows(t *testing.T) {
	data, cb := adultFiles(t)
	a, err := loadAdult(data, cb, append([]string{sensitiveAttr}, predicateAttrs...))
	if err != nil {
		t.Fatal(err)
	}
	ct := newCountTable(a)
	preds := adultquery.RandomPredicates(ct, 50, stream(3, "test/predicates"))
	keys := map[string]bool{}
	for _, p := range preds {
		if d := len(p.Attrs); d < 1 || d > 3 {
			t.Fatalf("%d conditions", d)
		}
		var key strings.Builder
		var want []uint32
		for row := range ct.N {
			ok := true
			for i, at := range p.Attrs {
				ok = ok && ct.NSA[at][row] == p.Values[i]
			}
			if ok {
				want = append(want, uint32(row))
			}
		}
		if len(want) == 0 || !slices.Equal(p.Rows, want) {
			t.Errorf("predicate %v=%v: %d rows listed, %d match", p.Attrs, p.Values, len(p.Rows), len(want))
		}
		for i, at := range p.Attrs {
			key.WriteString(predicateAttrs[at] + "=" + strconv.Itoa(int(p.Values[i])) + ";")
		}
		if keys[key.String()] {
			t.Errorf("predicate %s drawn twice", key.String())
		}
		keys[key.String()] = true
	}
}

// BenchmarkReleaseAtMStar: one point of error_vs_m at m* (ε = 1): sample,
// perturb and the three estimates with their ℓ2 errors.
func BenchmarkReleaseAtMStar(b *testing.B) {
	data, cb := adultFiles(b)
	a, err := loadAdult(data, cb, jointColumns)
	if err != nil {
		b.Fatal(err)
	}
	pop, err := newPopulation(a, jointColumns)
	if err != nil {
		b.Fatal(err)
	}
	plan, err := estimate.NewPlan(a.n, pop.domain.Size(), 1)
	if err != nil {
		b.Fatal(err)
	}
	mech, err := pram.NewMechanism(plan.Gamma, pop.domain)
	if err != nil {
		b.Fatal(err)
	}
	rel := newReleaser(pop)
	r := stream(1, "bench")
	b.ResetTimer()
	for b.Loop() {
		c, err := rel.release(r, plan.M, mech)
		if err != nil {
			b.Fatal(err)
		}
		for _, method := range methods {
			est, err := estimate.Run(method, c, plan.Gamma, estimate.EMOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := estimate.L2(est, pop.truth); err != nil {
				b.Fatal(err)
			}
		}
	}
}
