package shuffle

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/table"
)

// TestDictionaryColumnsShuffleAsCodes shuffles a table with a categorical
// column held as codes (table.Labels) beside an int32 column, in memory
// and through spill files: every row comes out once, with its label, as a
// dictionary column over the same labels; the emitted rows are those of
// the same table written as strings, in the same order (a seeded run
// depends on the rows, not on how the column is held).
func TestDictionaryColumnsShuffleAsCodes(t *testing.T) {
	names := []string{"Male", "Female", "a,b", ""}
	labels := table.NewLabels(names)
	dschema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, table.DictField("sex")}, nil)
	sschema := table.StringSchema([]string{"id", "sex"})
	const n = 5000
	shuffled := func(dict bool, budget int64) []string {
		sch := sschema
		if dict {
			sch = dschema
		}
		s, err := New(sch, rng.NewSeeded(9), Options{Budget: budget, Buckets: 4, BatchRows: 333})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for off := 0; off < n; off += 700 {
			m := min(700, n-off)
			var rec arrow.RecordBatch
			if dict {
				ids, codes := make([]uint32, m), make([]uint32, m)
				for i := range m {
					ids[i], codes[i] = uint32(off+i), uint32((off+i)*7%len(names))
				}
				rec = table.CodesBatch(dschema, [][]uint32{ids, codes}, []*table.Labels{nil, labels}, m)
			} else {
				bb := table.NewBatchBuilder(sschema)
				for i := range m {
					bb.String(0, strconv.Itoa(off+i))
					bb.String(1, names[(off+i)*7%len(names)])
					bb.EndRow()
				}
				rec = bb.NewBatch()
				bb.Release()
			}
			if err := s.Write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
		if spilled := s.Spilled(); spilled != (budget == 1) {
			t.Fatalf("budget %d: spilled %v", budget, spilled)
		}
		var rows []string
		err = s.Emit(func(rec arrow.RecordBatch) error {
			if dict {
				d, ok := rec.Column(1).(*array.Dictionary)
				if !ok || !arrow.TypeEqual(d.DataType(), table.DictType) {
					t.Fatalf("emitted column has type %s, want %s", rec.Column(1).DataType(), table.DictType)
				}
			}
			for i := range int(rec.NumRows()) {
				var sex string
				if d, ok := rec.Column(1).(*array.Dictionary); ok {
					sex = d.Dictionary().(*array.String).Value(d.GetValueIndex(i))
				} else {
					sex = rec.Column(1).(*array.String).Value(i)
				}
				rows = append(rows, rec.Column(0).ValueStr(i)+"|"+sex)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	for _, budget := range []int64{0, 1} {
		got, want := shuffled(true, budget), shuffled(false, budget)
		if !slices.Equal(got, want) {
			t.Fatalf("budget %d: dictionary rows differ from string rows (first %v vs %v)", budget, got[:3], want[:3])
		}
		sorted := slices.Clone(got)
		slices.SortFunc(sorted, func(a, b string) int { return idOf(a) - idOf(b) })
		for i, r := range sorted {
			if want := strconv.Itoa(i) + "|" + names[i*7%len(names)]; r != want {
				t.Fatalf("budget %d: row %q, want %q", budget, r, want)
			}
		}
		if slices.Equal(got, sorted) {
			t.Fatalf("budget %d: rows came out in input order", budget)
		}
	}
}

// TestDictionaryColumnMustKeepItsDictionary: a batch whose dictionary
// differs from the first batch's, or whose code is past it, is refused.
func TestDictionaryColumnMustKeepItsDictionary(t *testing.T) {
	sch := arrow.NewSchema([]arrow.Field{table.DictField("c")}, nil)
	s, err := New(sch, rng.NewSeeded(1), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	write := func(l *table.Labels, codes ...uint32) error {
		rec := table.CodesBatch(sch, [][]uint32{codes}, []*table.Labels{l}, len(codes))
		defer rec.Release()
		return s.Write(rec)
	}
	if err := write(table.NewLabels([]string{"x", "y"}), 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := write(table.NewLabels([]string{"x", "y"}), 1); err != nil {
		t.Errorf("equal labels, another dictionary: %v", err)
	}
	if err := write(table.NewLabels([]string{"y", "x"}), 1); err == nil || !strings.Contains(err.Error(), "changes its dictionary") {
		t.Errorf("other labels: got %v", err)
	}
	if err := write(table.NewLabels([]string{"x"}), 0); err == nil || !strings.Contains(err.Error(), "changes its dictionary") {
		t.Errorf("a shorter dictionary: got %v", err)
	}
	if err := write(table.NewLabels([]string{"x", "z", "y"}), 0); err == nil || !strings.Contains(err.Error(), "changes its dictionary") {
		t.Errorf("a label inserted before the end: got %v", err)
	}
	if err := write(table.NewLabels([]string{"x", "y"}), 2); err == nil || !strings.Contains(err.Error(), "past its dictionary") {
		t.Errorf("code past the labels: got %v", err)
	}
	other := arrow.NewSchema([]arrow.Field{{Name: "c", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}}}, nil)
	if _, err := New(other, rng.NewSeeded(1), Options{}); err == nil || !strings.Contains(err.Error(), "dictionary column must be") {
		t.Errorf("int8 indices: got %v", err)
	}
}

// TestDictionaryMayGrowAtItsEnd: a dictionary that later batches extend by
// labels appended at its end (codes keep their labels) is taken, and every
// row comes out over the last, longest one, with its own label, whether
// the rows stayed in memory or spilled.
func TestDictionaryMayGrowAtItsEnd(t *testing.T) {
	sch := arrow.NewSchema([]arrow.Field{table.DictField("c")}, nil)
	labels := []string{"a", "b", "c", "d", "e"}
	for _, budget := range []int64{1 << 20, 1 << 10} {
		s, err := New(sch, rng.NewSeeded(3), Options{Budget: budget, Buckets: 4, Dir: t.TempDir(), BatchRows: 50})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for n := 2; n <= len(labels); n++ {
			l := table.NewLabels(labels[:n])
			codes := make([]uint32, 200)
			for i := range codes {
				codes[i] = uint32(i % n)
				want = append(want, labels[i%n])
			}
			rec := table.CodesBatch(sch, [][]uint32{codes}, []*table.Labels{l}, len(codes))
			if err := s.Write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
		if s.Spilled() != (budget < 1<<20) {
			t.Errorf("budget %d: spilled = %v", budget, s.Spilled())
		}
		var got []string
		err = s.Emit(func(rec arrow.RecordBatch) error {
			d := rec.Column(0).(*array.Dictionary)
			if d.Dictionary().Len() != len(labels) {
				t.Errorf("budget %d: a batch came out over %d labels, want the last dictionary's %d", budget, d.Dictionary().Len(), len(labels))
			}
			v := table.ValuesOf(d)
			for i := range d.Len() {
				got = append(got, v.String(i))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("budget %d: the labels that came out are not those written", budget)
		}
	}
}
