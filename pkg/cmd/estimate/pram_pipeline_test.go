package estimate

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/internal/adulttest"
	"github.com/pramkit/pramkit/internal/releasetest"
	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/cmd/decrypt"
	"github.com/pramkit/pramkit/pkg/cmd/encrypt"
	"github.com/pramkit/pramkit/pkg/cmd/sample"
	"github.com/pramkit/pramkit/pkg/estimate"
	"github.com/pramkit/pramkit/pkg/table"
)

// runTool runs one pramkit command in-process, as its Main would, and
// returns its exit code, standard output and standard error.
func pramRunTool(newCmd func(*cli.Streams, func(*Options) error) *cobra.Command, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	s := &cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}
	code := cli.Run(newCmd(s, nil), args, s)
	return code, out.String(), errb.String()
}

// tool adapts another command's NewCmd to runTool.
func pramTool[O any](newCmd func(*cli.Streams, func(*O) error) *cobra.Command) func(*cli.Streams, func(*Options) error) *cobra.Command {
	return func(s *cli.Streams, _ func(*Options) error) *cobra.Command { return newCmd(s, nil) }
}

// mustRun runs a command and fails the test unless it succeeds.
func pramMustRun(t testing.TB, newCmd func(*cli.Streams, func(*Options) error) *cobra.Command, args ...string) string {
	t.Helper()
	out, err := pramTryRun(newCmd, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tryRun runs a command and returns its output, or an error with its
// standard error when it fails (safe in any goroutine).
func pramTryRun(newCmd func(*cli.Streams, func(*Options) error) *cobra.Command, args ...string) (string, error) {
	code, out, errs := pramRunTool(newCmd, args...)
	if code != 0 {
		return "", fmt.Errorf("%v: exit %d: %s", args, code, errs)
	}
	return out, nil
}

// pramAdultPipeline is the release pipeline of SPEC §1 on Adult, run through
// the real commands' code: Alice holds education, Bob income.
type pramAdultPipeline struct {
	dir   string
	table string // Adult's education and income columns, with a header
	cb    string
	n     int
}

func newPRAMAdultPipeline(t testing.TB) *pramAdultPipeline {
	t.Helper()
	rows := adulttest.Load(t, "data")
	dir := t.TempDir()
	// Arrow, not CSV: the 180 reads of the table (sample and --truth)
	// would otherwise dominate the test's time.
	p := &pramAdultPipeline{dir: dir, table: filepath.Join(dir, "adult.arrow"), cb: filepath.Join(adulttest.RepoRoot(t), "testdata", "adult", "codebook.json"), n: len(rows)}
	schema := table.StringSchema([]string{"education", "income"})
	w, err := table.Create(p.table, schema, nil, table.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	bb := table.NewBatchBuilder(schema)
	defer bb.Release()
	for _, r := range rows {
		bb.AppendStrings([]string{r[3], r[14]})
	}
	rec := bb.NewBatch()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return p
}

// release runs sample (both curators, one shared secret), encrypt, perturb
// and decrypt with seeds derived from seed, and returns the decrypted file.
func (p *pramAdultPipeline) release(seed uint64, m int, eps float64) (string, error) {
	run := filepath.Join(p.dir, fmt.Sprint("run", seed))
	if err := os.MkdirAll(run, 0o755); err != nil {
		return "", err
	}
	f := func(name string) string { return filepath.Join(run, name) }
	s := fmt.Sprint(seed)
	smp, enc, per, dec := pramTool(sample.NewCmd), pramTool(encrypt.NewCmd), pramTool(releasetest.NewPerturb), pramTool(decrypt.NewCmd)
	type step struct {
		cmd  func(*cli.Streams, func(*Options) error) *cobra.Command
		args []string
	}
	steps := []step{{smp, []string{"--new-secret", f("shared.secret"), "--seed", s, "--insecure-seed"}}}
	for _, c := range []string{"education", "income"} {
		steps = append(steps,
			step{smp, []string{"--secret", f("shared.secret"), "-m", fmt.Sprint(m), "--columns", c, p.table, "-o", f(c + ".arrow")}},
			step{enc, []string{"--codebook", p.cb, "--key-out", f(c + ".key.arrow"), "--seed", s, "--insecure-seed", f(c + ".arrow"), "-o", f(c + ".enc.arrow")}})
	}
	steps = append(steps,
		step{per, []string{"--epsilon", fmt.Sprint(eps), "--seed", s, "--insecure-seed", f("education.enc.arrow"), f("income.enc.arrow"), "-o", f("release.arrow")}},
		step{dec, []string{"--key", f("education.key.arrow"), "--key", f("income.key.arrow"), f("release.arrow"), "-o", f("decrypted.arrow")}})
	for _, st := range steps {
		if _, err := pramTryRun(st.cmd, st.args...); err != nil {
			return "", err
		}
	}
	return f("decrypted.arrow"), nil
}

// estimateJSON runs estimate --json and decodes the summary.
func pramEstimateJSON(args ...string) (pramSummary, error) {
	out, err := pramTryRun(NewCmd, append([]string{"--json"}, args...)...)
	if err != nil {
		return pramSummary{}, err
	}
	var s pramSummary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		return s, fmt.Errorf("estimate %v printed %q: %v", args, out, err)
	}
	return s, nil
}

var pramMethods = []string{"inverse", "projected", "mle"}

// pramAdultResult is what one seeded pipeline gave.
type pramAdultResult struct {
	l2            map[string]float64
	bound         float64
	misses, cells int // values whose true share is outside / all values
	err           error
}

// pramMeanAdultErrors runs runs seeded pipelines at (m, ε), on all cores,
// and returns the mean l2_error that estimate --json reports per method and
// the bound it reports (the same in every run). With coverage it also
// counts, over all runs, the values whose true share is outside the
// table's 95% interval.
func pramMeanAdultErrors(t *testing.T, p *pramAdultPipeline, m int, eps float64, runs int, seed0 uint64, coverage bool) (mean map[string]float64, bound float64, misses, cells int) {
	t.Helper()
	results := make([]pramAdultResult, runs)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range jobs {
				res := pramAdultResult{l2: map[string]float64{}}
				rel, err := p.release(seed0+uint64(r), m, eps)
				for _, method := range pramMethods {
					if err != nil {
						break
					}
					var s pramSummary
					if s, err = pramEstimateJSON("--method", method, "--ci", "none", "--truth", p.table, rel); err == nil && s.L2Error == nil {
						err = fmt.Errorf("no l2_error in the summary of %s", rel)
					}
					if err == nil {
						res.l2[method], res.bound = *s.L2Error, s.Bound
					}
				}
				if err == nil && coverage {
					res.misses, res.cells, err = pramCoverage(rel, p.table)
				}
				res.err = err
				results[r] = res
			}
		}()
	}
	for r := range runs {
		jobs <- r
	}
	close(jobs)
	wg.Wait()
	mean = map[string]float64{}
	for _, res := range results {
		if res.err != nil {
			t.Fatal(res.err)
		}
		for method, e := range res.l2 {
			mean[method] += e / float64(runs)
		}
		misses += res.misses
		cells += res.cells
	}
	return mean, results[0].bound, misses, cells
}

