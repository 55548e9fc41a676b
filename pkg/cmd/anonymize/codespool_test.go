package anonymize

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// runSpooled runs anonymize with o.spoolAbove = spoolAbove and returns
// standard output and the files named in outs, read after the run.
func runSpooled(t *testing.T, spoolAbove int, outs []string, args ...string) []string {
	t.Helper()
	return runSpooledIn(t, spoolAbove, nil, outs, args...)
}

// runSpooledIn is runSpooled with stdin as standard input.
func runSpooledIn(t *testing.T, spoolAbove int, stdin []byte, outs []string, args ...string) []string {
	t.Helper()
	var out, errb bytes.Buffer
	s := &cli.Streams{In: bytes.NewReader(stdin), Out: &out, Err: &errb}
	cmd := NewCmd(s, func(o *Options) error { o.spoolAbove = spoolAbove; o.batchSize = 64; return run(o) })
	if code := cli.Run(cmd, args, s); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errb.String())
	}
	got := []string{out.String()}
	for _, f := range outs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
		os.Remove(f)
	}
	return got
}

// TestSpooledCodesGiveTheSameRelease: pass 2 reading pass 1's value
// indexes back from the spool (codeSpool) publishes, seeded, byte for byte
// what it publishes looking every label up again: A′ over two sensitive
// columns (both groupings), Anatomy with its groups table, with rows that
// --missing drop removes (in either column) and from a Parquet input.
func TestSpooledCodesGiveTheSameRelease(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("id,s,t,x\n")
	for i := range 900 {
		s, u := fmt.Sprintf("s%d", (i*7)%11), fmt.Sprintf("t%d", (i*5)%9)
		switch {
		case i%97 == 3:
			s = "?"
		case i%89 == 5:
			u = ""
		}
		fmt.Fprintf(&b, "%d,%s,%s,x%d\n", i, s, u, i%4)
	}
	in := filepath.Join(dir, "in.csv")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cats := func(p string, n int) string {
		var c []string
		for v := range n {
			c = append(c, fmt.Sprintf("%q", fmt.Sprintf("%s%d", p, v)))
		}
		return strings.Join(c, ", ")
	}
	cb := filepath.Join(dir, "cb.json")
	if err := os.WriteFile(cb, []byte(`{"columns": [{"name": "s", "categories": [`+cats("s", 11)+`], "missing": "?"}, {"name": "t", "categories": [`+cats("t", 9)+`], "missing": "?"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	pq := filepath.Join(dir, "in.parquet")
	runSpooled(t, math.MaxInt, nil, "--mechanism", "global", "--sensitive", "s", "--p", "0.5", "--codebook", cb, "--seed", "1", "--insecure-seed", in, "-o", pq)
	rows, groups := filepath.Join(dir, "rows.csv"), filepath.Join(dir, "groups.csv")
	seeded := []string{"--codebook", cb, "--seed", "9", "--insecure-seed", "--missing", "drop", "--l", "3"}
	for _, tc := range []struct {
		name string
		outs []string
		args []string
	}{
		{"A′, two columns, anatomy grouping", nil, []string{"--sensitive", "s,t", "--grouping", "anatomy", in}},
		{"A′, two columns, random grouping", nil, []string{"--sensitive", "s,t", "--grouping", "random", in}},
		{"A′, keep order", nil, []string{"--sensitive", "t", "--keep-order", in}},
		{"A′, Parquet in", nil, []string{"--sensitive", "t", pq}},
		{"Anatomy", []string{rows, groups}, []string{"--mechanism", "anatomy", "--sensitive", "s", in, "-o", rows, "--groups", groups}},
	} {
		args := append(slices.Clone(seeded), tc.args...)
		want := runSpooled(t, math.MaxInt, tc.outs, args...)
		got := runSpooled(t, -1, tc.outs, args...)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: output %d differs with the codes spooled:\n%.300s\nwant\n%.300s", tc.name, i, got[i], want[i])
			}
		}
		if len(want[len(want)-1]) < 100 {
			t.Errorf("%s: output %.100q", tc.name, want[len(want)-1])
		}
	}
	// From standard input: the input spooled to a file for the two
	// passes, and the codes to another.
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	args := append(slices.Clone(seeded), "--sensitive", "s,t")
	want := runSpooled(t, math.MaxInt, nil, append(args, in)...)
	if got := runSpooledIn(t, -1, data, nil, args...); got[0] != want[0] {
		t.Errorf("standard input with the codes spooled: output differs from the file's")
	}
}

// TestCodeSpoolReadsBackWhatPass1Wrote: a codeSpool gives back, batch by
// batch, each kept row's value indexes and the rows --missing drop
// removed, whatever the batches' sizes; and it refuses a second pass that
// reads more rows than the first wrote, or fewer.
func TestCodeSpoolReadsBackWhatPass1Wrote(t *testing.T) {
	s, err := newCodeSpool(2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	// Rows 0..9; rows 3 and 7 dropped; column k's index of row i is 10k+i.
	write := func(first, n int) {
		var kept []int
		idx := [][]uint32{nil, nil}
		for i := range n {
			if r := first + i; r != 3 && r != 7 {
				kept = append(kept, i)
				idx[0], idx[1] = append(idx[0], uint32(r)), append(idx[1], uint32(10+r))
			}
		}
		if err := s.write(n, kept, idx); err != nil {
			t.Fatal(err)
		}
	}
	write(0, 4)
	write(4, 6)
	if err := s.rewind(); err != nil {
		t.Fatal(err)
	}
	idx := [][]uint32{nil, nil}
	var got []string
	var missing int64
	for range 2 { // batches of 5 rows, where pass 1 wrote 4 and 6
		kept, m, err := s.readRows(5, nil, idx)
		if err != nil {
			t.Fatal(err)
		}
		missing += m
		for j, i := range kept {
			got = append(got, fmt.Sprintf("%d:%d/%d", i, idx[0][j], idx[1][j]))
		}
	}
	if want := "0:0/10 1:1/11 2:2/12 4:4/14 0:5/15 1:6/16 3:8/18 4:9/19"; strings.Join(got, " ") != want || missing != 2 {
		t.Errorf("read back %v, %d dropped; want %s, 2", got, missing, want)
	}
	if err := s.finish(); err != nil {
		t.Errorf("every row read: %v", err)
	}
	if _, _, err := s.readRows(1, nil, idx); err != errInputChanged {
		t.Errorf("a row past the first pass's: %v, want %v", err, errInputChanged)
	}
	short, err := newCodeSpool(1)
	if err != nil {
		t.Fatal(err)
	}
	defer short.close()
	if err := short.write(3, []int{0, 1, 2}, [][]uint32{{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	if err := short.rewind(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := short.readRows(2, nil, [][]uint32{nil}); err != nil {
		t.Fatal(err)
	}
	if err := short.finish(); err == nil || !strings.Contains(err.Error(), "read 2 rows, the first 3") {
		t.Errorf("a second pass of fewer rows: %v", err)
	}
}

// TestInputChangedBetweenThePassesIsRefused: a file another job replaces
// or rewrites between anonymize's passes, with as many rows (so that the
// row count does not tell), is refused naming it, with no output — with
// the codes spooled, pass 2 would have published its rows with pass 1's
// sensitive values; it is refused without the spool too.
func TestInputChangedBetweenThePassesIsRefused(t *testing.T) {
	dir := t.TempDir()
	table := func(shift int) []byte {
		var b strings.Builder
		b.WriteString("id,s\n")
		for i := range 300 {
			fmt.Fprintf(&b, "%d,s%d\n", i, (i+shift)%7)
		}
		return []byte(b.String())
	}
	in, cb, out := filepath.Join(dir, "in.csv"), filepath.Join(dir, "cb.json"), filepath.Join(dir, "out.csv")
	if err := os.WriteFile(cb, []byte(`{"columns": [{"name": "s", "categories": ["s0", "s1", "s2", "s3", "s4", "s5", "s6"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	replace := func() {
		tmp := in + ".new"
		if err := os.WriteFile(tmp, table(3), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, in); err != nil {
			t.Fatal(err)
		}
	}
	rewrite := func() {
		if err := os.WriteFile(in, table(3), 0o644); err != nil {
			t.Fatal(err)
		}
		// A later time, whatever the clock's granularity.
		later := time.Now().Add(time.Hour)
		if err := os.Chtimes(in, later, later); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name       string
		spoolAbove int
		change     func()
	}{
		{"replaced, codes spooled", -1, replace},
		{"rewritten in place, codes spooled", -1, rewrite},
		{"replaced, no spool", math.MaxInt, replace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(in, table(0), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Remove(out)
			opens := 0
			var out1, errb bytes.Buffer
			s := &cli.Streams{Out: &out1, Err: &errb}
			cmd := NewCmd(s, func(o *Options) error {
				o.spoolAbove = tc.spoolAbove
				o.beforeOpen = func() {
					// The third open is pass 2's (the first checks the
					// input, the second is pass 1).
					if opens++; opens == 3 {
						tc.change()
					}
				}
				return run(o)
			})
			code := cli.Run(cmd, []string{"--sensitive", "s", "--l", "3", "--codebook", cb, "--seed", "1", "--insecure-seed", in, "-o", out}, s)
			if code == 0 || !strings.Contains(errb.String(), "in.csv changed while anonymize read it") {
				t.Errorf("exit %d, %q; want the input named as changed", code, errb.String())
			}
			if opens < 3 {
				t.Errorf("%d opens of the input, want a second pass", opens)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("an output was written: %v", err)
			}
		})
	}
	// Unchanged, the same run succeeds.
	if err := os.WriteFile(in, table(0), 0o644); err != nil {
		t.Fatal(err)
	}
	runSpooled(t, -1, nil, "--sensitive", "s", "--l", "3", "--codebook", cb, "--seed", "1", "--insecure-seed", in, "-o", out)
}

// TestFailedAnatomyKeepsThePreviousPair: an Anatomy run that fails once
// both its tables are written (here: a key file appears where its row
// table goes, which is never replaced) publishes neither, so the previous
// run's groups table is still there, byte for byte — it had been
// published first and removed again on the failure, the previous one gone
// with it.
func TestFailedAnatomyKeepsThePreviousPair(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("id,s\n")
	for i := range 300 {
		fmt.Fprintf(&b, "%d,s%d\n", i, i%7)
	}
	in, cb := filepath.Join(dir, "in.csv"), filepath.Join(dir, "cb.json")
	rows, groups := filepath.Join(dir, "rows.csv"), filepath.Join(dir, "groups.csv")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cb, []byte(`{"columns": [{"name": "s", "categories": ["s0", "s1", "s2", "s3", "s4", "s5", "s6"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--mechanism", "anatomy", "--sensitive", "s", "--l", "3", "--codebook", cb, "--seed", "1", "--insecure-seed", in, "-o", rows, "--groups", groups}
	runSpooled(t, math.MaxInt, nil, append([]string{"--seed", "2"}, args...)...)
	before, err := os.ReadFile(groups)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(rows)
	os.Remove(rows + ".meta.json")
	var out, errb bytes.Buffer
	s := &cli.Streams{Out: &out, Err: &errb}
	opens := 0
	cmd := NewCmd(s, func(o *Options) error {
		o.beforeOpen = func() {
			if opens++; opens == 3 { // pass 2's
				writeKeyFile(t, rows)
			}
		}
		return run(o)
	})
	if code := cli.Run(cmd, args, s); code == 0 || !strings.Contains(errb.String(), "rows.csv") {
		t.Fatalf("exit %d, %q; want the key file kept", code, errb.String())
	}
	if after, err := os.ReadFile(groups); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the previous groups table: %v, changed %v", err, !bytes.Equal(after, before))
	}
	if m := readMeta(t, rows); m["stage"] != release.StageKey {
		t.Errorf("the key file at the row table's path was replaced: %v", m)
	}
}

// writeKeyFile writes a one-row key file (stage "key") at path.
func writeKeyFile(t *testing.T, path string) {
	t.Helper()
	schema := table.StringSchema([]string{"pad"})
	w, err := table.Create(path, schema, table.Meta{"stage": release.StageKey}, table.WriteOptions{Key: true, NoClobber: true, Perm: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	bb := table.NewBatchBuilder(schema)
	defer bb.Release()
	bb.AppendStrings([]string{"1"})
	rec := bb.NewBatch()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}
