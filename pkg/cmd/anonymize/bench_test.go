package anonymize

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/table"
)

// benchTable writes n Adult-like rows (the paper's §9.6 setting: a
// sensitive column of 50 values, here "job", with five other columns) and
// its codebook, once per benchmark binary run.
func benchTable(b *testing.B, n int) (csvPath, cb string) {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "pramkit-anonymize-bench")
	csvPath = filepath.Join(dir, fmt.Sprintf("t%d.csv", n))
	cb = filepath.Join(dir, "cb.json")
	if _, err := os.Stat(csvPath); err == nil {
		return csvPath, cb
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(csvPath)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	r := rng.NewSeeded(1)
	fmt.Fprintln(w, "age,sex,education,marital,job,income")
	for range n {
		// job: 50 values, the most frequent at 4 % (ℓ′ up to 25).
		job := r.IntN(60)
		if job >= 50 {
			job -= 50
		}
		fmt.Fprintf(w, "%d,%s,edu%d,m%d,job%d,%s\n", 17+r.IntN(74), []string{"Male", "Female"}[r.IntN(2)], r.IntN(16), r.IntN(7), job, []string{"<=50K", ">50K"}[r.IntN(2)])
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	var cats string
	for j := range 50 {
		if j > 0 {
			cats += ", "
		}
		cats += strconv.Quote(fmt.Sprintf("job%d", j))
	}
	if err := os.WriteFile(cb, []byte(`{"columns": [{"name": "job", "categories": [`+cats+`]}]}`), 0o644); err != nil {
		b.Fatal(err)
	}
	return csvPath, cb
}

// The whole command on 500k rows (CSV in, CSV out) at ℓ′ = 2, 5, 10: the
// paper's §9.6 reports under 10 s for its C++ implementation.
func BenchmarkAnonymizeCommand500k(b *testing.B) {
	in, cb := benchTable(b, 500_000)
	out := filepath.Join(b.TempDir(), "out.csv")
	for _, l := range []int{2, 5, 10} {
		b.Run(fmt.Sprintf("l=%d", l), func(b *testing.B) {
			for b.Loop() {
				s := &cli.Streams{Out: io.Discard, Err: io.Discard}
				if code := cli.Run(NewCmd(s, nil), []string{"--sensitive", "job", "--l", strconv.Itoa(l), "--codebook", cb, in, "-o", out}, s); code != 0 {
					b.Fatalf("exit %d", code)
				}
			}
			b.ReportMetric(500_000*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// Reading 500k rows into memory: the bytes per row anonymize holds
// (sensitive value indexes and the other columns' codes, slice slack
// included; the partition adds 16 per row while publishing).
func BenchmarkAnonymizeRead500k(b *testing.B) {
	in, cbPath := benchTable(b, 500_000)
	cb, err := codebook.Load(cbPath)
	if err != nil {
		b.Fatal(err)
	}
	var perRow float64
	for b.Loop() {
		r, err := table.Open(in, table.ReadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		d, err := read(r, cb, []string{"job"}, readOptions{keepRows: true})
		if err != nil {
			b.Fatal(err)
		}
		perRow = d.bytesPerRow()
		r.Close()
	}
	b.ReportMetric(perRow, "bytes/row")
}
