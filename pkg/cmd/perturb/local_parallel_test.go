package perturb

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/table"
)

// A seeded bitflip or ddps run writes the same bytes on 1 and 2 cores and
// with batches ($PRAMKIT_BATCH_ROWS) of 1000 rows, 777 rows and the default: every row draws from
// its own row-keyed stream, and the chunks are written in input order —
// with the shuffle and under --keep-order, to CSV and Parquet.
func TestLocalMechanismsAreReproducibleAtAnyCoreCountAndChunkSize(t *testing.T) {
	dir, cb, in := testInputs(t, "people.csv", peopleCSV(5000))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runs := 0
	for _, mech := range [][]string{
		{"--mechanism", "bitflip", "--lie", "0.2", "--columns", "sex,color,flag,job"},
		{"--mechanism", "ddps", "--column", "job", "--pi-s", "0.2"},
	} {
		for _, extra := range [][]string{nil, {"--keep-order"}} {
			for _, ext := range []string{"csv", "parquet"} {
				var want []byte
				for _, procs := range []int{1, 2} {
					for _, chunk := range []int{0, 1000, 777} {
						runtime.GOMAXPROCS(procs)
						setBatchRows(t, chunk)
						runs++
						out := filepath.Join(dir, fmt.Sprintf("out%d.%s", runs, ext))
						args := append(append([]string{"--codebook", cb, "--seed", "3", "--insecure-seed", in, "-o", out}, mech...), extra...)
						mustPerturb(t, args...)
						got, err := os.ReadFile(out)
						if err != nil {
							t.Fatal(err)
						}
						if want == nil {
							want = got
						} else if string(got) != string(want) {
							t.Errorf("%s %v GOMAXPROCS=%d chunk=%d: the output differs from the first run's", strings.Join(mech, " "), extra, procs, chunk)
						}
					}
				}
			}
		}
	}
}

// A bad cell is reported at the row and column a row-by-row loop meets it
// first, also when a later chunk or a later column holds bad cells too.
func TestLocalMechanismsReportTheFirstBadCell(t *testing.T) {
	rows := strings.Split(strings.TrimSuffix(peopleCSV(3000), "\n"), "\n")
	set := func(row, col int, v string) { // row 1 is line 1 after the header
		f := strings.Split(rows[row], ",")
		f[col] = v
		rows[row] = strings.Join(f, ",")
	}
	set(2000, 4, "Pilot") // job (4th column of --columns) at row 2000
	set(2000, 2, "pink")  // color (2nd) at row 2000: the one reported
	set(2001, 1, "x")     // a later row
	set(2900, 3, "7")     // a later chunk
	dir, cb, in := testInputs(t, "bad.csv", strings.Join(rows, "\n")+"\n")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct {
		mech []string
		want string
	}{
		{[]string{"--mechanism", "bitflip", "--lie", "0.2", "--columns", "sex,color,flag,job"}, `row 2000, column "color"`},
		{[]string{"--mechanism", "ddps", "--column", "job", "--pi-s", "0.2"}, `row 2000, column "job"`},
	} {
		for _, procs := range []int{1, 2} {
			for _, chunk := range []int{0, 1000, 777} {
				runtime.GOMAXPROCS(procs)
				setBatchRows(t, chunk)
				res := cmdtest.Run(newPerturb, nil, append([]string{"--codebook", cb, "--seed", "3", "--insecure-seed", in, "-o", filepath.Join(dir, "out.csv")}, tc.mech...)...)
				if res.Code != 1 || !strings.Contains(res.Stderr, tc.want) {
					t.Errorf("%v GOMAXPROCS=%d chunk=%d: exit %d, %q; want exit 1 naming %s", tc.mech, procs, chunk, res.Code, res.Stderr, tc.want)
				}
				if _, err := os.Stat(filepath.Join(dir, "out.csv")); err == nil {
					t.Errorf("%v: a failed run left its output", tc.mech)
				}
			}
		}
	}
}

// setBatchRows makes the readers of the runs that follow cut batches (and
// CSV chunks) of rows rows; 0 restores the default.
func setBatchRows(t *testing.T, rows int) {
	if rows == 0 {
		t.Setenv(table.BatchRowsEnv, "")
		os.Unsetenv(table.BatchRowsEnv)
		return
	}
	t.Setenv(table.BatchRowsEnv, fmt.Sprint(rows))
}
