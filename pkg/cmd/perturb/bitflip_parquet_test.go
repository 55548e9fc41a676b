package perturb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/spf13/cobra"
	xreader "github.com/xitongsys/parquet-go/reader"
	xsource "github.com/xitongsys/parquet-go/source"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/cmd/estimate"
)

// memParquet is the in-memory source.ParquetFile xitongsys/parquet-go
// reads from.
type memParquet struct{ *bytes.Reader }

func (m memParquet) Write([]byte) (int, error) { return 0, errors.New("read only") }
func (m memParquet) Close() error              { return nil }
func (m memParquet) Open(string) (xsource.ParquetFile, error) {
	b := make([]byte, m.Size())
	m.ReadAt(b, 0)
	return memParquet{bytes.NewReader(b)}, nil
}
func (m memParquet) Create(string) (xsource.ParquetFile, error) { return nil, errors.New("read only") }

// TestBitflipParquetReleaseReadsTheSameEverywhere: a seeded bitflip release
// written to Parquet (its 0/1 columns as finished dictionary pages, see
// table's intPages) over two row groups holds the rows of the same release
// written to CSV, read by this package's reader, by arrow-go's pqarrow and
// by the independent xitongsys/parquet-go; estimate gives the same summary
// on both files.
func TestBitflipParquetReleaseReadsTheSameEverywhere(t *testing.T) {
	dir, cb, in := testInputs(t, "people.csv", peopleCSV(70_000))
	pq, csv := filepath.Join(dir, "rel.parquet"), filepath.Join(dir, "rel.csv")
	for _, out := range []string{pq, csv} {
		mustPerturb(t, "--mechanism", "bitflip", "--lie", "0.2", "--columns", "sex,color,flag,job", "--codebook", cb,
			"--seed", "4", "--insecure-seed", in, "-o", out)
	}
	names, rows, _ := cmdtest.ReadTable(t, pq)
	cnames, crows, _ := cmdtest.ReadTable(t, csv)
	if !reflect.DeepEqual(names, cnames) || !reflect.DeepEqual(rows, crows) {
		t.Fatalf("the Parquet release (columns %v, %d rows) is not the CSV release (columns %v, %d rows)", names, len(rows), cnames, len(crows))
	}
	if len(rows) != 70_000 || len(names) < 8 {
		t.Fatalf("%d rows of %d columns %v", len(rows), len(names), names)
	}
	data, err := os.ReadFile(pq)
	if err != nil {
		t.Fatal(err)
	}

	// arrow-go.
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if pf.NumRowGroups() < 2 {
		t.Errorf("%d row groups, want several", pf.NumRowGroups())
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	for j, name := range names {
		col := tbl.Column(j)
		if col.Name() != name {
			t.Fatalf("pqarrow: column %d is %s, want %s", j, col.Name(), name)
		}
		i := 0
		for _, chunk := range col.Data().Chunks() {
			for k := range chunk.Len() {
				if got := chunk.ValueStr(k); got != rows[i][j] {
					t.Fatalf("pqarrow: column %s row %d is %s, want %s", name, i+1, got, rows[i][j])
				}
				i++
			}
		}
		if i != len(rows) {
			t.Fatalf("pqarrow: column %s has %d rows", name, i)
		}
	}

	// xitongsys/parquet-go.
	xr, err := xreader.NewParquetColumnReader(memParquet{bytes.NewReader(data)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer xr.ReadStop()
	for j, name := range names {
		vals, _, _, err := xr.ReadColumnByIndex(int64(j), int64(len(rows)))
		if err != nil {
			t.Fatal(err)
		}
		if len(vals) != len(rows) {
			t.Fatalf("xitongsys: column %s has %d values", name, len(vals))
		}
		for i, v := range vals {
			if got := fmt.Sprint(v); got != rows[i][j] {
				t.Fatalf("xitongsys: column %s row %d is %s, want %s", name, i+1, got, rows[i][j])
			}
		}
	}

	// estimate.
	est := func(p string) string {
		res := cmdtest.Run(func(s *cli.Streams) *cobra.Command { return estimate.NewCmd(s, nil) }, nil, p, "--json")
		if res.Code != 0 {
			t.Fatalf("estimate %s: exit %d: %s", p, res.Code, res.Stderr)
		}
		return res.Stdout
	}
	if a, b := est(pq), est(csv); a != b || a == "" {
		t.Errorf("estimate on the Parquet release:\n%s\non the CSV release:\n%s", a, b)
	}
}
