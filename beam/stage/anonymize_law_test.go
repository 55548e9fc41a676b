package stage

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/pramkit/pramkit/beam/internal/beamtest"
	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/table"
)

// These tests run the anonymize pipeline's DoFns in process, without a
// runner, so that hundreds of keyed runs take seconds: the law of the
// result is the pipeline's whatever the runner (TestAnonymizeOnPrism runs
// the same DoFns on Prism). Fixed keys (rng.SeededKey), so they are
// deterministic; each states its false-alarm rate.

// lawTable writes rows (id, s, x) with value counts counts, value v's rows
// interleaved, as len(parts) CSV files of parts[i] rows each; it returns
// the files, the true value per id, and the release metadata of column s
// (V = len(counts)) at ℓ′ = l with grouping g.
func lawTable(t *testing.T, counts []int, parts []int, l int, g string) ([]string, []int, table.Meta) {
	t.Helper()
	var truth []int
	for left := slices.Clone(counts); ; {
		added := false
		for v := range left {
			if left[v] > 0 {
				truth = append(truth, v)
				left[v]--
				added = true
			}
		}
		if !added {
			break
		}
	}
	dir := t.TempDir()
	var files []string
	at := 0
	for i, n := range parts {
		path := filepath.Join(dir, fmt.Sprintf("in-%d.csv", i))
		rows := make([][]string, 0, n)
		for range n {
			rows = append(rows, []string{strconv.Itoa(at), fmt.Sprint("v", truth[at]), fmt.Sprint("x", at%7)})
			at++
		}
		beamtest.WriteRows(t, path, []string{"id", "s", "x"}, nil, 0, rows)
		files = append(files, path)
	}
	if at != len(truth) {
		t.Fatalf("parts hold %d rows, counts %d", at, len(truth))
	}
	var cats []string
	for v := range counts {
		cats = append(cats, fmt.Sprint("v", v))
	}
	col, err := codebook.NewColumn(codebook.Spec{Name: "s", Categories: cats})
	if err != nil {
		t.Fatal(err)
	}
	cb, err := codebook.New(col)
	if err != nil {
		t.Fatal(err)
	}
	meta := table.Meta{}
	a := release.Anonymized{Mechanism: release.MechanismDiverted, Grouping: g, L: l, Sensitive: []string{"s"}, Codebook: cb}
	if err := a.Encode(meta); err != nil {
		t.Fatal(err)
	}
	return files, truth, meta
}

// inProcess runs the pipeline's DoFns in order on files: pass 1 per
// split, the merge (splits merged in the order perm gives, nil for as
// read), the plan, pass 2 per split; it returns the published rows per
// shard (unsorted) and the summary.
func inProcess(t *testing.T, files []string, meta table.Meta, key rng.Key, l int, g string, shardRows int64, perm []int,
	onDeal func(file int, row int64, k int, set []uint32, y uint32)) (map[int][]pubRow, anonSummary, error) {
	t.Helper()
	ctx := context.Background()
	columns := []string{"id", "s", "x"}
	var splits []anonSplit
	for i, f := range files {
		if err := splitAnonFile(anonFile{Index: i, Path: f}, func(s anonSplit) { splits = append(splits, s) }); err != nil {
			return nil, anonSummary{}, err
		}
	}
	var accs []planAcc
	for _, sp := range splits {
		if err := (&countSplitFn{Key: key[:], Meta: meta, Columns: columns, L: l}).ProcessElement(ctx, sp, func(a planAcc) { accs = append(accs, a) }); err != nil {
			return nil, anonSummary{}, err
		}
	}
	if perm != nil {
		permuted := make([]planAcc, len(accs))
		for i, j := range perm {
			permuted[i] = accs[j]
		}
		accs = permuted
	}
	merge := &mergePlanFn{L: l}
	acc := accs[0]
	for _, a := range accs[1:] {
		acc = merge.MergeAccumulators(acc, a)
	}
	var plans []splitPlan
	var summary string
	err := (&planFn{Key: key[:], Meta: meta, Columns: columns, L: l, Grouping: g, ShardRows: shardRows, Input: "in-*.csv"}).ProcessElement(ctx, acc,
		func(p splitPlan) { plans = append(plans, p) }, func(s string) { summary = s })
	if err != nil {
		return nil, anonSummary{}, err
	}
	out := map[int][]pubRow{}
	for _, p := range plans {
		err := (&dealSplitFn{Key: key[:], Meta: meta, Columns: columns, onDeal: onDeal}).ProcessElement(ctx, p, func(shard int, b pubBatch) {
			var err error
			if out[shard], err = b.rows(out[shard], len(columns)); err != nil {
				t.Fatal(err)
			}
		})
		if err != nil {
			return nil, anonSummary{}, err
		}
	}
	var sum anonSummary
	if err := jsonUnmarshal(summary, &sum); err != nil {
		t.Fatal(err)
	}
	return out, sum, nil
}

