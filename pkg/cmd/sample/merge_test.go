package sample

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/release"
)

func build(s *cli.Streams) *cobra.Command { return NewCmd(s, nil) }

// shardFixture writes a table of n rows with a unique id column, whole
// (all.csv) and split into shards at cuts (s0.csv, s1.csv, …), plus two
// secrets; it returns the directory.
func shardFixture(t *testing.T, n int, cuts []int) string {
	t.Helper()
	dir := t.TempDir()
	var rows []string
	for i := range n {
		rows = append(rows, fmt.Sprintf("p%d,%d,%c", i*7919%100003, 18+i*31%70, "abc"[i*13%3]))
	}
	header := "pid,age,edu\n"
	cmdtest.WriteFile(t, dir, "all.csv", header+strings.Join(rows, "\n")+"\n")
	bounds := append(append([]int{0}, cuts...), n)
	for k := 0; k+1 < len(bounds); k++ {
		cmdtest.WriteFile(t, dir, fmt.Sprintf("s%d.csv", k), header+strings.Join(rows[bounds[k]:bounds[k+1]], "\n")+"\n")
	}
	cmdtest.WriteFile(t, dir, "sec", strings.Repeat("5a", 32)+"\n")
	cmdtest.WriteFile(t, dir, "other.sec", strings.Repeat("c3", 32)+"\n")
	return dir
}

func mustRun(t *testing.T, args ...string) {
	t.Helper()
	if res := cmdtest.Run(build, nil, args...); res.Code != 0 {
		t.Fatalf("sample %v: exit %d: %s", args, res.Code, res.Stderr)
	}
}

// sameFiles checks that two outputs are equal byte for byte: the data and
// the sidecar (whose metadata includes the tool version, the same here
// since both runs are of this build).
func sameFiles(t *testing.T, got, want string) {
	t.Helper()
	for _, suffix := range []string{"", ".meta.json"} {
		a, err := os.ReadFile(got + suffix)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(want + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s:\n%s\nwant\n%s", filepath.Base(got+suffix), filepath.Base(want+suffix), a, b)
		}
	}
}

// TestMergeOfShardsEqualsOneRunOnUnion splits a table into 3 shards of
// unequal sizes, samples each with --id --with-priority -m min(M, n_i),
// merges, and compares the merge byte for byte with one run on the whole
// table: with --with-priority on both sides, and without it on both (the
// merge drops the priority column and its metadata).
func TestMergeOfShardsEqualsOneRunOnUnion(t *testing.T) {
	dir := shardFixture(t, 300, []int{100, 130})
	sizes := []int{100, 30, 170}
	in := func(name string) string { return filepath.Join(dir, name) }
	sec := in("sec")
	for _, m := range []int{1, 25, 120, 300} {
		var shards []string
		for k, nk := range sizes {
			s := in(fmt.Sprintf("m%d-s%d.sample.csv", m, k))
			mustRun(t, "--secret", sec, "--id", "pid", "--with-priority", "-m", fmt.Sprint(min(m, nk)), in(fmt.Sprintf("s%d.csv", k)), "-o", s)
			shards = append(shards, s)
		}
		for _, wp := range []bool{true, false} {
			flag := []string{}
			if wp {
				flag = []string{"--with-priority"}
			}
			merged := in(fmt.Sprintf("m%d-%v.merged.csv", m, wp))
			one := in(fmt.Sprintf("m%d-%v.one.csv", m, wp))
			mustRun(t, append(append([]string{"--merge", "--secret", sec, "-m", fmt.Sprint(m), "-o", merged}, flag...), shards...)...)
			mustRun(t, append([]string{"--secret", sec, "--id", "pid", "-m", fmt.Sprint(m), in("all.csv"), "-o", one}, flag...)...)
			sameFiles(t, merged, one)
			names, rows, meta := cmdtest.ReadTable(t, merged)
			if got := len(rows); got != m {
				t.Errorf("m=%d: merged sample has %d rows", m, got)
			}
			if wp != (names[len(names)-1] == release.PriorityColumn) || wp != (meta[release.KeySecretID] != "") {
				t.Errorf("m=%d --with-priority=%v: columns %v, metadata %v", m, wp, names, meta)
			}
		}
	}
}

