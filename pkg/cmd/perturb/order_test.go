package perturb

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pramkit/pramkit/internal/adulttest"
	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/internal/stattest"
)

// TestSortedInputDoesNotLeakThroughOrder randomizes UCI Adult sorted by
// occupation with the local mechanisms (issue 9, item 10). Their reports
// carry no id, so instead of linking each report to its person the test
// checks what any positional adversary needs: whether the reports depend
// on their position. The output is cut into 10 blocks of consecutive rows;
// for each report category c (a bit of bitflip's one-hot occupation, being
// 1; a round-two value of ddps) the counts of c in the blocks are tested
// against the block sizes by a chi-square with 9 degrees of freedom, at a
// false alarm rate of 10⁻⁶ over all categories (10⁻⁶/C each, union bound).
// In a shuffled output the reports are exchangeable, the counts
// multivariate hypergeometric, less spread than the multinomial the test
// assumes, so the rate is at most that. In input order (--keep-order) the
// block of a category's rows holds most of its reports, and the same test
// rejects every category but the rarest: there a row's neighbours give
// its value away (the anonymize test measures that adversary).
func TestSortedInputDoesNotLeakThroughOrder(t *testing.T) {
	rows := adulttest.Load(t, "data")
	in := adulttest.WriteSortedCSV(t, rows, "occupation")
	cb := filepath.Join(adulttest.RepoRoot(t), "testdata", "adult", "codebook.json")
	for _, tc := range []struct {
		mech string
		args []string
	}{
		{"bitflip", []string{"--lie", "0.2", "--columns", "occupation"}},
		{"ddps", []string{"--column", "occupation", "--pi-s", "0.3"}},
	} {
		for _, keep := range []bool{false, true} {
			name := fmt.Sprintf("%s keep-order=%v", tc.mech, keep)
			out := filepath.Join(t.TempDir(), "out.csv")
			args := append([]string{"--mechanism", tc.mech, "--codebook", cb, "--seed", "1", "--insecure-seed", in, "-o", out}, tc.args...)
			if keep {
				args = append(args, "--keep-order")
			}
			mustPerturb(t, args...)
			names, reports, meta := cmdtest.ReadTable(t, out)
			if want := map[bool]string{true: "input", false: "shuffled"}[keep]; meta["order"] != want {
				t.Errorf("%s: metadata order %q, want %q", name, meta["order"], want)
			}
			if len(reports) != len(rows) {
				t.Fatalf("%s: %d reports for %d rows", name, len(reports), len(rows))
			}
			// category → counts per block.
			const blocks = 10
			counts := map[string][]int64{}
			add := func(c string, b int) {
				if counts[c] == nil {
					counts[c] = make([]int64, blocks)
				}
				counts[c][b]++
			}
			sizes := make([]float64, blocks)
			for i, r := range reports {
				b := i * blocks / len(reports)
				sizes[b]++
				if tc.mech == "ddps" {
					add(r[1], b) // round two depends on the value
					continue
				}
				for j, bit := range r {
					if bit == "1" {
						add(names[j], b)
					}
				}
			}
			for b := range sizes {
				sizes[b] /= float64(len(reports))
			}
			alpha := 1e-6 / float64(len(counts))
			rejected := 0
			for c, obs := range counts {
				_, p, err := stattest.ChiSquare(obs, sizes)
				if err != nil {
					t.Fatal(err)
				}
				if p < alpha {
					rejected++
					if !keep {
						t.Errorf("%s: the reports %q depend on their position (chi-square p = %.3g < %.3g): counts per block %v", name, c, p, alpha, obs)
					}
				}
			}
			t.Logf("%s: %d of %d categories depend on the position at level %.2g", name, rejected, len(counts), alpha)
			if keep && rejected < len(counts)*2/3 {
				t.Errorf("%s: only %d of %d categories depend on the position in input order; expected the sorted input to show", name, rejected, len(counts))
			}
		}
	}
}