// TestAnonymizeJointLawInProcess: the joint law of (true value, decoy set,
// published value) of every row is A′'s, whatever the row's split and
// place in it. Anatomy's grouping makes the schedule a function of the
// counts (N = 45, a multiple of ℓ′ = 3: nothing dropped), so a row of
// value v gets set type t with probability g_t/c_v (its share of v's
// slots: a uniform bijection between v's rows and slots) and publishes
// each member of the set with probability 1/ℓ′. Over 400 keyed runs the
// outcomes, classed by (split, first or second half of the split, v, t,
// w), pass a chi-square test at false-alarm rate 1e-6 (with the class
// sizes fixed, the statistic has fewer degrees of freedom than the test
// assumes, which only lowers the rate). In every run every set type's
// groups are ℓ′-distinct: each value of the set got exactly g_t of its
// slots, and every row published a member of its set.
func TestAnonymizeJointLawInProcess(t *testing.T) {
	const l, runs = 3, 400
	counts := []int{12, 10, 9, 8, 6} // N = 45
	parts := []int{7, 20, 18}
	files, truth, meta := lawTable(t, counts, parts, l, "anatomy")
	c64 := make([]int64, len(counts))
	for v, c := range counts {
		c64[v] = int64(c)
	}
	sch, err := anonymize.NewSchedule(c64, l, anonymize.GroupingAnatomy, nil)
	if err != nil {
		t.Fatal(err)
	}
	typeOf := func(set []uint32) int {
		return slices.IndexFunc(sch.Types, func(st anonymize.SetType) bool { return slices.Equal(st.Values, set) })
	}
	// class of row id: split (by file), half, value.
	first := []int{0, 7, 27}
	class := func(file int, row int64) int {
		half := 0
		if 2*row >= int64(parts[file]) {
			half = 1
		}
		id := first[file] + int(row)
		return (file*2+half)*len(counts) + truth[id]
	}
	nClass := len(parts) * 2 * len(counts)
	V, T := len(counts), len(sch.Types)
	obs := make([]int64, nClass*T*V)
	classRows := make([]int64, nClass)
	for id := range truth {
		file := slices.IndexFunc(first, func(f int) bool { return f > id }) - 1
		if file < 0 {
			file = len(first) - 1
		}
		classRows[class(file, int64(id-first[file]))]++
	}
	for run := range runs {
		dealt := make([][]int64, T) // per type, per value: rows dealt
		for i := range dealt {
			dealt[i] = make([]int64, V)
		}
		rows, sum, err := inProcess(t, files, meta, rng.SeededKey(uint64(run), "law"), l, "anatomy", 1000, nil,
			func(file int, row int64, _ int, set []uint32, y uint32) {
				ty := typeOf(set)
				if ty < 0 || !slices.Contains(set, y) || !slices.Contains(set, uint32(truth[first[file]+int(row)])) {
					t.Fatalf("run %d: row %d of file %d (value %d) dealt set %v, published %d", run, row, file, truth[first[file]+int(row)], set, y)
				}
				dealt[ty][truth[first[file]+int(row)]]++
				obs[(class(file, row)*T+ty)*V+int(y)]++
			})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Rows != 45 || sum.Dropped != 0 || len(rows[0]) != 45 {
			t.Fatalf("run %d: summary %+v, %d rows", run, sum, len(rows[0]))
		}
		for ty, st := range sch.Types {
			for v := range V {
				want := int64(0)
				if slices.Contains(st.Values, uint32(v)) {
					want = st.Groups
				}
				if dealt[ty][v] != want {
					t.Fatalf("run %d: set %v got %d rows of value %d, want %d: its groups are not ℓ′-distinct", run, st.Values, dealt[ty][v], v, want)
				}
			}
		}
	}
	probs := make([]float64, len(obs))
	for c := range nClass {
		v := c % V
		for ty, st := range sch.Types {
			if !slices.Contains(st.Values, uint32(v)) {
				continue
			}
			for _, w := range st.Values {
				probs[(c*T+ty)*V+int(w)] = float64(classRows[c]) / 45 * float64(st.Groups) / float64(counts[v]) / l
			}
		}
	}
	var kept []int64
	var keptP []float64
	for i, p := range probs {
		if p > 0 {
			kept, keptP = append(kept, obs[i]), append(keptP, p)
		} else if obs[i] != 0 {
			t.Fatalf("outcome %d has probability 0 but occurred %d times", i, obs[i])
		}
	}
	stattest.AssertChiSquare(t, "(split, half, value, set, published)", kept, keptP, 1e-6)
}

