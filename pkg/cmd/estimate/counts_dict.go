package estimate

import (
	"fmt"
	"maps"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// reopenQueriedAsDictionaries opens a Parquet release again with the text
// columns the count queries read (cols) as dictionaries: countquery then
// looks each label up once per dictionary page instead of once per cell,
// and no string is made per row. When read is not nil, the release is
// opened reading only those of its columns (table.ReadOptions.Columns:
// the others are not decoded, nor, for a CSV file, built); a CSV file is
// then opened again too. It returns nil (keep in) for standard input, a
// reader already read, and a format or a table that gains nothing, as
// reopenWithDictionaries does. sum, when not "", is the digest of the
// codebook text that in's metadata no longer holds (dropCodebookText):
// the new reader's is compared with it, then dropped too.
func reopenQueriedAsDictionaries(o *Options, in table.Reader, cols, read []string, sum string) (table.Reader, error) {
	if table.IsStdio(in.Name()) || in.Name() == "stdin" || in.RowsRead() > 0 {
		return nil, nil
	}
	// Only names the table has: a missing one is reported by the scan,
	// with its own message.
	var proj []string
	for _, c := range read {
		if len(in.Schema().FieldIndices(c)) > 0 && !slices.Contains(proj, c) {
			proj = append(proj, c)
		}
	}
	if read == nil || len(proj) == in.Schema().NumFields() {
		proj = nil
	}
	var text []string
	if in.Format() == table.Parquet {
		for _, c := range cols {
			if idx := in.Schema().FieldIndices(c); len(idx) > 0 && in.Schema().Field(idx[0]).Type.ID() == arrow.STRING {
				text = append(text, c)
			}
		}
	}
	if len(text) == 0 && (proj == nil || (in.Format() != table.Parquet && in.Format() != table.CSV)) {
		return nil, nil
	}
	batch, err := table.BatchRows()
	if err != nil {
		return nil, err
	}
	// 16 Ki-row batches for the reason of pramDictBatch: pqarrow's per-row-
	// group scratch is sized by the batch.
	if in.Format() != table.Parquet {
		batch = 0 // CSV: the default, as the first opening had
	}
	// A CSV file's sidecar is not read again (its codebook item is
	// in's, which holds the codebook parsed): the data is checked
	// against the digest it recorded all the same.
	d, err := table.Open(in.Name(), table.ReadOptions{Stdin: o.Streams.In, DictColumns: text, BatchSize: min(batch, pramDictBatch), Columns: proj, SidecarOf: in})
	if err != nil {
		return nil, err
	}
	same := true
	if text, ok := d.Meta()[release.KeyCodebook]; ok && sum != "" {
		same = release.CodebookDigest(text) == sum
		delete(d.Meta(), release.KeyCodebook)
	}
	if !same || !maps.Equal(d.Meta(), in.Meta()) || d.NumRows() != in.NumRows() {
		d.Close()
		return nil, fmt.Errorf("%s changed while estimate was reading it; run estimate again once it is complete", in.Name())
	}
	return d, nil
}
