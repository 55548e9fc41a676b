package estimate

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/table"
)

// benchRelease writes a decrypted release of rows rows over columns of
// alphabet sizes ks (labels "c<j>_<x>", values drawn with a skew) as an
// Arrow file, and returns its path.
func benchRelease(b *testing.B, ks []int, rows int) string {
	b.Helper()
	var cols []map[string]any
	names := make([]string, len(ks))
	labels := make([][]string, len(ks))
	K := 1
	for j, k := range ks {
		names[j] = fmt.Sprint("c", j)
		for x := range k {
			labels[j] = append(labels[j], fmt.Sprintf("c%d_%d", j, x))
		}
		cols = append(cols, map[string]any{"name": names[j], "categories": labels[j]})
		K *= k
	}
	cb, _ := json.Marshal(map[string]any{"columns": cols})
	meta := table.Meta{"stage": "decrypt", "mechanism": "gamma-diagonal", "gamma": "30", "K": fmt.Sprint(K),
		"n": fmt.Sprint(10 * rows), "m": fmt.Sprint(rows), "codebook": string(cb)}
	path := filepath.Join(b.TempDir(), "release.arrow")
	schema := table.StringSchema(names)
	w, err := table.Create(path, schema, meta, table.WriteOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Abort()
	bb := table.NewBatchBuilder(schema)
	defer bb.Release()
	r := rand.New(rand.NewPCG(1, 2))
	row := make([]string, len(ks))
	for i := range rows {
		for j, k := range ks {
			x := min(int(r.ExpFloat64()*float64(k)/8), k-1)
			row[j] = labels[j][x]
		}
		bb.AppendStrings(row)
		if bb.Rows() == table.DefaultBatchSize || i == rows-1 {
			rec := bb.NewBatch()
			err := w.Write(rec)
			rec.Release()
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := w.Commit(); err != nil {
		b.Fatal(err)
	}
	return path
}

// benchEstimate runs the whole command (read, count, estimate, write the
// table to a discarded stdout) and reports released rows per second.
func benchEstimate(b *testing.B, ks []int, rows int, args ...string) {
	path := benchRelease(b, ks, rows)
	args = append(args, path)
	b.ResetTimer()
	for range b.N {
		s := &cli.Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}
		if code := cli.Run(NewCmd(s, nil), args, s); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// Adult-like: K = 16 × 2, a dense tally.
func BenchmarkPRAMEstimateK32(b *testing.B) {
	benchEstimate(b, []int{16, 2}, 1<<20, "--ci", "none")
}

// K = 10^9: a sparse tally (hash map), observed values only.
func BenchmarkPRAMEstimateK1e9(b *testing.B) {
	benchEstimate(b, []int{1000, 1000, 1000}, 1<<20, "--ci", "none", "--method", "inverse")
}