// pramCoverage runs estimate (mle, Wilson intervals) with the truth and
// counts the values whose true share lies outside [ci_low, ci_high].
func pramCoverage(rel, truth string) (misses, cells int, err error) {
	out, err := pramTryRun(NewCmd, "--truth", truth, rel)
	if err != nil {
		return 0, 0, err
	}
	r := csv.NewReader(strings.NewReader(out))
	r.Comment = '#'
	recs, err := r.ReadAll()
	if err != nil {
		return 0, 0, err
	}
	col := map[string]int{}
	for j, h := range recs[0] {
		col[h] = j
	}
	for _, rec := range recs[1:] {
		var v [3]float64
		for i, h := range []string{"ci_low", "ci_high", "truth"} {
			if v[i], err = strconv.ParseFloat(rec[col[h]], 64); err != nil {
				return 0, 0, err
			}
		}
		if v[2] < v[0] || v[2] > v[1] {
			misses++
		}
		cells++
	}
	return misses, cells, nil
}

func TestPRAMAdultErrorThroughThePipeline(t *testing.T) {
	// SPEC §3.5 / issue 4, end to end: Adult education × income (K = 32),
	// ε ∈ {0.5, 1, 2}, m = m* as sample --plan computes it, 20 seeded runs
	// of sample | encrypt | perturb | decrypt | estimate. The mean ℓ2 error
	// that estimate reports must be below the Theorem III.4 bound for every
	// method, and projected and mle no worse than inverse on average. (The
	// library test pkg/estimate TestAdultErrorAtPlannedSampleSize checks
	// the same math without the commands; this one checks the wiring:
	// labels, joint order, γ and m from the metadata, the truth join.)
	const runs = 20
	p := newPRAMAdultPipeline(t)
	var misses, total int
	for i, eps := range []float64{0.5, 1, 2} {
		plan, err := estimate.NewPlan(p.n, 32, eps)
		if err != nil {
			t.Fatal(err)
		}
		mean, bound, miss, cells := pramMeanAdultErrors(t, p, plan.M, eps, runs, 1000*uint64(i+1), true)
		misses += miss
		total += cells
		if bound != plan.Bound {
			t.Errorf("ε=%v: estimate reports bound %v, the plan says %v", eps, bound, plan.Bound)
		}
		t.Logf("ε=%.1f m*=%d bound %.4f | mean ℓ2 over %d runs: inverse %.4f projected %.4f mle %.4f",
			eps, plan.M, bound, runs, mean["inverse"], mean["projected"], mean["mle"])
		for _, method := range pramMethods {
			if mean[method] >= bound {
				t.Errorf("ε=%v: %s mean error %.4f not below the bound %.4f", eps, method, mean[method], bound)
			}
		}
		for _, method := range []string{"projected", "mle"} {
			if mean[method] > mean["inverse"] {
				t.Errorf("ε=%v: %s mean error %.4f worse than inverse %.4f", eps, method, mean[method], mean["inverse"])
			}
		}
	}
	// The table's 95% intervals, wired through labels, joint order and the
	// truth join: Wilson's interval is conservative, so the misses are at
	// most Binomial(values, 0.05) (the values of one run are multinomially,
	// hence negatively, correlated, which only narrows the spread); the
	// count exceeds hi with probability ≤ 1e-6.
	_, hi := stattest.BinomialInterval(int64(total), 0.05, 1e-6)
	t.Logf("true share outside the 95%% interval: %d of %d values (%.1f%%)", misses, total, 100*float64(misses)/float64(total))
	if int64(misses) > hi {
		t.Errorf("%d of %d true shares outside the 95%% intervals, more than %d", misses, total, hi)
	}
}

