package estimate

import (
	"bytes"
	"encoding/csv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/adulttest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/cmd/anonymize"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/rng"
)

// countRun runs estimate (or, with anon, anonymize) in-process and fails t
// unless it exits 0; it returns stdout.
func countRun(t testing.TB, anon bool, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	s := &cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}
	cmd := NewCmd(s, nil)
	if anon {
		cmd = anonymize.NewCmd(s, nil)
	}
	if code := cli.Run(cmd, args, s); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errb.String())
	}
	return out.String()
}

// countAdult is UCI Adult as CSV files for the count-query experiment.
type countAdult struct {
	dir, csv, cb string
	rows         [][]string
}

// countAdultData writes adult.data as CSV; clean drops the rows that hold
// "?" in any column (the usual cleaned Adult of 30,162 rows).
func countAdultData(t testing.TB, clean bool) *countAdult {
	t.Helper()
	rows := adulttest.Load(t, "data")
	if clean {
		rows = slices.DeleteFunc(rows, func(r []string) bool { return slices.Contains(r, "?") })
	}
	a := &countAdult{dir: t.TempDir(), rows: rows, cb: filepath.Join(adulttest.RepoRoot(t), "testdata", "adult", "codebook.json")}
	a.csv = filepath.Join(a.dir, "adult.csv")
	var b strings.Builder
	b.WriteString(strings.Join(adulttest.Columns, ",") + "\n")
	for _, r := range rows {
		b.WriteString(strings.Join(r, ",") + "\n")
	}
	if err := os.WriteFile(a.csv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return a
}

// countPredicateAttrs are the non-sensitive attributes of the random
// predicates (the paper's §9.1 pool; age and hours by the codebook's
// buckets, as in pkg/countquery's Adult test).
var countPredicateAttrs = []string{"age", "workclass", "education", "marital-status", "relationship", "race", "sex", "hours-per-week", "income"}

// writeQueryPool draws preds distinct random conjunctions of 1–3
// conditions, with the values of a random row, and combines each with
// every occupation value: the queries file and the number of queries.
func (a *countAdult) writeQueryPool(t testing.TB, preds int, r *rand.Rand) (string, int) {
	t.Helper()
	cb, err := codebook.Load(a.cb)
	if err != nil {
		t.Fatal(err)
	}
	label := func(col string, v string) string {
		c, _ := cb.Column(col)
		enc, err := c.Encoder(codebook.Policy{})
		if err != nil {
			t.Fatal(err)
		}
		i, err := enc.Index(v)
		if err != nil {
			t.Fatal(err)
		}
		return c.Label(int(i))
	}
	occ, _ := cb.Column("occupation")
	seen := map[string]bool{}
	var lines []string
	for len(seen) < preds {
		d := 1 + r.IntN(3)
		attrs := r.Perm(len(countPredicateAttrs))[:d]
		slices.Sort(attrs)
		row := a.rows[r.IntN(len(a.rows))]
		var conds []string
		for _, at := range attrs {
			name := countPredicateAttrs[at]
			conds = append(conds, name+"="+label(name, row[slices.Index(adulttest.Columns, name)]))
		}
		key := strings.Join(conds, ",")
		if seen[key] {
			continue
		}
		seen[key] = true
		for _, s := range occ.Labels() {
			lines = append(lines, key+",occupation="+s)
		}
	}
	path := filepath.Join(a.dir, "queries.csv")
	if err := os.WriteFile(path, []byte("query\n"+strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, len(lines)
}

// countAnswerRow is one row of estimate's answer CSV with --truth.
type countAnswerRow struct {
	query      string
	est, truth float64
	iterations int
}

func countParseAnswers(t testing.TB, path string) []countAnswerRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"query", "estimate", "iterations", "true", "relative_error"}; !slices.Equal(recs[0], want) {
		t.Fatalf("answer header %v, want %v", recs[0], want)
	}
	var out []countAnswerRow
	for _, r := range recs[1:] {
		est, err1 := strconv.ParseFloat(r[1], 64)
		it, err2 := strconv.Atoi(r[2])
		tr, err3 := strconv.ParseFloat(r[3], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("bad answer row %v", r)
		}
		out = append(out, countAnswerRow{r[0], est, tr, it})
	}
	return out
}

// countErrors averages the relative error over the answers whose true
// count is in [lo, hi].
func countErrors(rows []countAnswerRow, lo, hi float64) (mean float64, n int) {
	for _, r := range rows {
		if r.truth >= lo && r.truth <= hi && r.truth > 0 {
			mean += math.Abs(r.est-r.truth) / r.truth
			n++
		}
	}
	return mean / float64(max(n, 1)), n
}

// countExperiment publishes a with each mechanism (three releases each,
// seeds fixed) and answers the query pool with estimate --truth: the
// answers per estimator.
func (a *countAdult) countExperiment(t testing.TB, queries string, l int, runs int) map[string][]countAnswerRow {
	t.Helper()
	out := map[string][]countAnswerRow{}
	answer := func(name string, args ...string) {
		ans := filepath.Join(a.dir, "answers.csv")
		countRun(t, false, append(args, "--queries", queries, "--codebook", a.cb, "--truth", a.csv, "-o", ans)...)
		out[name] = append(out[name], countParseAnswers(t, ans)...)
	}
	ls := strconv.Itoa(l)
	for run := range runs {
		seed := strconv.Itoa(100 + run)
		pub := filepath.Join(a.dir, "pub.csv")
		countRun(t, true, "--sensitive", "occupation", "--l", ls, "--codebook", a.cb, "--seed", seed, "--insecure-seed", a.csv, "-o", pub)
		answer("A′ exact a01", pub)
		answer("A′ paper a01", pub, "--decoy", "paper")
		answer("A′ paper-fixed a01", pub, "--decoy", "paper-fixed")
		anat, groups := filepath.Join(a.dir, "anat.csv"), filepath.Join(a.dir, "anat.groups.csv")
		countRun(t, true, "--mechanism", "anatomy", "--sensitive", "occupation", "--l", ls, "--codebook", a.cb, "--seed", seed, "--insecure-seed", a.csv, "-o", anat, "--groups", groups)
		answer("Anatomy", anat)
		glob := filepath.Join(a.dir, "global.csv")
		countRun(t, true, "--mechanism", "global", "--sensitive", "occupation", "--l", ls, "--codebook", a.cb, "--seed", seed, "--insecure-seed", a.csv, "-o", glob)
		answer("global (retention 1/ℓ′)", glob)
	}
	return out
}

// Paper §9.2–9.4 through the commands: Adult published by anonymize with
// occupation sensitive at ℓ′ = 5 (A′ with its default random decoy groups,
// so estimate's auto stopping rule is the discrepancy rule), a pool of
// random NSA predicates combined with every occupation, answered by
// estimate --queries --truth.
//
// Measured (1000 predicates, 3 releases; full Adult with "?" a value of its
// own / cleaned Adult without "?" rows), mean relative error at selectivity
// 2–5 %: A′ exact a01 0.182 / 0.198, A′ paper a01 (Eq. 12, a01 = (x1 +
// x3)/N re-evaluated each step) 0.240 / 0.249, A′ paper-fixed a01 (f′_s/N)
// 0.544 / 0.527, Anatomy 0.281 / 0.274, global 0.135 / 0.142; true counts
// 1–10: A′ exact 2.76 / 3.39, paper 2.48 / 3.06, paper-fixed 2.08 / 2.58.
// With Anatomy's decoy groups (the default before) A′ exact measured 0.257
// / 0.258 (pkg/countquery's TestAdultGroupPairingExplainsTheError shows
// why); with random groups it meets the paper's ≈ 20 %. The guards below
// sit just above the measured values, and the small-count privacy claim
// (≥ 40 %) is asserted.
func TestCountAdultAccuracyThroughTheCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs anonymize and estimate 24 times on Adult")
	}
	for _, v := range []struct {
		name  string
		clean bool
		guard map[string]float64 // mean relative error at selectivity 2–5 %
	}{
		{"Adult, ? kept as a value (32,561 rows)", false, map[string]float64{"A′ exact a01": 0.21, "A′ paper a01": 0.27, "A′ paper-fixed a01": 0.58, "Anatomy": 0.33, "global (retention 1/ℓ′)": 0.16}},
		{"Adult without ? rows (30,162 rows)", true, map[string]float64{"A′ exact a01": 0.23, "A′ paper a01": 0.28, "A′ paper-fixed a01": 0.56, "Anatomy": 0.33, "global (retention 1/ℓ′)": 0.16}},
	} {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			a := countAdultData(t, v.clean)
			queries, nq := a.writeQueryPool(t, 1000, rng.NewSeeded(41))
			res := a.countExperiment(t, queries, 5, 3)
			n := float64(len(a.rows))
			t.Logf("%s: %d queries per release, ℓ′ = 5, 3 releases", v.name, nq)
			for _, name := range []string{"A′ exact a01", "A′ paper a01", "A′ paper-fixed a01", "Anatomy", "global (retention 1/ℓ′)"} {
				large, nl := countErrors(res[name], 0.02*n, 0.05*n)
				small, ns := countErrors(res[name], 1, 10)
				t.Logf("  %-24s mean relative error: selectivity 2–5 %% %.3f (%d queries), true count 1–10 %.3f (%d queries)", name, large, nl, small, ns)
				if nl < 300 || ns < 300 {
					t.Fatalf("%s: only %d large and %d small queries", name, nl, ns)
				}
				if large > v.guard[name] {
					t.Errorf("%s: mean relative error %.3f at selectivity 2–5 %%, regression guard %.2f", name, large, v.guard[name])
				}
				if strings.HasPrefix(name, "A′") && small < 0.40 {
					t.Errorf("%s: mean relative error %.3f on counts ≤ 10, want ≥ 0.40 (privacy for small counts, §9.3)", name, small)
				}
			}
			var iters []int
			for _, r := range res["A′ exact a01"] {
				if r.truth >= 0.02*n && r.truth <= 0.05*n {
					iters = append(iters, r.iterations)
				}
			}
			slices.Sort(iters)
			t.Logf("  Bayesian update steps, auto rule (A′ exact, selectivity 2–5 %%): median %d, 90th percentile %d, max %d",
				iters[len(iters)/2], iters[len(iters)*9/10], iters[len(iters)-1])
		})
	}
}