// TestSeveralInputsAreOneTable checks that sampling the shards given as
// several inputs writes what sampling the concatenated file writes, by
// position (positions number on across files) and by id.
func TestSeveralInputsAreOneTable(t *testing.T) {
	dir := shardFixture(t, 200, []int{50, 51})
	in := func(name string) string { return filepath.Join(dir, name) }
	for _, id := range [][]string{nil, {"--id", "pid", "--with-priority"}} {
		name := fmt.Sprint(len(id))
		mustRun(t, append([]string{"--secret", in("sec"), "-m", "40", in("s0.csv"), in("s1.csv"), in("s2.csv"), "-o", in(name + ".parts.csv")}, id...)...)
		mustRun(t, append([]string{"--secret", in("sec"), "-m", "40", in("all.csv"), "-o", in(name + ".all.csv")}, id...)...)
		sameFiles(t, in(name+".parts.csv"), in(name+".all.csv"))
	}
}

func TestMergeRefusesBadShards(t *testing.T) {
	dir := shardFixture(t, 200, []int{100})
	in := func(name string) string { return filepath.Join(dir, name) }
	sec := in("sec")
	mustRun(t, "--secret", sec, "--id", "pid", "--with-priority", "-m", "20", in("s0.csv"), "-o", in("a.csv"))
	mustRun(t, "--secret", sec, "--id", "pid", "--with-priority", "-m", "20", in("s1.csv"), "-o", in("b.csv"))
	mustRun(t, "--secret", in("other.sec"), "--id", "pid", "--with-priority", "-m", "20", in("s1.csv"), "-o", in("b-other.csv"))
	mustRun(t, "--secret", sec, "--id", "pid", "-m", "20", in("s1.csv"), "-o", in("b-plain.csv"))
	mustRun(t, "--secret", sec, "--with-priority", "-m", "20", in("s1.csv"), "-o", in("b-pos.csv"))
	mustRun(t, "--secret", sec, "--id", "pid", "--with-priority", "--columns", "age", "-m", "20", in("s1.csv"), "-o", in("b-cols.csv"))
	mustRun(t, "--secret", sec, "--id", "pid", "--with-priority", "-m", "2", in("s1.csv"), "-o", in("b-small.csv"))
	out := in("merged.csv")
	merge := func(files ...string) []string {
		return append([]string{"--merge", "--secret", sec, "-m", "20", "-o", out}, files...)
	}
	cmdtest.ExpectFailures(t, build, out, []cmdtest.Failure{
		{Name: "mixed secrets", Args: merge(in("a.csv"), in("b-other.csv")), Code: 1, Msg: "b-other.csv was sampled under another secret"},
		{Name: "merge under another secret", Args: []string{"--merge", "--secret", in("other.sec"), "-m", "20", "-o", out, in("a.csv"), in("b.csv")}, Code: 1, Msg: "a.csv was sampled under another secret"},
		{Name: "no priority column", Args: merge(in("a.csv"), in("b-plain.csv")), Code: 1, Msg: "b-plain.csv has no priority column"},
		{Name: "position sample", Args: merge(in("a.csv"), in("b-pos.csv")), Code: 1, Msg: "b-pos.csv was sampled by row position"},
		{Name: "different columns", Args: merge(in("a.csv"), in("b-cols.csv")), Code: 1, Msg: "b-cols.csv has columns age but"},
		{Name: "shard sample too small", Args: merge(in("a.csv"), in("b-small.csv")), Code: 1, Msg: "b-small.csv kept m = 2 of its n = 100 rows"},
		{Name: "one shard twice", Args: merge(in("a.csv"), in("a.csv")), Code: 1, Msg: "have the same priority"},
		{Name: "not a sample", Args: merge(in("s0.csv")), Code: 1, Msg: "s0.csv is not a sample"},
		{Name: "m above the union", Args: []string{"--merge", "--secret", sec, "-m", "201", "-o", out, in("a.csv"), in("b.csv")}, Code: 1, Msg: "n = 200 rows together"},
		{Name: "no secret", Args: []string{"--merge", "-m", "20", "-o", out, in("a.csv")}, Code: cli.ExitUsage, Msg: "--merge needs --secret"},
		{Name: "inputs with other columns", Args: []string{"--secret", sec, "-m", "5", "-o", out, in("s0.csv"), in("a.csv")}, Code: 1, Msg: "a.csv has columns age, edu, _priority but"},
	})
}
