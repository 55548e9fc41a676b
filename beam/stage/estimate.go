// Package stage builds the Beam pipelines of pramkit-beam from the same
// library code as the pramkit tools (github.com/pramkit/pramkit), so a
// release that outgrows one machine is processed on a Beam runner (Prism
// locally, Flink, Spark or Dataflow on a cluster) with the same results.
package stage

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// Estimating a γ-diagonal release needs only the count of each joint value
// among its m rows (Lin–Wang–Rane §III-A: every estimator reads the release
// through T(g)·m), and counts of disjoint shards add up. So the pipeline is
// a per-file count (each file read in batches through pkg/table, never
// whole) followed by a Sum per joint value; the driver writes the sums as a
// count table — the format of `estimate --tabulate` — and runs the CLI's
// own estimate on it, which gives exactly the output of `estimate` over all
// the rows (pkg/cmd/estimate TestPRAMPartsEstimateAsOneRun).

func init() {
	register.DoFn3x1[context.Context, fileSplit, func(string, int64), error](&countFileFn{})
	register.Emitter2[string, int64]()
	register.Function2x1(formatCount)
	beam.RegisterType(reflect.TypeOf((*countFileFn)(nil)).Elem())
}

// countFileFn counts the joint values of one shard of a release; Columns
// are the release's columns, Meta the metadata every shard must carry
// (shards of one release carry the same metadata, as decrypt writes it).
type countFileFn struct {
	Columns []string          `json:"columns"`
	Meta    map[string]string `json:"meta"`
}

// ProcessElement reads one file (or row group) and emits (joint value, rows with it): the
// per-file pre-aggregation keeps the shuffle O(observed values × files)
// instead of O(rows). The key is the JSON array of the row's labels, an
// unambiguous encoding whatever the labels contain.
func (f *countFileFn) ProcessElement(ctx context.Context, sp fileSplit, emit func(string, int64)) error {
	path := sp.String()
	r, err := sp.open()
	if err != nil {
		return err
	}
	defer r.Close()
	if !maps.Equal(withoutPart(r.Meta()), f.Meta) { // parts differ in first_row, rows only
		return fmt.Errorf("%s: its metadata differs from the first shard's: every input must be a part of one release (decrypt's output, split by rows)", path)
	}
	idx := make([]int, len(f.Columns))
	for j, name := range f.Columns {
		k := r.Schema().FieldIndices(name)
		if len(k) == 0 {
			return fmt.Errorf("%s: no column %q, a column of the release; give the shards of one decrypted release", path, name)
		}
		idx[j] = k[0]
	}
	counts := make(map[string]int64)
	labels := make([]string, len(idx))
	err = eachValuesBatch(r, idx, func(vals []table.Values, rows int) error {
		for i := range rows {
			for j := range vals {
				labels[j] = vals[j].String(i)
			}
			key, _ := json.Marshal(labels)
			counts[string(key)]++
		}
		return nil
	})
	if err != nil {
		return err
	}
	for k, n := range counts {
		emit(k, n)
	}
	return nil
}

// formatCount is one line of the counts file: the labels' JSON array, a
// tab, the count.
func formatCount(key string, n int64) string { return fmt.Sprintf("%s\t%d", key, n) }

// releaseColumns are the release's columns: the metadata's joint order,
// else the file's columns (as estimate decides them).
func releaseColumns(r table.Reader) ([]string, error) {
	meta := r.Meta()
	var names []string
	if _, ok := meta[release.KeyColumns]; ok {
		var cols []release.Column
		if err := meta.JSON(release.KeyColumns, "", &cols); err != nil {
			return nil, fmt.Errorf("%s: %v; the release was damaged: decrypt it again", r.Name(), err)
		}
		for _, c := range cols {
			names = append(names, c.Name)
		}
		return names, nil
	}
	for _, f := range r.Schema().Fields() {
		if f.Name == release.CountColumn && release.IsCountTable(meta) {
			continue
		}
		names = append(names, f.Name)
	}
	return names, nil
}

// CountPipeline adds to s the count of every joint value of the release
// files: a PCollection of counts-file lines (see formatCount).
func CountPipeline(s beam.Scope, files []string, columns []string, meta table.Meta) beam.PCollection {
	perFile := beam.ParDo(s, &countFileFn{Columns: columns, Meta: meta}, readSplits(s, files))
	sums := stats.SumPerKey(s, perFile)
	return beam.ParDo(s, formatCount, sums)
}
