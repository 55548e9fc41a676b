package stage

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/table"
)

// In-process runs of the global and Anatomy pipelines' DoFns (as
// anonymize_law_test.go's for A′), with fixed keys; each test states its
// false-alarm rate.

// remeta re-encodes lawTable's A′ metadata as mechanism mech's: global
// with keep probability keep, or Anatomy (its N and groups left to the
// plan, as the driver leaves them).
func remeta(t *testing.T, meta table.Meta, mech string, keep float64) table.Meta {
	t.Helper()
	var a release.Anonymized
	if err := a.Decode(meta, "law"); err != nil {
		t.Fatal(err)
	}
	a.Mechanism = mech
	m := table.Meta{}
	switch mech {
	case release.MechanismGlobal:
		a.L, a.Grouping = 0, ""
		if err := a.Encode(m); err != nil {
			t.Fatal(err)
		}
		if err := (release.Global{Sensitive: a.Sensitive, P: []float64{keep}}).Encode(m); err != nil {
			t.Fatal(err)
		}
		delete(m, release.KeyRows)
	case release.MechanismAnatomy:
		a.GroupColumn, a.ReleaseID, a.GroupsTable = "group", "0123", "g.csv"
		if err := a.Encode(m); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// lawSplits lists the files' splits.
func lawSplits(t *testing.T, files []string) []anonSplit {
	t.Helper()
	var splits []anonSplit
	for i, f := range files {
		if err := splitAnonFile(anonFile{Index: i, Path: f}, func(s anonSplit) { splits = append(splits, s) }); err != nil {
			t.Fatal(err)
		}
	}
	return splits
}

// globalInProcess runs the global pipeline's DoFns on files: the
// published rows per shard (unsorted) and the counts.
func globalInProcess(t *testing.T, files []string, meta table.Meta, key rng.Key, keep float64, shards int) (map[int][]pubRow, globalCount) {
	t.Helper()
	out := map[int][]pubRow{}
	var total globalCount
	fn := &globalSplitFn{Key: key[:], Meta: meta, Columns: []string{"id", "s", "x"}, Keep: []float64{keep}, Shards: shards}
	for _, sp := range lawSplits(t, files) {
		err := fn.ProcessElement(context.Background(), sp, func(shard int, b pubBatch) {
			var err error
			if out[shard], err = b.rows(out[shard], 3); err != nil {
				t.Fatal(err)
			}
		}, func(c globalCount) { total = addGlobalCounts(total, c) })
		if err != nil {
			t.Fatal(err)
		}
	}
	return out, total
}

// TestAnonymizeGlobalLawInProcess: each row publishes its true value v
// with probability p + (1 − p)/V and each other value with (1 − p)/V,
// whatever its split, independently of the other rows. Over 400 keyed runs
// of 45 rows in 3 files (p = 0.3, V = 5): the outcomes classed by (file,
// v, published) pass a chi-square test, and the joint outcome (row 0
// retains, row 1 retains) the product law, each at false-alarm rate 1e-6.
// In every run every row is published once, its other cells unchanged; a
// run is the same with the same key, and not with another.
func TestAnonymizeGlobalLawInProcess(t *testing.T) {
	const runs, keep = 400, 0.3
	counts := []int{12, 10, 9, 8, 6}
	parts := []int{7, 20, 18}
	files, truth, meta := lawTable(t, counts, parts, 3, "anatomy")
	meta = remeta(t, meta, release.MechanismGlobal, keep)
	V := len(counts)
	fileOf := func(id int) int {
		switch {
		case id < parts[0]:
			return 0
		case id < parts[0]+parts[1]:
			return 1
		}
		return 2
	}
	obs := make([]int64, len(parts)*V*V)
	var joint [4]int64
	for run := range runs {
		key := rng.SeededKey(uint64(run), "global")
		out, c := globalInProcess(t, files, meta, key, keep, 3)
		if c.Read != 45 || c.Missing != 0 {
			t.Fatalf("run %d: counts %+v", run, c)
		}
		seen := make([]bool, len(truth))
		retained := make([]int, len(truth))
		for _, rows := range out {
			for _, r := range rows {
				id, err := strconv.Atoi(r.Cells[0])
				if err != nil || seen[id] || r.Cells[2] != fmt.Sprint("x", id%7) {
					t.Fatalf("run %d: row %v repeated or changed", run, r.Cells)
				}
				seen[id] = true
				w, err := strconv.Atoi(r.Cells[1][1:])
				if err != nil || w < 0 || w >= V {
					t.Fatalf("run %d: published %q", run, r.Cells[1])
				}
				obs[(fileOf(id)*V+truth[id])*V+w]++
				if w == truth[id] {
					retained[id] = 1
				}
			}
		}
		if slices.Contains(seen, false) {
			t.Fatalf("run %d: a row is missing", run)
		}
		joint[2*retained[0]+retained[1]]++
		if run == 0 {
			again, _ := globalInProcess(t, files, meta, key, keep, 3)
			other, _ := globalInProcess(t, files, meta, rng.SeededKey(1000, "global"), keep, 3)
			if fmt.Sprint(again) != fmt.Sprint(out) || fmt.Sprint(other) == fmt.Sprint(out) {
				t.Error("the same key gave another release, or another key the same")
			}
		}
	}
	rowsOf := make([]int, len(parts)*V) // rows of each (file, value)
	for id, v := range truth {
		rowsOf[fileOf(id)*V+v]++
	}
	probs := make([]float64, len(obs))
	total := float64(len(truth))
	for c, n := range rowsOf {
		for w := range V {
			p := (1 - keep) / float64(V)
			if w == c%V {
				p += keep
			}
			probs[c*V+w] = float64(n) / total * p
		}
	}
	var kept []int64
	var keptP []float64
	for i, p := range probs {
		if p > 0 {
			kept, keptP = append(kept, obs[i]), append(keptP, p)
		}
	}
	stattest.AssertChiSquare(t, "(file, value, published)", kept, keptP, 1e-6)
	ret := keep + (1-keep)/float64(V)
	stattest.AssertChiSquare(t, "(row 0 retains, row 1 retains)", joint[:],
		[]float64{(1 - ret) * (1 - ret), (1 - ret) * ret, ret * (1 - ret), ret * ret}, 1e-6)
}

// anatomyInProcess runs the Anatomy pipeline's DoFns on files: pass 1 per
// split, the merge, the plan, pass 2 per split, the numbering per bucket;
// it returns the numbered rows per shard (unsorted) and the summary.
func anatomyInProcess(t *testing.T, files []string, meta table.Meta, key rng.Key, l int, g string, shardRows int64) (map[int][]anaOutRow, anonSummary) {
	t.Helper()
	ctx := context.Background()
	columns := []string{"id", "s", "x"}
	var acc planAcc
	for i, sp := range lawSplits(t, files) {
		err := (&countSplitFn{Key: key[:], Meta: meta, Columns: columns, L: l}).ProcessElement(ctx, sp, func(a planAcc) {
			if i == 0 {
				acc = a
			} else {
				acc = (&mergePlanFn{L: l}).MergeAccumulators(acc, a)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var plans []splitPlan
	var summary string
	err := (&planFn{Key: key[:], Meta: meta, Columns: columns, L: l, Grouping: g, ShardRows: shardRows, Input: "in-*.csv", Anatomy: true}).ProcessElement(ctx, acc,
		func(p splitPlan) { plans = append(plans, p) }, func(s string) { summary = s })
	if err != nil {
		t.Fatal(err)
	}
	buckets := map[int][]anaBatch{}
	var counts anaCounts
	for _, p := range plans {
		err := (&anatomyDealFn{Key: key[:], Meta: meta, Columns: columns}).ProcessElement(ctx, p,
			func(b int, batch anaBatch) { buckets[b] = append(buckets[b], batch) },
			func(c anaCounts) { counts = mergeAnaCountsFn{}.MergeAccumulators(counts, c) })
		if err != nil {
			t.Fatal(err)
		}
	}
	out := map[int][]anaOutRow{}
	for b, batches := range buckets {
		i := 0
		iter := func(x *anaBatch) bool {
			if i == len(batches) {
				return false
			}
			*x = batches[i]
			i++
			return true
		}
		err := (&numberFn{NSA: 2}).ProcessElement(ctx, b, iter, counts, summary, func(shard int, o anaOut) {
			for j := range o.Hi {
				out[shard] = append(out[shard], anaOutRow{Hi: o.Hi[j], Lo: o.Lo[j], Group: o.Group[j], Cells: o.Cells[2*j : 2*j+2]})
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, rows := range out { // as the writer orders them
		slices.SortFunc(rows, func(a, b anaOutRow) int { return cmp.Or(cmp.Compare(a.Hi, b.Hi), cmp.Compare(a.Lo, b.Lo)) })
	}
	var sum anonSummary
	if err := jsonUnmarshal(summary, &sum); err != nil {
		t.Fatal(err)
	}
	return out, sum
}

// checkAnatomyGroups fails unless the numbered rows make the schedule's
// groups: ids 0 … G − 1, group base[t] + j (j < G_t) holding ℓ rows
// whose true values are exactly type t's set; it returns each row id's
// group and shard.
func checkAnatomyGroups(t *testing.T, out map[int][]anaOutRow, sum anonSummary, truth []int, l int) (group, shard []int) {
	t.Helper()
	group, shard = make([]int, len(truth)), make([]int, len(truth))
	for i := range group {
		group[i] = -1
	}
	var G int64
	var setOf [][]uint32
	for _, ty := range sum.Types {
		for range ty.Groups {
			setOf = append(setOf, ty.Values)
		}
		G += ty.Groups
	}
	members := make([][]uint32, G)
	for s, rows := range out {
		for _, r := range rows {
			id, err := strconv.Atoi(r.Cells[0])
			if err != nil || group[id] >= 0 || r.Cells[1] != fmt.Sprint("x", id%7) {
				t.Fatalf("row %v repeated or changed", r.Cells)
			}
			if r.Group < 0 || r.Group >= G {
				t.Fatalf("row %d: group %d of %d", id, r.Group, G)
			}
			group[id], shard[id] = int(r.Group), s
			members[r.Group] = append(members[r.Group], uint32(truth[id]))
		}
	}
	var n int64
	for g, m := range members {
		slices.Sort(m)
		if len(m) != l || !slices.Equal(m, setOf[g]) {
			t.Fatalf("group %d holds values %v, its set is %v: not ℓ-distinct as scheduled", g, m, setOf[g])
		}
		n += int64(len(m))
	}
	if n != sum.Rows {
		t.Fatalf("%d rows in groups, N = %d", n, sum.Rows)
	}
	return group, shard
}

// TestAnonymizeAnatomyLawInProcess: the rows of a value fill its groups
// by a uniformly random bijection, independently across values, and the
// group ids are unrelated to where rows are published. 30 rows of 3
// values (10 each, ids 0, 1, 2, … interleaved) in 3 files, ℓ = 3: one set
// type, 10 groups; 4 output shards and numbering buckets. Over 400 keyed
// runs, row 0's group is uniform on the 10, its partner among value 1's
// rows uniform on those 10 rows, and (row 0's shard, row 0's group)
// uniform on the 40 pairs: three chi-square tests at false-alarm rate
// 1e-6 each. In every run the groups are those of the schedule; on an
// uneven table (5 values, 3 files, grouping random, N mod ℓ = 0) too, over
// 30 runs, and a run is the same with the same key.
func TestAnonymizeAnatomyLawInProcess(t *testing.T) {
	const l, runs = 3, 400
	files, truth, meta := lawTable(t, []int{10, 10, 10}, []int{7, 13, 10}, l, "anatomy")
	meta = remeta(t, meta, release.MechanismAnatomy, 0)
	groupOf0 := make([]int64, 10)
	partner := make([]int64, 10)
	shardGroup := make([]int64, 40)
	for run := range runs {
		out, sum := anatomyInProcess(t, files, meta, rng.SeededKey(uint64(run), "anatomy"), l, "anatomy", 8)
		if sum.Rows != 30 || sum.Dropped != 0 || sum.Shards != 4 || len(sum.Types) != 1 || sum.Types[0].Groups != 10 {
			t.Fatalf("run %d: summary %+v", run, sum)
		}
		group, shard := checkAnatomyGroups(t, out, sum, truth, l)
		groupOf0[group[0]]++
		shardGroup[shard[0]*10+group[0]]++
		for id := 1; id < len(truth); id += 3 { // value 1's rows
			if group[id] == group[0] {
				partner[id/3]++
			}
		}
	}
	uniform := func(n int) []float64 {
		p := make([]float64, n)
		for i := range p {
			p[i] = 1 / float64(n)
		}
		return p
	}
	stattest.AssertChiSquare(t, "row 0's group", groupOf0, uniform(10), 1e-6)
	stattest.AssertChiSquare(t, "row 0's partner of value 1", partner, uniform(10), 1e-6)
	stattest.AssertChiSquare(t, "(row 0's shard, row 0's group)", shardGroup, uniform(40), 1e-6)

	files, truth, meta = lawTable(t, []int{12, 10, 9, 8, 6}, []int{7, 20, 18}, l, "random")
	meta = remeta(t, meta, release.MechanismAnatomy, 0)
	for run := range 30 {
		key := rng.SeededKey(uint64(run), "anatomy-uneven")
		out, sum := anatomyInProcess(t, files, meta, key, l, "random", 10)
		if sum.Rows != 45 || sum.Shards != 5 {
			t.Fatalf("run %d: summary %+v", run, sum)
		}
		checkAnatomyGroups(t, out, sum, truth, l)
		if run == 0 {
			again, _ := anatomyInProcess(t, files, meta, key, l, "random", 10)
			if fmt.Sprint(again) != fmt.Sprint(out) {
				t.Error("the same key gave another release")
			}
		}
	}
}
