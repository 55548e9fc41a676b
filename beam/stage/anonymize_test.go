package stage

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/beam/internal/beamtest"
	"github.com/pramkit/pramkit/internal/adulttest"
	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/cli"
	estimatecmd "github.com/pramkit/pramkit/pkg/cmd/estimate"
)

// adultAnonTable writes Adult's id, age, education, occupation, sex and
// income as adult.csv and as Parquet shards a-0, a-1, a-2 (row groups of
// 1000 rows, so 33 splits); it returns the folder, the codebook and the
// rows (id = row index).
func adultAnonTable(t *testing.T) (string, string, [][]string) {
	t.Helper()
	root := beamtest.MainRoot(t)
	dir := t.TempDir()
	var rows [][]string
	for i, r := range adulttest.Load(t, "data") {
		rows = append(rows, []string{strconv.Itoa(i), r[0], r[3], r[6], r[9], r[14]})
	}
	f := func(name string) string { return filepath.Join(dir, name) }
	beamtest.WriteRows(t, f("adult.csv"), []string{"id", "age", "education", "occupation", "sex", "income"}, nil, 0, rows)
	beamtest.Split(t, f("adult.csv"), f("a-0.parquet"), f("a-1.parquet"), f("a-2.parquet"))
	return dir, filepath.Join(root, "testdata", "adult", "codebook.json"), rows
}

// TestAnonymizeOnPrism publishes Adult's occupation at ℓ′ = 5 on Prism
// from Parquet shards read by row group, next to the anonymize tool on the
// whole table with the same flags, and checks the CLI's guarantees on the
// Beam release:
//   - the metadata is the CLI's, key for key (N = 32560, dropped = 1), and
//     estimate reads it;
//   - the rows are the input's rows but one, non-sensitive cells unchanged,
//     in an order unrelated to the input's (at most 20 rows at their input
//     position, where a shuffle puts about 1);
//   - every row publishes a member of a decoy set holding its true value
//     (Anatomy's schedule is a function of the counts);
//   - rows publishing their true value ~ Binomial(N, 1/ℓ′), and each
//     value's published count ~ Binomial(ℓ′f_s, 1/ℓ′) (Theorem 3), each at
//     false-alarm rate 1e-6;
//   - estimate's answer to 'occupation=Sales' (f′_s) is within 6 standard
//     deviations √(f_s(ℓ′−1)/ℓ′) of the truth (false alarm 2e-9), and to
//     'sex=Female' (published unchanged) exact but for the dropped row.
//
// Then with --shard-rows 10000 the release is 4 shards with the same
// metadata whose union is the input's rows but one.
func TestAnonymizeOnPrism(t *testing.T) {
	const l = 5
	a := newAnonPrism(t, "", l)
	// Anatomy's grouping: its schedule is a function of the counts, which
	// the check below recomputes (random groups, the default, are not).
	a.flags = append(a.flags, "--grouping", "anatomy")
	f, cb, rows := a.f, a.cb, a.rows
	a.tool(t)
	a.beam(t, "beam", 0)
	a.checkDroppedOne(t)
	cols, got, meta := cmdtest.ReadTable(t, f("beam-00000.parquet"))
	wantCols, want, wantMeta := cmdtest.ReadTable(t, f("want.csv"))
	if !slices.Equal(cols, wantCols) {
		t.Errorf("columns %v, the CLI's %v", cols, wantCols)
	}
	if len(got) != len(want) || len(got) != 32560 {
		t.Fatalf("%d rows, the CLI %d", len(got), len(want))
	}
	for k, v := range wantMeta {
		if meta[k] != v {
			t.Errorf("metadata %s = %q, the CLI's %q", k, meta[k], v)
		}
	}
	if len(meta) != len(wantMeta) {
		t.Errorf("metadata %v, the CLI's %v", meta, wantMeta)
	}

	occ := slices.Index(cols, "occupation")
	col, index := occupationIndex(t, cb)
	ids := a.inputIDs(t, got)
	a.checkOthersUnchanged(t, cols, got, ids, occ)
	counts := make([]int64, col.K())
	var own int64
	pub := make([]int64, col.K())
	for i, r := range got {
		v, w := index(rows[ids[i]][occ]), index(r[occ])
		counts[v]++
		pub[w]++
		if v == w {
			own++
		}
	}
	sch, err := anonymize.NewSchedule(counts, l, anonymize.GroupingAnatomy, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, r := range got {
		i := ids[k]
		v, w := uint32(index(rows[i][occ])), uint32(index(r[occ]))
		if !slices.ContainsFunc(sch.Types, func(st anonymize.SetType) bool {
			return slices.Contains(st.Values, v) && slices.Contains(st.Values, w)
		}) {
			t.Fatalf("row id %d: %s published as %s, which share no decoy set", i, rows[i][occ], r[occ])
		}
	}
	stattest.AssertBinomial(t, "rows publishing their true value", own, int64(len(got)), 1.0/l, 1e-6)
	for v, c := range counts {
		if c > 0 {
			stattest.AssertBinomial(t, "published count of "+col.Label(v), pub[v], l*c, 1.0/l, 1e-6)
		}
	}

	est := beamtest.Tool(estimatecmd.NewCmd)
	sales := counts[index("Sales")]
	out := beamtest.MustRun(t, est, "--query", "occupation=Sales", f("beam-00000.parquet"))
	if e := answer(t, out); math.Abs(e-float64(sales)) > 6*math.Sqrt(float64(sales)*(l-1)/l) {
		t.Errorf("estimate of occupation=Sales: %v, truth %d", e, sales)
	}
	females := countRows(rows, 4, "Female")
	out = beamtest.MustRun(t, est, "--query", "sex=Female", f("beam-00000.parquet"))
	if e := answer(t, out); e != float64(females) && e != float64(females-1) {
		t.Errorf("estimate of sex=Female: %v, truth %d (one row dropped)", e, females)
	}

	// Several shards.
	a.beam(t, "many", 10000)
	shards := a.shards(t, "many", meta, 32560)
	// The estimate tool reads the shards as parts of one release: a
	// non-sensitive count is exact, and one shard alone is refused.
	out = beamtest.MustRun(t, est, append([]string{"--query", "sex=Female"}, shards...)...)
	if e := answer(t, out); e != float64(females) && e != float64(females-1) {
		t.Errorf("estimate of sex=Female over the shards: %v, truth %d (one row dropped)", e, females)
	}
	if r := cmdtest.Run(est, nil, "--query", "sex=Female", shards[0]); r.Code == 0 {
		t.Error("estimate answered from one shard of four")
	}
}

// answer is the estimate of estimate's one-query CSV answer.
func answer(t *testing.T, out string) float64 {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("estimate printed %q", out)
	}
	fields := strings.Split(lines[1], ",")
	e, err := strconv.ParseFloat(fields[len(fields)-2], 64)
	if err != nil {
		t.Fatalf("estimate printed %q", out)
	}
	return e
}