func TestPRAMAdultErrorCurveThroughThePipeline(t *testing.T) {
	// The paper's experiment (SPEC §6), end to end: at ε = 1, the mean ℓ2
	// error over 20 seeded pipelines for 8 sample sizes, m*·2^k for
	// k = −3 … 3 (capped at n) and n itself (PRAM without sampling). The
	// m of least mean error must be within a factor 2 of m* (one of m*/2,
	// m*, 2m*) for every method, and every mean under its bound. The grid
	// is anchored at m* so that "within a factor 2" means neighbouring grid
	// points. pkg/estimate TestAdultErrorCurveMinimumNearMStar runs the
	// same sweep on the library alone.
	const runs, eps = 20, 1.0
	p := newPRAMAdultPipeline(t)
	plan, err := estimate.NewPlan(p.n, 32, eps)
	if err != nil {
		t.Fatal(err)
	}
	var grid []int
	for k := -3; k <= 3; k++ {
		grid = append(grid, min(int(math.Round(math.Ldexp(plan.MStar, k))), p.n))
	}
	grid = append(grid, p.n)
	best := map[string]int{}
	bestErr := map[string]float64{}
	var curve strings.Builder
	fmt.Fprintf(&curve, "%8s %9s %9s %9s %9s\n", "m", "bound", "inverse", "projected", "mle")
	for i, m := range grid {
		mean, bound, _, _ := pramMeanAdultErrors(t, p, m, eps, runs, 5000+100*uint64(i), false)
		fmt.Fprintf(&curve, "%8d %9.4f %9.4f %9.4f %9.4f\n", m, bound, mean["inverse"], mean["projected"], mean["mle"])
		for _, method := range pramMethods {
			e := mean[method]
			if e >= bound {
				t.Errorf("m=%d: %s mean error %.4f not below the bound %.4f", m, method, e, bound)
			}
			if _, ok := best[method]; !ok || e < bestErr[method] {
				best[method], bestErr[method] = m, e
			}
		}
	}
	t.Logf("ε=1, n=%d, m*=%.1f: mean ℓ2 error of estimate --json over %d pipelines\n%s", p.n, plan.MStar, runs, curve.String())
	for _, method := range pramMethods {
		m := best[method]
		if float64(m) < plan.MStar/2*(1-1e-9) || float64(m) > 2*plan.MStar*(1+1e-9) {
			t.Errorf("%s: least error at m = %d, not within a factor 2 of m* = %.1f", method, m, plan.MStar)
		}
	}
}

// decryptAs decrypts the release next to rel (a file p.release returned)
// once more, into decrypted.<ext> of the same run, and returns that path.
func (p *pramAdultPipeline) decryptAs(t testing.TB, rel, ext string) string {
	t.Helper()
	run := filepath.Dir(rel)
	out := filepath.Join(run, "decrypted."+ext)
	pramMustRun(t, pramTool(decrypt.NewCmd), "--key", filepath.Join(run, "education.key.arrow"), "--key", filepath.Join(run, "income.key.arrow"),
		filepath.Join(run, "release.arrow"), "-o", out)
	return out
}
