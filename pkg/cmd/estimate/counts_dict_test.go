package estimate

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/table"
)

// TestCountQueriesOnParquetReadDictionaries: a Parquet release is read
// with the queried text columns as dictionaries (each label looked up once
// per dictionary page); the answers are those of the same release in CSV,
// read as strings, and a queried value no row holds is still an error.
func TestCountQueriesOnParquetReadDictionaries(t *testing.T) {
	syn := newCountSynth(t, 3000)
	queries := []string{"a=a1,s=s2", "a=a3,b=b0,s=s5", "b=b2,u=u1", "s=s0,u=u3", "a=a0,b=b1,s=s4,u=u2"}
	var answers [][]float64
	for _, ext := range []string{"csv", "parquet"} {
		pub := filepath.Join(syn.dir, "pub."+ext)
		countRun(t, true, "--sensitive", "s,u", "--l", "3", "--codebook", syn.cb, "--seed", "4", "--insecure-seed", syn.csv, "-o", pub)
		est, _ := countAsk(t, pub, queries)
		answers = append(answers, est)
		var out, errb bytes.Buffer
		s := &cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}
		if code := cli.Run(NewCmd(s, nil), []string{pub, "--query", "a=a9,s=s1"}, s); code == 0 || !strings.Contains(errb.String(), "a9") {
			t.Errorf("%s: a value no row holds: exit %d, %q", ext, code, errb.String())
		}
	}
	if !slices.Equal(answers[0], answers[1]) {
		t.Errorf("answers on Parquet %v, on CSV %v", answers[1], answers[0])
	}
}

// TestCountQueriesReadOnlyTheQueriedColumns: a release file (CSV or
// Parquet) is opened again reading only the columns the count queries
// need (table.ReadOptions.Columns); names it lacks are left to the scan's
// own message, and standard input is kept as it is.
func TestCountQueriesReadOnlyTheQueriedColumns(t *testing.T) {
	syn := newCountSynth(t, 200)
	o := &Options{Streams: &cli.Streams{In: strings.NewReader("")}}
	for _, ext := range []string{"csv", "parquet"} {
		pub := filepath.Join(syn.dir, "proj."+ext)
		countRun(t, true, "--sensitive", "s,u", "--l", "3", "--codebook", syn.cb, "--seed", "4", "--insecure-seed", syn.csv, "-o", pub)
		in, err := table.Open(pub, table.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := reopenQueriedAsDictionaries(o, in, []string{"s", "a"}, []string{"s", "a", "nope", "s"}, "")
		if err != nil || d == nil {
			t.Fatalf("%s: %v %v", ext, d, err)
		}
		var got []string
		for _, f := range d.Schema().Fields() {
			got = append(got, f.Name)
		}
		if want := []string{"a", "s"}; !slices.Equal(got, want) {
			t.Errorf("%s: columns %v, want %v (file order)", ext, got, want)
		}
		d.Close()
		in.Close()
	}
}