// TestAnonymizeRefusesOnPrism: an ineligible ℓ′ fails with the CLI's
// one-line message naming the column and the largest feasible ℓ′, and
// leaves no output; flags the pipeline does not take are usage errors.
func TestAnonymizeRefusesOnPrism(t *testing.T) {
	dir, cb, _ := adultAnonTable(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	var stderr strings.Builder
	streams := &cli.Streams{Out: &stderr, Err: &stderr}
	err := Anonymize(context.Background(), Config{Input: f("a-*.parquet"), Output: f("beam"), Runner: "prism", Streams: streams,
		Args: []string{"--sensitive", "occupation", "--l", "9", "--codebook", cb}})
	if err == nil || !strings.Contains(err.Error(), "occupation is not eligible for ℓ′ = 9") || !strings.Contains(err.Error(), "largest feasible ℓ′ is 7") ||
		strings.Contains(err.Error(), "\n") {
		t.Errorf("ℓ′ = 9: got %v", err)
	}
	if left, _ := filepath.Glob(f("beam*")); len(left) > 0 {
		t.Errorf("a failed run left %v", left)
	}
	if left, _ := filepath.Glob(f(".pramkit-beam-*")); len(left) > 0 {
		t.Errorf("a failed run left %v", left)
	}
	for _, args := range [][]string{
		{"--sensitive", "occupation", "--l", "5", "--codebook", cb, "--keep-order"},
		{"--sensitive", "occupation", "--l", "5", "--codebook", cb, "--mechanism", "anatomy"},
		{"--sensitive", "occupation", "--l", "5", "--codebook", cb, "--mechanism", "global", "--p", "0.5"},
		{"--sensitive", "occupation", "--codebook", cb, "--mechanism", "global", "--p", "1"},
		{"--sensitive", "occupation", "--l", "5", "--codebook", cb, "--check"},
		{"--sensitive", "occupation", "--l", "5", "--codebook", cb, "--mechanism", "global", "--report"},
		{"--sensitive", "occupation", "--l", "5", "--codebook", cb, "--json"},
		{"--sensitive", "occupation,sex", "--l", "2", "--codebook", cb, "--mechanism", "anatomy", "--groups", "g.csv"},
		{"--sensitive", "occupation", "--l", "5", "--codebook", cb, "-o", "x.csv"},
		{"--sensitive", "occupation", "--codebook", cb},
	} {
		err := Anonymize(context.Background(), Config{Input: f("a-*.parquet"), Output: f("beam"), Runner: "prism", Streams: streams, Args: args})
		var ue *cli.UsageError
		if !asUsage(err, &ue) {
			t.Errorf("%v: got %v, want a usage error", args, err)
		}
	}
	if _, err := os.Stat(f("beam-00000.parquet")); err == nil {
		t.Error("a refused run wrote a release")
	}
}

func asUsage(err error, ue **cli.UsageError) bool { return errors.As(err, ue) }
