package sample

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/pkg/rng"
)

// withBudget runs f with Budget b and the samplers' files in a fresh
// folder, which it returns.
func withBudget(t *testing.T, b int64) string {
	t.Helper()
	oldB, oldD := Budget, Dir
	t.Cleanup(func() { Budget, Dir = oldB, oldD })
	Budget, Dir = b, t.TempDir()
	return Dir
}

// spillRows is n rows by position under one secret: their priorities and
// cells of 0 to 40 bytes (empty and multi-byte ones among them).
func spillRows(n int) ([]Priority, [][]string) {
	r := rng.NewSeeded(21)
	prf, _ := NewPRF(secretFrom(r))
	pris := make([]Priority, n)
	rows := make([][]string, n)
	for i := range n {
		pris[i] = prf.Position(uint64(i))
		rows[i] = []string{strconv.Itoa(i), strings.Repeat("é", r.IntN(20)), strings.Repeat("x", r.IntN(3))}
	}
	return pris, rows
}

// bottomOf is the independent reference: the rows of the m smallest
// priorities, in increasing order, by sorting them all.
func bottomOf(pris []Priority, rows [][]string, m int) [][]string {
	idx := make([]int, len(pris))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmpPriority(pris[a], pris[b]) })
	out := make([][]string, m)
	for k := range m {
		out[k] = rows[idx[k]]
	}
	return out
}

// TestSpilledSampleIsTheBottomM: whatever the memory budget — the default,
// under which these rows stay in memory, and 1 KiB, under which a handful
// of rows fill it and the rows go through hundreds of run files merged
// over three levels — BottomM and Fraction give exactly the m rows of
// smallest priority in priority order, as sorting all rows does; the rows
// held in memory never pass the budget by more than one row; and Close
// leaves the temporary folder empty.
func TestSpilledSampleIsTheBottomM(t *testing.T) {
	const n = 20000
	pris, rows := spillRows(n)
	for _, budget := range []int64{Budget, 1 << 10} {
		for _, m := range []int{1, 700, 6000, n} {
			dir := withBudget(t, budget)
			b, _ := NewBottomM(m)
			f, _ := NewFraction(float64(m) / n)
			var most int64
			for i := range n {
				row := func() []string { return slices.Clone(rows[i]) }
				if err := b.Offer(pris[i], row); err != nil {
					t.Fatal(err)
				}
				if err := f.Offer(pris[i], row); err != nil {
					t.Fatal(err)
				}
				most = max(most, itemBytes(Item{Row: rows[i]}))
				if b.kept.bytes > Budget+most || f.kept.bytes > Budget+most {
					t.Fatalf("budget %d: %d and %d bytes of rows in memory", Budget, b.kept.bytes, f.kept.bytes)
				}
			}
			want := bottomOf(pris, rows, m)
			for name, sample := range map[string]func(func(Item) error) error{
				"BottomM":  b.Sample,
				"Fraction": func(emit func(Item) error) error { return f.Sample(int64(m), emit) },
			} {
				got, err := collect(sample)
				if err != nil {
					t.Fatalf("budget %d m=%d %s: %v", budget, m, name, err)
				}
				if len(got) != m {
					t.Fatalf("budget %d m=%d %s: %d rows", budget, m, name, len(got))
				}
				for k := range got {
					if !slices.Equal(got[k].Row, want[k]) {
						t.Fatalf("budget %d m=%d %s: row %d is %q, want %q", budget, m, name, k, got[k].Row, want[k])
					}
				}
			}
			if budget < 1<<20 && m > 1 && (b.kept.made < 100 || len(b.kept.runs) > 3*(mergeWidth-1)) {
				t.Errorf("budget %d m=%d: %d run files made, %d left: the test does not exercise the runs' merging", budget, m, b.kept.made, len(b.kept.runs))
			}
			b.Close()
			f.Close()
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("budget %d m=%d: %d entries left in the temporary folder", budget, m, len(ents))
			}
		}
	}
}

// TestRunFilesAreUnlinked: while a sampler holds rows in run files, its
// private folder lists none of them (each is unlinked once open), so a
// killed process leaves no rows on disk.
func TestRunFilesAreUnlinked(t *testing.T) {
	dir := withBudget(t, 1<<10)
	pris, rows := spillRows(2000)
	b, _ := NewBottomM(2000)
	defer b.Close()
	for i := range pris {
		if err := b.Offer(pris[i], func() []string { return rows[i] }); err != nil {
			t.Fatal(err)
		}
	}
	if len(b.kept.runs) == 0 {
		t.Fatal("no run files: the test does not exercise them")
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		sub, _ := os.ReadDir(dir + "/" + e.Name())
		if len(sub) != 0 {
			t.Errorf("%s holds %d files", e.Name(), len(sub))
		}
		if fi, _ := e.Info(); fi.Mode().Perm() != 0o700 {
			t.Errorf("%s has mode %v, want 0700", e.Name(), fi.Mode().Perm())
		}
	}
}
