package codebook

import (
	"iter"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/pramkit/pramkit/pkg/rng"
)

func rowsOf(rows ...[]string) iter.Seq[[]string] {
	return slices.Values(rows)
}

func TestInferSortsCategoriesNaturally(t *testing.T) {
	cb, err := Infer([]string{"edu", "mixed", "num"}, rowsOf(
		[]string{"10th", "a10", "10"},
		[]string{"9th", "a2", "-2"},
		[]string{"1st-4th", "b", "1.5"},
		[]string{"12th", "a2", "2"},
		[]string{"11th", "A1", "1e1"},
		[]string{"9th", "7", "-10"},
	), InferOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"edu":   {"1st-4th", "9th", "10th", "11th", "12th"},
		"mixed": {"7", "A1", "a2", "a10", "b"},
		"num":   {"-10", "-2", "1.5", "2", "10", "1e1"}, // numeric order; 10 = 1e1 tied by bytes
	}
	for name, w := range want {
		c, _ := cb.Column(name)
		if got := c.Labels(); !slices.Equal(got, w) {
			t.Errorf("%s: categories %q, want %q", name, got, w)
		}
		if _, has := c.MissingIndex(); has {
			t.Errorf("%s: missing category without missing values", name)
		}
	}
}

func TestInferOrderDoesNotDependOnRowOrder(t *testing.T) {
	rows := [][]string{{"b"}, {"a10"}, {"a9"}, {"3"}, {"?"}, {"a09"}, {"20"}}
	first, err := Infer([]string{"x"}, slices.Values(rows), InferOptions{Missing: "?"})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(rows)
	second, err := Infer([]string{"x"}, slices.Values(rows), InferOptions{Missing: "?"})
	if err != nil {
		t.Fatal(err)
	}
	if first.Hash() != second.Hash() {
		t.Errorf("row order changed the codebook: %q vs %q", first.Columns[0].Labels(), second.Columns[0].Labels())
	}
}

func TestCompareValuesIsATotalOrder(t *testing.T) {
	// Random short strings over an alphabet rich in digits, signs and dots,
	// where natural and numeric orders interact.
	r := rng.NewSeeded(7)
	const alphabet = "0019-.ae+x"
	vals := make([]string, 400)
	for i := range vals {
		b := make([]byte, r.IntN(5))
		for j := range b {
			b[j] = alphabet[r.IntN(len(alphabet))]
		}
		vals[i] = string(b)
	}
	sign := func(c int) int { return min(max(c, -1), 1) }
	for _, a := range vals {
		for _, b := range vals {
			ab, ba := sign(CompareValues(a, b)), sign(CompareValues(b, a))
			if ab != -ba {
				t.Fatalf("not antisymmetric: %q vs %q: %d, %d", a, b, ab, ba)
			}
			if (ab == 0) != (a == b) {
				t.Fatalf("CompareValues(%q, %q) = %d", a, b, ab)
			}
		}
	}
	slices.SortFunc(vals, CompareValues)
	// With antisymmetry, transitivity holds iff every pair of a sorted list
	// is in order, not only neighbours.
	for i := range vals {
		for j := i + 1; j < len(vals); j++ {
			if CompareValues(vals[i], vals[j]) > 0 {
				t.Fatalf("not transitive: sorted list has %q before %q", vals[i], vals[j])
			}
		}
	}
}

func TestInferGivesMissingACategoryOnlyWhereItOccurs(t *testing.T) {
	cb, err := Infer([]string{"workclass", "sex"}, rowsOf(
		[]string{"Private", "Male"},
		[]string{"?", "Female"},
		[]string{"", "Male"},
		[]string{"Local-gov", "Female"},
	), InferOptions{Missing: "?"})
	if err != nil {
		t.Fatal(err)
	}
	wc, _ := cb.Column("workclass")
	if got := wc.Labels(); !slices.Equal(got, []string{"Local-gov", "Private", "?"}) {
		t.Errorf("workclass labels %q", got)
	}
	if i, ok := wc.MissingIndex(); !ok || i != 2 {
		t.Errorf("workclass MissingIndex() = %d, %v", i, ok)
	}
	sex, _ := cb.Column("sex")
	if _, ok := sex.MissingIndex(); ok {
		t.Error("sex got a missing category without missing values")
	}
}

func TestInferRejectsWhatACodebookCannotHold(t *testing.T) {
	wide := make([][]string, 0, 6)
	for _, v := range []string{"1", "2", "3", "4", "5", "6"} {
		wide = append(wide, []string{v})
	}
	tests := []struct {
		name  string
		names []string
		rows  [][]string
		opts  InferOptions
		want  string
	}{
		{"empty without a token", []string{"a"}, [][]string{{"x"}, {""}}, InferOptions{}, `row 2: empty value in column "a"; give a missing token`},
		{"too many values", []string{"fnlwgt"}, wide, InferOptions{MaxK: 5}, `row 6: column "fnlwgt" has more than 5 distinct values; it looks continuous or identifying`},
		{"short row", []string{"a", "b"}, [][]string{{"x"}}, InferOptions{}, "row 1: 1 values for 2 columns"},
		{"padded value", []string{"sex"}, [][]string{{" Male"}}, InferOptions{}, `column "sex": value " Male" has leading or trailing spaces`},
		{"only missing", []string{"a"}, [][]string{{"?"}}, InferOptions{Missing: "?"}, `column "a" has no values besides missing ones`},
		{"duplicate names", []string{"a", "a"}, nil, InferOptions{}, `column "a" appears twice`},
		{"bad MaxK", []string{"a"}, nil, InferOptions{MaxK: -1}, "MaxK must be in"},
		{"padded token", []string{"a"}, nil, InferOptions{Missing: " ?"}, "leading or trailing spaces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Infer(tt.names, slices.Values(tt.rows), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestInferrerCopiesValues(t *testing.T) {
	in, err := NewInferrer([]string{"a"}, InferOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A reader that reuses its buffer hands out strings that alias it.
	buf := []byte("xy")
	if err := in.Add([]string{unsafe.String(&buf[0], len(buf))}); err != nil {
		t.Fatal(err)
	}
	buf[0] = 'z'
	cb, err := in.Codebook()
	if err != nil {
		t.Fatal(err)
	}
	if got := cb.Columns[0].Labels(); !slices.Equal(got, []string{"xy"}) {
		t.Errorf("labels %q", got)
	}
}

func TestInferrerAddDoesNotAllocateForSeenValues(t *testing.T) {
	in, err := NewInferrer([]string{"a", "b"}, InferOptions{Missing: "?"})
	if err != nil {
		t.Fatal(err)
	}
	rows := [][]string{{"x", "1"}, {"y", "?"}, {"", "2"}}
	for _, r := range rows {
		if err := in.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		for _, r := range rows {
			_ = in.Add(r)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per run for seen values, want 0", allocs)
	}
}
