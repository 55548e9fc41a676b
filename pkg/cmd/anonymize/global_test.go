package anonymize

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
)

// TestGlobalSameAtAnyCoreCountAndBatchSize: mechanism A randomizes rows
// in parallel chunks, each row from its own stream keyed by its position,
// so a seeded run gives the same bytes on 1 and 2 cores, at batch sizes 1,
// 7, 1000 and the default, shuffled or in input order, with rows left out
// by --missing drop, and from standard input as from the file.
func TestGlobalSameAtAnyCoreCountAndBatchSize(t *testing.T) {
	dir, in, cb, _ := testTable(t, []int{300, 260, 250, 240, 200, 150, 101})
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	// Two rows with a missing sensitive value, which --missing drop
	// leaves out: the chunks keeping every row pass their text through,
	// the others build it.
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	lines[10] = "9,,x2"
	lines[1400] = "1399,,x0"
	in = filepath.Join(dir, "missing.csv")
	data = []byte(strings.Join(lines, "\n") + "\n")
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, order := range [][]string{nil, {"--keep-order"}} {
		args := append([]string{"--mechanism", "global", "--p", "0.5", "--missing", "drop", "--sensitive", "s", "--codebook", cb,
			"--seed", "9", "--insecure-seed"}, order...)
		runtime.GOMAXPROCS(1)
		want := runBatched(t, 0, nil, append(args, in)...)
		// The metadata line, the header and 1501 rows less the 2 left out.
		if n := strings.Count(want, "\n"); n != 1501 {
			t.Fatalf("%v: %d lines, want 1501", order, n)
		}
		for _, procs := range []int{1, 2} {
			runtime.GOMAXPROCS(procs)
			for _, bs := range []int{1, 7, 1000, 0} {
				if got := runBatched(t, bs, nil, append(args, in)...); got != want {
					t.Errorf("%v: %d cores, batches of %d rows give another output than 1 core at the default", order, procs, bs)
				}
			}
			if got := runBatched(t, 7, data, args...); got != want {
				t.Errorf("%v: %d cores: standard input gives another output than the file", order, procs)
			}
		}
	}
}

// TestGlobalTransitionLaw: given its true value x, a row publishes y with
// probability A[x][y] = p·[x = y] + (1 − p)/V (anonymize.Randomize's
// matrix), each row from its own stream. One run of 6,000 rows (V = 4,
// 1,500 rows a value) at p = 0.3, in input order so that each published
// row meets its true one: a chi-square test per true value, false-alarm
// rate 1e-4 each. Seeds 1–3 are run, so a fault in how rows get their
// streams (two rows sharing one, say) cannot hide behind a lucky seed.
func TestGlobalTransitionLaw(t *testing.T) {
	const v, p = 4, 0.3
	dir, in, cb, truth := testTable(t, []int{1500, 1500, 1500, 1500})
	for seed := 1; seed <= 3; seed++ {
		out := filepath.Join(dir, "out.csv")
		mustAnon(t, "--mechanism", "global", "--p", strconv.FormatFloat(p, 'g', -1, 64), "--keep-order", "--sensitive", "s",
			"--codebook", cb, "--seed", strconv.Itoa(seed), "--insecure-seed", in, "-o", out)
		recs := readCSV(t, out)[1:]
		if len(recs) != len(truth) {
			t.Fatalf("%d rows published, want %d", len(recs), len(truth))
		}
		counts := make([][]int64, v)
		for x := range counts {
			counts[x] = make([]int64, v)
		}
		for i, r := range recs {
			y, err := strconv.Atoi(strings.TrimPrefix(r[1], "v"))
			if err != nil || y < 0 || y >= v {
				t.Fatalf("row %d published %q", i, r[1])
			}
			counts[truth[i]][y]++
		}
		for x := range v {
			probs := make([]float64, v)
			for y := range probs {
				probs[y] = (1 - p) / v
				if y == x {
					probs[y] += p
				}
			}
			stattest.AssertChiSquare(t, fmt.Sprintf("seed %d: published values of true v%d", seed, x), counts[x], probs, 1e-4)
		}
	}
}
