package shuffle

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/table"
)

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "s", Type: arrow.BinaryTypes.String},
	{Name: "b", Type: arrow.PrimitiveTypes.Int32},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// batches returns n rows 0..n−1 of schema in batches of size rows; row i
// has id i and cells derived from i (empty and long strings, negative
// integers, a NaN-free float).
func batches(n, size int) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	bb := table.NewBatchBuilder(schema)
	defer bb.Release()
	for i := range n {
		bb.Int64(0, int64(i))
		bb.String(1, strings.Repeat(string(rune('a'+i%26)), i%7))
		bb.Int32(2, int32(i%3-1)*int32(i))
		bb.Float64(3, float64(i)/3-7)
		bb.EndRow()
		if bb.Rows() == size || i == n-1 {
			out = append(out, bb.NewBatch())
		}
	}
	return out
}

// run shuffles n rows and returns the emitted rows as strings, in order.
func run(t *testing.T, n int, seed uint64, opt Options) (rows []string, spilled bool, dir string) {
	return runWith(t, n, seed, opt, (*Shuffler).Write)
}

// runWith is run with the batches given to the Shuffler by write.
func runWith(t *testing.T, n int, seed uint64, opt Options, write func(*Shuffler, arrow.RecordBatch) error) (rows []string, spilled bool, dir string) {
	t.Helper()
	s, err := New(schema, rng.NewSeeded(seed), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, rec := range batches(n, 7) {
		if err := write(s, rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	spilled, dir = s.Spilled(), s.Dir()
	err = s.Emit(func(rec arrow.RecordBatch) error {
		rows = append(rows, rowStrings(rec)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows, spilled, dir
}

func rowStrings(rec arrow.RecordBatch) []string {
	var out []string
	for i := range int(rec.NumRows()) {
		var cells []string
		for j := range int(rec.NumCols()) {
			cells = append(cells, rec.Column(j).ValueStr(i))
		}
		out = append(out, strings.Join(cells, "|"))
	}
	return out
}

func idOf(row string) int {
	var id int
	fmt.Sscanf(row, "%d|", &id)
	return id
}

// TestAllPermutationsEquallyLikely shuffles 4 rows many times and checks
// that each of the 4! = 24 orders comes out with probability 1/24, in
// memory and through spill files with re-scattering (a budget of 1 byte
// and 2 buckets: every row spills, every non-empty bucket is scattered
// again until it holds one row).
func TestAllPermutationsEquallyLikely(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Options
		runs int
	}{
		{"in memory", Options{}, 24000},
		{"spilled", Options{Budget: 1, Buckets: 2, Dir: t.TempDir()}, 1200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counts := map[string]int64{}
			for k := range tc.runs {
				rows, spilled, _ := run(t, 4, uint64(k), tc.opt)
				if spilled != (tc.opt.Budget == 1) {
					t.Fatalf("spilled = %v with budget %d", spilled, tc.opt.Budget)
				}
				key := ""
				for _, r := range rows {
					key += fmt.Sprint(idOf(r))
				}
				counts[key]++
			}
			if len(counts) != 24 {
				t.Fatalf("%d distinct orders of 4 rows, want 24: %v", len(counts), counts)
			}
			var obs []int64
			probs := make([]float64, 0, 24)
			for _, c := range counts {
				obs = append(obs, c)
				probs = append(probs, 1.0/24)
			}
			// False alarm 1e-6: a uniform shuffle fails with probability 1e-6.
			stattest.AssertChiSquare(t, tc.name+": orders of 4 rows", obs, probs, 1e-6)
		})
	}
}

// TestPositionsUniform checks, for 20 rows through a spill with 4 buckets,
// that every row lands in every position with probability 1/20: one
// chi-square over the 20 positions per row, each at false alarm 1e-6/20
// (1e-6 in all, by the union bound).
func TestPositionsUniform(t *testing.T) {
	const n, runs = 20, 1000
	pos := make([][]int64, n)
	for i := range pos {
		pos[i] = make([]int64, n)
	}
	opt := Options{Budget: 200, Buckets: 4, Dir: t.TempDir()}
	for k := range runs {
		rows, spilled, _ := run(t, n, uint64(1000+k), opt)
		if !spilled {
			t.Fatal("20 rows did not spill with a budget of 200 bytes")
		}
		for p, r := range rows {
			pos[idOf(r)][p]++
		}
	}
	probs := make([]float64, n)
	for i := range probs {
		probs[i] = 1.0 / n
	}
	for i := range pos {
		stattest.AssertChiSquare(t, fmt.Sprintf("positions of row %d", i), pos[i], probs, 1e-6/n)
	}
}

// TestSpillKeepsEveryRowAndRemovesFiles shuffles 20,000 rows with a 16 KiB
// budget (8 buckets of about 50 KB, each scattered again): the spill files
// are private and unlinked, the rows come out as the same multiset, in
// batches of BatchRows, in another order, and the private directory is
// gone.
func TestSpillKeepsEveryRowAndRemovesFiles(t *testing.T) {
	base := t.TempDir()
	const n = 20000
	var want []string
	for _, rec := range batches(n, 1000) {
		want = append(want, rowStrings(rec)...)
		rec.Release()
	}
	s, err := New(schema, rng.NewSeeded(1), Options{Budget: 16 << 10, Buckets: 8, Dir: base, BatchRows: 999})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, rec := range batches(n, 1000) {
		if err := s.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if !s.Spilled() {
		t.Fatal("20,000 rows stayed in a 16 KiB budget")
	}
	st, err := os.Stat(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("spill directory mode %v, want 0700", st.Mode().Perm())
	}
	if left, _ := os.ReadDir(s.Dir()); len(left) != 0 && runtime.GOOS != "windows" {
		t.Errorf("spill files still have names: %v; they should be unlinked once open", left)
	}
	if len(s.buckets) != 8 {
		t.Errorf("%d spill files, want 8 buckets", len(s.buckets))
	}
	for _, sf := range s.buckets {
		info, err := sf.f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("spill file mode %v, want 0600", info.Mode().Perm())
		}
	}
	var got []string
	err = s.Emit(func(rec arrow.RecordBatch) error {
		if rec.NumRows() > 999 {
			t.Errorf("batch of %d rows, want at most 999", rec.NumRows())
		}
		got = append(got, rowStrings(rec)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.seq <= 8 {
		t.Errorf("%d spill files made: the buckets larger than the budget were not scattered again", s.seq)
	}
	if slices.Equal(got, want) {
		t.Error("the rows came out in input order")
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the shuffled rows are not the rows written (%d vs %d rows)", len(got), len(want))
	}
	if left, _ := os.ReadDir(base); len(left) != 0 {
		t.Errorf("spill files left behind after Emit: %v", left)
	}
}

// TestCloseRemovesFilesAfterFailure: an Emit that fails half-way, and a
// caller that gives up before Emit, leave no spill file.
func TestCloseRemovesFilesAfterFailure(t *testing.T) {
	for _, emit := range []bool{true, false} {
		base := t.TempDir()
		s, err := New(schema, rng.NewSeeded(2), Options{Budget: 1 << 10, Buckets: 4, Dir: base, BatchRows: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range batches(2000, 100) {
			if err := s.Write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
		if left, _ := os.ReadDir(base); len(left) != 1 {
			t.Fatalf("want one spill directory in %s, got %v", base, left)
		}
		if emit {
			calls := 0
			err := s.Emit(func(arrow.RecordBatch) error {
				if calls++; calls == 3 {
					return fmt.Errorf("disk full")
				}
				return nil
			})
			if err == nil || err.Error() != "disk full" {
				t.Fatalf("Emit returned %v, want fn's error", err)
			}
			if calls != 3 {
				t.Errorf("fn was called %d times, want 3: nothing after its error", calls)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if left, _ := os.ReadDir(base); len(left) != 0 {
			t.Errorf("emit=%v: spill files left behind after Close: %v", emit, left)
		}
	}
}

// TestSeededRunsRepeat: the same seed gives the same order (a --seed run is
// reproducible); another seed gives another.
func TestSeededRunsRepeat(t *testing.T) {
	opt := Options{Budget: 4 << 10, Buckets: 4, Dir: t.TempDir()}
	a, _, _ := run(t, 500, 7, opt)
	b, _, _ := run(t, 500, 7, opt)
	c, _, _ := run(t, 500, 8, opt)
	if !slices.Equal(a, b) {
		t.Error("seed 7 gave two different orders")
	}
	if slices.Equal(a, c) {
		t.Error("seeds 7 and 8 gave the same order of 500 rows")
	}
}

// TestEncodedRowsShuffleAsWritten: batches encoded apart (Encode, on
// other goroutines, into reused Encodeds) and then written
// (WriteEncoded) come out in exactly the order the same batches given to
// Write do, held in memory and spilled: the same rows and the same draws.
func TestEncodedRowsShuffleAsWritten(t *testing.T) {
	for _, budget := range []int64{1 << 20, 2 << 10} {
		opt := Options{Budget: budget, Buckets: 4, Dir: t.TempDir()}
		want, spilled, _ := run(t, 700, 9, opt)
		var e Encoded
		got, _, _ := runWith(t, 700, 9, opt, func(s *Shuffler, rec arrow.RecordBatch) error {
			done := make(chan error)
			go func() { done <- s.Encode(rec, &e) }()
			if err := <-done; err != nil {
				return err
			}
			return s.WriteEncoded(rec, &e)
		})
		if !slices.Equal(got, want) {
			t.Errorf("budget %d (spilled: %v): the encoded batches came out in another order than the written ones", budget, spilled)
		}
	}
}

// TestEncodeRefusesWhatWriteRefuses: Encode refuses null cells and codes
// past a dictionary, and WriteEncoded a batch other than the one encoded.
func TestEncodeRefusesWhatWriteRefuses(t *testing.T) {
	sch := table.StringSchema([]string{"a"})
	s, _ := New(sch, rng.NewSeeded(1), Options{})
	defer s.Close()
	b := array.NewStringBuilder(memory.DefaultAllocator)
	b.AppendNull()
	rec := array.NewRecordBatch(sch, []arrow.Array{b.NewArray()}, 1)
	var e Encoded
	if err := s.Encode(rec, &e); err == nil || !strings.Contains(err.Error(), `column "a" has null cells`) {
		t.Errorf("a null cell: got %v", err)
	}
	dsch := arrow.NewSchema([]arrow.Field{table.DictField("d")}, nil)
	ds, _ := New(dsch, rng.NewSeeded(1), Options{})
	defer ds.Close()
	labels := table.NewLabels([]string{"x", "y"})
	bad := table.CodesBatch(dsch, [][]uint32{{0, 2}}, []*table.Labels{labels}, 2)
	if err := ds.Encode(bad, &e); err == nil || !strings.Contains(err.Error(), "code 2 past its dictionary of 2 entries") {
		t.Errorf("a code past the dictionary: got %v", err)
	}
	one := table.CodesBatch(dsch, [][]uint32{{0, 1}}, []*table.Labels{labels}, 2)
	other := table.CodesBatch(dsch, [][]uint32{{1, 0}}, []*table.Labels{labels}, 2)
	if err := ds.Encode(one, &e); err != nil {
		t.Fatal(err)
	}
	if err := ds.WriteEncoded(other, &e); err == nil || !strings.Contains(err.Error(), "other than the one encoded") {
		t.Errorf("another batch than the one encoded: got %v", err)
	}
}

func TestRefusesWhatItCannotShuffle(t *testing.T) {
	bad := arrow.NewSchema([]arrow.Field{{Name: "t", Type: arrow.FixedWidthTypes.Boolean}}, nil)
	if _, err := New(bad, rng.NewSeeded(1), Options{}); err == nil || !strings.Contains(err.Error(), `column "t" has type bool`) {
		t.Errorf("a bool column: got %v", err)
	}
	for _, opt := range []Options{{Budget: -1}, {Buckets: 1}, {BatchRows: -1}} {
		if _, err := New(schema, rng.NewSeeded(1), opt); err == nil {
			t.Errorf("%+v: no error", opt)
		}
	}
	if _, err := New(schema, nil, Options{}); err == nil {
		t.Error("no random source: no error")
	}
	s, _ := New(table.StringSchema([]string{"a"}), rng.NewSeeded(1), Options{})
	defer s.Close()
	b := array.NewStringBuilder(memory.DefaultAllocator)
	b.AppendNull()
	col := b.NewArray()
	rec := array.NewRecordBatch(table.StringSchema([]string{"a"}), []arrow.Array{col}, 1)
	if err := s.Write(rec); err == nil || !strings.Contains(err.Error(), `column "a" has null cells`) {
		t.Errorf("a null cell: got %v", err)
	}
	if err := s.Write(batches(1, 1)[0]); err == nil || !strings.Contains(err.Error(), "schema") {
		t.Errorf("another schema: got %v", err)
	}
}

// TestNoTempFolder: rows beyond the budget with nowhere to spill them give
// an error that names the fix.
func TestNoTempFolder(t *testing.T) {
	s, err := New(schema, rng.NewSeeded(1), Options{Budget: 100, Dir: "/nonexistent/pramkit"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := batches(100, 100)[0]
	defer rec.Release()
	if err := s.Write(rec); err == nil || !strings.Contains(err.Error(), "set TMPDIR to a writable folder") {
		t.Errorf("got %v, want an error that says to set TMPDIR", err)
	}
}

// TestEmitDoesNotDependOnCores: Emit decodes on every core, but every
// draw is the planner's, in the serial order, so a seeded shuffle gives
// the same rows in the same order at GOMAXPROCS 1, 2 and 4 — held in
// memory, spilled, and scattered again — with small batches, so that the
// workers take many jobs out of order.
func TestEmitDoesNotDependOnCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, budget := range []int64{1 << 20, 16 << 10, 2 << 10} {
		var want []string
		for _, procs := range []int{1, 2, 4} {
			runtime.GOMAXPROCS(procs)
			got, spilled, _ := run(t, 5000, 21, Options{Budget: budget, Buckets: 4, Dir: t.TempDir(), BatchRows: 37})
			if spilled != (budget < 1<<20) {
				t.Fatalf("budget %d: spilled = %v", budget, spilled)
			}
			if want == nil {
				want = got
				continue
			}
			if !slices.Equal(got, want) {
				t.Fatalf("budget %d: GOMAXPROCS %d gives another order than 1", budget, procs)
			}
		}
		if len(want) != 5000 {
			t.Fatalf("budget %d: %d rows out of 5000", budget, len(want))
		}
	}
}

// TestSpillFilesMadeAhead covers the spill files made on a goroutine once
// the held rows pass half the budget (prepareSpill): a table that then
// ends in memory leaves no folder behind and is not Spilled; one that
// spills keeps every row; an unusable folder is an error only for a table
// that spills; and Close stops a preparation under way. (The files take
// no draw: a seeded order is the same whenever they are made, which
// TestSeededRunsRepeat and TestEmitDoesNotDependOnCores check.)
func TestSpillFilesMadeAhead(t *testing.T) {
	// About 14 bytes a row in 4 and 8 KiB chunks, and 8 bytes of
	// position: 400 rows pass half a 16 KiB budget and stay under it;
	// 800 spill.
	const n, budget = 800, 16 << 10
	base := t.TempDir()
	s, err := New(schema, rng.NewSeeded(5), Options{Budget: budget, Dir: base})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range batches(n/2, 7) {
		if err := s.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if s.prep == nil || s.Spilled() {
		t.Fatalf("held %d bytes of a %d-byte budget: spill files being made %v, spilled %v; want made ahead, not spilled", s.held, budget, s.prep != nil, s.Spilled())
	}
	var got int
	if err := s.Emit(func(rec arrow.RecordBatch) error { got += int(rec.NumRows()); return nil }); err != nil {
		t.Fatal(err)
	}
	if s.Spilled() || got != n/2 {
		t.Fatalf("spilled %v, %d rows out, want in memory and %d", s.Spilled(), got, n/2)
	}
	if left, _ := os.ReadDir(base); len(left) != 0 {
		t.Fatalf("a table that never spilled left %v in the temporary folder", left)
	}

	rows, spilled, _ := run(t, n, 9, Options{Budget: budget, Buckets: 4, Dir: t.TempDir()})
	if !spilled {
		t.Fatalf("%d rows did not spill past a %d-byte budget", n, budget)
	}
	ids := make([]int, len(rows))
	for k, r := range rows {
		ids[k] = idOf(r)
	}
	slices.Sort(ids)
	for k, id := range ids {
		if id != k {
			t.Fatalf("spilled to files made ahead: %d rows out, sorted ids %v…, want 0..%d", len(ids), ids[:min(len(ids), 10)], n-1)
		}
	}

	for _, rows := range []int{n / 2, n} {
		s, err := New(schema, rng.NewSeeded(1), Options{Budget: budget, Dir: "/nonexistent/pramkit"})
		if err != nil {
			t.Fatal(err)
		}
		var werr error
		for _, rec := range batches(rows, 7) {
			if werr == nil {
				werr = s.Write(rec)
			}
			rec.Release()
		}
		if spill := rows == n; spill != (werr != nil) {
			t.Errorf("%d rows, no temporary folder: Write gave %v", rows, werr)
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}

	// Close right after the preparation starts: it stops it and removes
	// what it made.
	base = t.TempDir()
	s3, err := New(schema, rng.NewSeeded(1), Options{Budget: 1 << 20, Buckets: 1000, Dir: base})
	if err != nil {
		t.Fatal(err)
	}
	s3.prepareSpill()
	if err := s3.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(base); len(left) != 0 {
		t.Fatalf("Close during the preparation left %v", left)
	}
}
