package anonymize

import (
	"math"
	"path/filepath"
	"runtime/debug"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/table"
)

// TestDivertedMemoryLimit: A′ runs under divertedMemoryLimit, below the
// tools' cli.MemoryLimit, and --mechanism anatomy under anatomyMemoryLimit,
// unless GOMEMLIMIT is set.
func TestDivertedMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	_, in, cb, _ := testTable(t, []int{30, 26, 25, 24})
	args := []string{"--sensitive", "s", "--l", "3", "--codebook", cb, "--seed", "1", "--insecure-seed", in, "-o", filepath.Join(t.TempDir(), "out.csv")}
	t.Setenv("GOMEMLIMIT", "")
	runBatched(t, 0, nil, args...)
	// cli's limiter may have raised the limit above its base for a large
	// live heap (the test binary's); the base is A′'s.
	if got, base := debug.SetMemoryLimit(-1), cli.MemoryLimitBase(); base != divertedMemoryLimit || got < base {
		t.Errorf("memory limit after A′: %d over a base of %d, want the base %d", got, base, divertedMemoryLimit)
	}
	// --mechanism anatomy runs under its own.
	debug.SetMemoryLimit(math.MaxInt64)
	anatomyArgs := []string{"--mechanism", "anatomy", "--sensitive", "s", "--l", "3", "--codebook", cb, "--seed", "1", "--insecure-seed", in,
		"-o", filepath.Join(t.TempDir(), "anat.csv"), "--groups", filepath.Join(t.TempDir(), "groups.csv")}
	runBatched(t, 0, nil, anatomyArgs...)
	if got, base := debug.SetMemoryLimit(-1), cli.MemoryLimitBase(); base != anatomyMemoryLimit || got < base {
		t.Errorf("memory limit after --mechanism anatomy: %d over a base of %d, want the base %d", got, base, anatomyMemoryLimit)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "1GiB")
	runBatched(t, 0, nil, args...)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memory limit after A′ with GOMEMLIMIT set: %d, want it left alone", got)
	}
}

// TestDivertedSensitiveAsCodes: A′ publishes its sensitive column as codes
// over the codebook's labels, so a Parquet output's dictionary page is the
// codebook's labels, a category no row holds (v3) included, and the file
// reads back as the CSV output's strings.
func TestDivertedSensitiveAsCodes(t *testing.T) {
	dir, in, cb, _ := testTable(t, []int{30, 26, 25, 0, 24})
	args := []string{"--sensitive", "s", "--l", "3", "--codebook", cb, "--seed", "1", "--insecure-seed", in}
	pq, csv := filepath.Join(dir, "out.parquet"), filepath.Join(dir, "out.csv")
	runBatched(t, 0, nil, append(args, "-o", pq)...)
	runBatched(t, 0, nil, append(args, "-o", csv)...)
	r, err := table.Open(pq, table.ReadOptions{DictColumns: []string{"s"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	d, ok := rec.Column(1).(*array.Dictionary)
	if !ok {
		t.Fatalf("column s read as %T, want a dictionary", rec.Column(1))
	}
	var dict []string
	for i := range d.Dictionary().Len() {
		dict = append(dict, d.Dictionary().(*array.String).Value(i))
	}
	if want := []string{"v0", "v1", "v2", "v3", "v4"}; !slices.Equal(dict, want) {
		t.Errorf("dictionary page %v, want the codebook's labels %v", dict, want)
	}
	plain := readTable(t, pq)
	if want := readCSV(t, csv); !slices.EqualFunc(plain, want, slices.Equal) {
		t.Errorf("the Parquet output reads as\n%v\nthe CSV output is\n%v", plain, want)
	}
}

// readTable reads a table's header and rows as strings.
func readTable(t *testing.T, path string) [][]string {
	t.Helper()
	r, err := table.Open(path, table.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rows [][]string
	var head []string
	for _, f := range r.Schema().Fields() {
		head = append(head, f.Name)
	}
	rows = append(rows, head)
	err = table.EachBatch(r, func(rec arrow.RecordBatch, _ int64) error {
		for i := range int(rec.NumRows()) {
			var row []string
			for j := range int(rec.NumCols()) {
				row = append(row, table.ValuesOf(rec.Column(j)).String(i))
			}
			rows = append(rows, row)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
