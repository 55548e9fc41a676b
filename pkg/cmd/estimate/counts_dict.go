package estimate

import (
	"fmt"
	"maps"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/table"
)

// reopenQueriedAsDictionaries opens a Parquet release again with the text
// columns the count queries read (cols) as dictionaries: countquery then
// looks each label up once per dictionary page instead of once per cell,
// and no string is made per row. It returns nil (keep in) for other
// formats, standard input and a reader already read, as
// reopenWithDictionaries does.
func reopenQueriedAsDictionaries(o *Options, in table.Reader, cols []string) (table.Reader, error) {
	if in.Format() != table.Parquet || table.IsStdio(in.Name()) || in.Name() == "stdin" || in.RowsRead() > 0 {
		return nil, nil
	}
	var text []string
	for _, c := range cols {
		if idx := in.Schema().FieldIndices(c); len(idx) > 0 && in.Schema().Field(idx[0]).Type.ID() == arrow.STRING {
			text = append(text, c)
		}
	}
	if len(text) == 0 {
		return nil, nil
	}
	batch, err := table.BatchRows()
	if err != nil {
		return nil, err
	}
	// 16 Ki-row batches for the reason of pramDictBatch: pqarrow's per-row-
	// group scratch is sized by the batch.
	d, err := table.Open(in.Name(), table.ReadOptions{Stdin: o.Streams.In, DictColumns: text, BatchSize: min(batch, pramDictBatch)})
	if err != nil {
		return nil, err
	}
	if !maps.Equal(d.Meta(), in.Meta()) || d.NumRows() != in.NumRows() {
		d.Close()
		return nil, fmt.Errorf("%s changed while estimate was reading it; run estimate again once it is complete", in.Name())
	}
	return d, nil
}