// TestAnonymizeDropIsUniformInProcess: with N = 34 and ℓ′ = 3 one row is
// dropped, a uniformly random one: over 680 keyed runs the dropped row's
// id passes a chi-square test against the uniform law on 34 rows (false
// alarm 1e-6); the published rows are the others, N = 33 and dropped = 1.
func TestAnonymizeDropIsUniformInProcess(t *testing.T) {
	const l, runs = 3, 680
	counts := []int{10, 8, 7, 5, 4}
	files, truth, meta := lawTable(t, counts, []int{10, 24}, l, "random")
	hits := make([]int64, len(truth))
	for run := range runs {
		rows, sum, err := inProcess(t, files, meta, rng.SeededKey(uint64(run), "drop"), l, "random", 1000, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Rows != 33 || sum.Dropped != 1 {
			t.Fatalf("summary %+v", sum)
		}
		present := make([]bool, len(truth))
		for _, r := range rows[0] {
			id, _ := strconv.Atoi(r.Cells[0])
			present[id] = true
		}
		missing := slices.Index(present, false)
		if missing < 0 || slices.Index(present[missing+1:], false) >= 0 {
			t.Fatalf("run %d: not exactly one row dropped", run)
		}
		hits[missing]++
	}
	probs := make([]float64, len(truth))
	for i := range probs {
		probs[i] = 1 / float64(len(truth))
	}
	stattest.AssertChiSquare(t, "dropped row", hits, probs, 1e-6)
}

// TestAnonymizeIsRecomputable: the runner may combine pass 1's splits in
// any order and retry any split: the release is the same, row for row and
// shard for shard (same key, same files); another key gives another one.
func TestAnonymizeIsRecomputable(t *testing.T) {
	counts := []int{28, 25, 20, 18, 13, 10}
	files, _, meta := lawTable(t, counts, []int{40, 3, 50, 21}, 4, "random")
	key := rng.SeededKey(9, "recompute")
	a, sa, err := inProcess(t, files, meta, key, 4, "random", 30, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sa.Shards != 4 || sa.Rows != 112 || sa.Dropped != 2 {
		t.Fatalf("summary %+v: want 112 rows in 4 shards of about 30, 2 dropped", sa)
	}
	for _, perm := range [][]int{{3, 2, 1, 0}, {1, 3, 0, 2}} {
		b, sb, err := inProcess(t, files, meta, key, 4, "random", 30, perm, nil)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(sb) != fmt.Sprint(sa) || fmt.Sprint(b) != fmt.Sprint(a) {
			t.Errorf("merge order %v changed the release", perm)
		}
	}
	c, _, err := inProcess(t, files, meta, rng.SeededKey(10, "recompute"), 4, "random", 30, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(c) == fmt.Sprint(a) {
		t.Error("another key gave the same release")
	}
}

// TestFenwickFindsByRank: find(x) is the index whose cumulative range
// holds x, after updates too.
func TestFenwickFindsByRank(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		w := make([]int64, 1+r.IntN(40))
		for i := range w {
			w[i] = int64(r.IntN(4))
		}
		f := newFenwick(w)
		for range 3 {
			var total int64
			for i, x := range w {
				for y := total; y < total+x; y++ {
					if got := f.find(y); got != i {
						t.Fatalf("weights %v: find(%d) = %d, want %d", w, y, got, i)
					}
				}
				total += x
			}
			if total != f.total {
				t.Fatalf("total %d, want %d", f.total, total)
			}
			i := r.IntN(len(w))
			if w[i] > 0 {
				w[i]--
				f.add(i, -1)
			}
		}
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
