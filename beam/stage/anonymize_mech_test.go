package stage

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/beam/internal/beamtest"
	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/cli"
	anonymizecmd "github.com/pramkit/pramkit/pkg/cmd/anonymize"
	estimatecmd "github.com/pramkit/pramkit/pkg/cmd/estimate"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/release"
)

// occupationIndex returns Adult's occupation codebook column and a label
// → value index function.
func occupationIndex(t *testing.T, cb string) (*codebook.Column, func(string) int) {
	t.Helper()
	cbook, err := codebook.Load(cb)
	if err != nil {
		t.Fatal(err)
	}
	col, _ := cbook.Column("occupation")
	enc, _ := col.Encoder(codebook.Policy{})
	return col, func(label string) int {
		x, err := enc.Index(label)
		if err != nil {
			t.Fatalf("label %q: %v", label, err)
		}
		return int(x)
	}
}

// sameMetaExcept reports the metadata items that differ from the CLI's, but
// for the run-specific ones named in except.
func sameMetaExcept(t *testing.T, what string, got, want map[string]string, except ...string) {
	t.Helper()
	for k, v := range want {
		if !slices.Contains(except, k) && got[k] != v {
			t.Errorf("%s: metadata %s = %q, the CLI's %q", what, k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: metadata %s = %q, which the CLI's has not", what, k, got[k])
		}
	}
}

// TestAnonymizeGlobalOnPrism publishes Adult's occupation with mechanism
// A at the comparison point ℓ′ = 5 (retention 1/5) on Prism from Parquet
// shards read by row group, next to the anonymize tool on the whole table
// with the same flags, and checks:
//   - the metadata is the CLI's, key for key (p, ℓ′, no N);
//   - the rows are the input's rows, each once, non-sensitive cells
//     unchanged, in an order unrelated to the input's (at most 20 rows at
//     their input position, where a shuffle puts about 1);
//   - rows publishing their true value ~ Binomial(N, 1/ℓ′) (each row
//     retains its value with probability p + (1 − p)/V = 1/ℓ′,
//     independently), at false-alarm rate 1e-6;
//   - estimate's answer to 'occupation=Sales' on the Beam release and on
//     the CLI's are each within 6 standard deviations of the truth (the
//     estimator (y − N(1 − p)/V)/p has sd √(Σ_rows π_r(1 − π_r))/p, π_r the
//     row's probability to publish Sales; false alarm 2e-9 each, normal
//     approximation), and 'sex=Female' (published unchanged) is exact;
//   - with --shard-rows 10000 the release is 4 shards with the same
//     metadata holding every row once, which estimate reads as parts.
func TestAnonymizeGlobalOnPrism(t *testing.T) {
	const l = 5
	a := newAnonPrism(t, "global", l)
	f, cb, rows := a.f, a.cb, a.rows
	a.tool(t)
	a.beam(t, "beam", 0)
	cols, got, meta := cmdtest.ReadTable(t, f("beam-00000.parquet"))
	wantCols, want, wantMeta := cmdtest.ReadTable(t, f("want.csv"))
	if !slices.Equal(cols, wantCols) {
		t.Errorf("columns %v, the CLI's %v", cols, wantCols)
	}
	if len(got) != len(rows) || len(want) != len(rows) {
		t.Fatalf("%d rows, the CLI %d, the input %d", len(got), len(want), len(rows))
	}
	sameMetaExcept(t, "beam-00000.parquet", meta, wantMeta)
	if _, ok := meta[release.KeyRows]; ok {
		t.Errorf("a global release records N: %v", meta)
	}

	occ := slices.Index(cols, "occupation")
	col, index := occupationIndex(t, cb)
	V := col.K()
	keep := release.KeepForRetention(V, l)
	ids := a.inputIDs(t, got)
	a.checkOthersUnchanged(t, cols, got, ids, occ)
	var own int64
	for i, r := range got {
		if index(r[occ]) == index(rows[ids[i]][occ]) {
			own++
		}
	}
	stattest.AssertBinomial(t, "rows publishing their true value", own, int64(len(got)), 1.0/l, 1e-6)

	est := beamtest.Tool(estimatecmd.NewCmd)
	sales := index("Sales")
	var truth int64
	var variance float64
	for _, r := range rows {
		pi := (1 - keep) / float64(V)
		if index(r[occ]) == sales {
			truth++
			pi += keep
		}
		variance += pi * (1 - pi)
	}
	sd := math.Sqrt(variance) / keep
	for _, file := range []string{f("beam-00000.parquet"), f("want.csv")} {
		out := beamtest.MustRun(t, est, "--query", "occupation=Sales", file)
		if e := answer(t, out); math.Abs(e-float64(truth)) > 6*sd {
			t.Errorf("%s: estimate of occupation=Sales: %v, truth %d (sd %.1f)", file, e, truth, sd)
		}
	}
	females := countRows(rows, 4, "Female")
	out := beamtest.MustRun(t, est, "--query", "sex=Female", f("beam-00000.parquet"))
	if e := answer(t, out); e != float64(females) {
		t.Errorf("estimate of sex=Female: %v, truth %d", e, females)
	}

	// Several shards, read by estimate as parts of one release.
	a.beam(t, "many", 10000)
	shards := a.shards(t, "many", meta, len(rows))
	out = beamtest.MustRun(t, est, append([]string{"--query", "sex=Female"}, shards...)...)
	if e := answer(t, out); e != float64(females) {
		t.Errorf("estimate of sex=Female over the shards: %v, truth %d", e, females)
	}
	out = beamtest.MustRun(t, est, append([]string{"--query", "occupation=Sales"}, shards...)...)
	if e := answer(t, out); math.Abs(e-float64(truth)) > 6*sd {
		t.Errorf("estimate of occupation=Sales over the shards: %v, truth %d (sd %.1f)", e, truth, sd)
	}
}

// TestAnonymizeAnatomyOnPrism publishes Adult's occupation with Anatomy
// at ℓ = 5 on Prism from Parquet shards, next to the anonymize tool with
// the same flags, and checks:
//   - the row table's metadata is the CLI's but for the run's release id
//     and sensitive table's name (N = 32560, dropped = 1, groups), the
//     sensitive table's the CLI's but for the release id, and the two
//     tables share their release id;
//   - the row table is the input's rows but one, each once, the sensitive
//     column replaced by the group id, non-sensitive cells unchanged, in an
//     order unrelated to the input's (at most 20 rows in place);
//   - the groups are 0 … G − 1 (G = N/ℓ), each holding ℓ rows whose true
//     values are ℓ distinct values, exactly the group's values in the
//     sensitive table with count 1: each value's count is preserved;
//   - estimate answers on the shards and the sensitive table: a count of
//     one value exactly, and 'sex=Female,occupation=Sales' within 6
//     standard deviations of its expectation given the schedule (below),
//     on the Beam release and on the CLI's alike (false alarm 2e-9 each,
//     normal approximation).
//
// Anatomy's estimate of 'sex=Female,occupation=Sales' is X/ℓ, X the
// Female rows in groups holding Sales. Given the schedule, v's rows are
// dealt to v's slots by a uniform bijection, so the Female rows of v
// (F_v of its c_v rows) in the s_v slots of sets holding Sales are
// hypergeometric, independently across v: E X = Σ_v F_v·s_v/c_v, and the
// variances add up.
func TestAnonymizeAnatomyOnPrism(t *testing.T) {
	const l = 5
	a := newAnonPrism(t, "anatomy", l)
	f, cb, rows := a.f, a.cb, a.rows
	a.tool(t, "--groups", f("want.groups.csv"))
	a.beam(t, "beam", 10000, "--groups", f("beam.groups.parquet"))
	a.checkDroppedOne(t)
	shards, _ := filepath.Glob(f("beam-*.parquet"))
	if len(shards) != 4 {
		t.Fatalf("shards %v, want 4", shards)
	}
	wantCols, want, wantMeta := cmdtest.ReadTable(t, f("want.csv"))
	_, _, wantSTMeta := cmdtest.ReadTable(t, f("want.groups.csv"))
	_, st, stMeta := cmdtest.ReadTable(t, f("beam.groups.parquet"))
	sameMetaExcept(t, "beam.groups.parquet", stMeta, wantSTMeta, release.KeyReleaseID)
	var cols []string
	var got [][]string
	for _, s := range shards {
		c, part, m := cmdtest.ReadTable(t, s)
		cols = c
		got = append(got, part...)
		sameMetaExcept(t, s, m, wantMeta, release.KeyReleaseID, release.KeyGroupsTable)
		if m[release.KeyReleaseID] != stMeta[release.KeyReleaseID] || m[release.KeyReleaseID] == wantMeta[release.KeyReleaseID] {
			t.Errorf("%s: release id %q, the sensitive table's %q, the CLI's %q", s, m[release.KeyReleaseID], stMeta[release.KeyReleaseID], wantMeta[release.KeyReleaseID])
		}
		if m[release.KeyGroupsTable] != f("beam.groups.parquet") { // as the CLI: --groups as given
			t.Errorf("%s: groups_table %q", s, m[release.KeyGroupsTable])
		}
	}
	if !slices.Equal(cols, wantCols) {
		t.Errorf("columns %v, the CLI's %v", cols, wantCols)
	}
	if len(got) != 32560 || len(want) != 32560 {
		t.Fatalf("%d rows, the CLI %d", len(got), len(want))
	}

	_, index := occupationIndex(t, cb)
	occ := 3 // in the input's rows
	G := 32560 / l
	members := make([][]int, G) // group → true values of its rows
	for i, id := range a.inputIDs(t, got) {
		r := got[i]
		in := slices.Delete(slices.Clone(rows[id]), occ, occ+1)
		if !slices.Equal(r[:len(r)-1], in) {
			t.Fatalf("row id %d: %v, the input's %v", id, r, rows[id])
		}
		g, err := strconv.Atoi(r[len(r)-1])
		if err != nil || g < 0 || g >= G {
			t.Fatalf("row id %d: group %q, not in 0…%d", id, r[len(r)-1], G-1)
		}
		members[g] = append(members[g], index(rows[id][occ]))
	}
	stValues := make([][]int, G)
	for _, e := range st {
		g, _ := strconv.Atoi(e[0])
		if g < 0 || g >= G || e[2] != "1" {
			t.Fatalf("sensitive table row %v", e)
		}
		stValues[g] = append(stValues[g], index(e[1]))
	}
	for g := range G {
		a, b := slices.Sorted(slices.Values(members[g])), slices.Sorted(slices.Values(stValues[g]))
		if len(a) != l || !slices.Equal(a, b) || len(slices.Compact(slices.Clone(a))) != l {
			t.Fatalf("group %d holds rows of values %v, the sensitive table says %v: not ℓ-distinct as scheduled", g, a, b)
		}
	}

	est := beamtest.Tool(estimatecmd.NewCmd)
	// The Beam release: its rows' values and its schedule give the
	// expectation of X.
	check := func(what string, files []string, groups string, ids [][]string, stRows [][]string) {
		t.Helper()
		sales := index("Sales")
		c, fem := make([]float64, 64), make([]float64, 64) // per value: kept rows, Female kept rows
		var salesCount int64
		for _, r := range ids {
			id, _ := strconv.Atoi(r[0])
			v := index(rows[id][occ])
			c[v]++
			if rows[id][4] == "Female" {
				fem[v]++
			}
			if v == sales {
				salesCount++
			}
		}
		// s_v: slots of v in groups holding Sales.
		s := make([]float64, 64)
		groupVals := map[int][]int{}
		for _, e := range stRows {
			g, _ := strconv.Atoi(e[0])
			groupVals[g] = append(groupVals[g], index(e[1]))
		}
		for _, vals := range groupVals {
			if slices.Contains(vals, sales) {
				for _, v := range vals {
					s[v]++
				}
			}
		}
		var mean, variance float64
		for v := range c {
			if c[v] == 0 {
				continue
			}
			n, K, N := s[v], fem[v], c[v]
			mean += n * K / N
			if N > 1 {
				variance += n * K / N * (N - K) / N * (N - n) / (N - 1)
			}
		}
		a := append([]string{"--query", "sex=Female,occupation=Sales", "--groups", groups}, files...)
		e := answer(t, beamtest.MustRun(t, est, a...))
		if sd := math.Sqrt(variance) / l; math.Abs(e-mean/l) > 6*sd {
			t.Errorf("%s: estimate of sex=Female,occupation=Sales: %v, expected %.1f (sd %.2f)", what, e, mean/l, sd)
		}
		a = append([]string{"--query", "occupation=Sales", "--groups", groups}, files...)
		if e := answer(t, beamtest.MustRun(t, est, a...)); e != float64(salesCount) {
			t.Errorf("%s: estimate of occupation=Sales: %v, the release's %d", what, e, salesCount)
		}
	}
	check("beam", shards, f("beam.groups.parquet"), got, st)
	_, wantST, _ := cmdtest.ReadTable(t, f("want.groups.csv"))
	check("CLI", []string{f("want.csv")}, f("want.groups.csv"), want, wantST)
	// One shard alone is refused (its rows do not add up to N).
	if r := cmdtest.Run(est, nil, "--query", "sex=Female", "--groups", f("beam.groups.parquet"), shards[0]); r.Code == 0 {
		t.Error("estimate answered from one shard of four")
	}
}

// TestAnonymizeReportOnPrism: --report (here --json) prints the tool's
// report of the published rows, from the plan's counts: with --missing
// drop Adult keeps 30718 rows, a multiple of ℓ′ = 2, so no row is left
// out at random and the published rows' counts, hence the report, are
// the tool's exactly.
func TestAnonymizeReportOnPrism(t *testing.T) {
	dir, cb, _ := adultAnonTable(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	args := []string{"--sensitive", "occupation", "--l", "2", "--missing", "drop", "--codebook", cb, "--report", "--json", "--rel-error", "0.3",
		"--seed", "7", "--insecure-seed"}
	want := beamtest.MustRun(t, beamtest.Tool(anonymizecmd.NewCmd), append(slices.Clone(args), f("adult.csv"), "-o", f("want.csv"))...)
	var stdout, stderr strings.Builder
	streams := &cli.Streams{Out: &stdout, Err: &stderr}
	if err := Anonymize(context.Background(), Config{Input: f("a-*.parquet"), Output: f("beam"), Runner: "prism", Args: args, Streams: streams}); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	if !strings.Contains(want, `"count":`) || stdout.String() != want {
		t.Errorf("report %q, the CLI's %q", stdout.String(), want)
	}
	if !strings.Contains(stderr.String(), "left out 1843 rows with a missing sensitive value") || strings.Contains(stderr.String(), "chosen at random") {
		t.Errorf("stderr %q", stderr.String())
	}
	_, _, meta := cmdtest.ReadTable(t, f("beam-00000.parquet"))
	if meta[release.KeyRows] != "30718" || meta[release.KeyDropped] != "0" {
		t.Errorf("metadata %v", meta)
	}
}
