package stage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/pramkit/pramkit/pkg/sample"
	"github.com/pramkit/pramkit/pkg/table"
)

// The sample is the m rows of smallest priority PRF_s(id) (pkg/sample,
// Lin–Wang–Rane §III); the bottom-m of a union is the bottom-m of the
// union of its parts' bottom-m sets. So each file is reduced to its own
// bottom-m (at most m rows leave a worker), and a global combine merges
// those into the bottom-m of all rows: with the same secret and ids, the
// rows sample keeps, whatever the order in which the runner merges. A
// retried bundle recomputes the same priorities, since they are a keyed
// function of the id, not a draw.

func init() {
	beam.RegisterType(reflect.TypeOf((*bottomAcc)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*bottomFileFn)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*mergeBottomFn)(nil)).Elem())
	register.DoFn3x1[context.Context, fileSplit, func(bottomAcc), error](&bottomFileFn{})
	register.Emitter1[bottomAcc]()
	register.Combiner1[bottomAcc](&mergeBottomFn{})
}

// keptRow is a row in a bottom-m: its priority, the kept columns' values
// and, last, its id.
type keptRow struct {
	Hi, Lo uint64
	Row    []string
}

func (r keptRow) less(s keptRow) int {
	return cmp.Or(cmp.Compare(r.Hi, s.Hi), cmp.Compare(r.Lo, s.Lo))
}

// bottomAcc is the bottom-m of some rows: Rows (≤ m, by priority), the N
// rows seen, and Dup, an id seen twice among the kept rows or at the
// boundary (as sample.BottomM notices them), "" if none.
type bottomAcc struct {
	Rows []keptRow
	N    int64
	Dup  string
	File string // the file that held Dup
}

// trim sorts a's rows, notes a repeated id among the first m + 1 and keeps
// the first m.
func (a *bottomAcc) trim(m int) {
	slices.SortFunc(a.Rows, keptRow.less)
	for i := 1; i < len(a.Rows) && i <= m && a.Dup == ""; i++ {
		if a.Rows[i].less(a.Rows[i-1]) == 0 {
			a.Dup = a.Rows[i].Row[len(a.Rows[i].Row)-1]
		}
	}
	if len(a.Rows) > m {
		a.Rows = slices.Clone(a.Rows[:m])
	}
}

// bottomFileFn reduces one file (or row group) to its bottom-M.
type bottomFileFn struct {
	Secret []byte            `json:"secret"`
	M      int               `json:"m"`
	ID     string            `json:"id"`
	Keep   []string          `json:"keep"`
	Meta   map[string]string `json:"meta"`
}

// ProcessElement reads the file in batches through pkg/table, keeping a
// buffer of at most 2m candidates that is sorted and cut to m when full:
// memory O(m), and rows above the current m-th priority are never copied.
func (f *bottomFileFn) ProcessElement(ctx context.Context, sp fileSplit, emit func(bottomAcc)) error {
	path := sp.String()
	prf, err := sample.NewPRF(f.Secret)
	if err != nil {
		return err
	}
	r, err := sp.open()
	if err != nil {
		return err
	}
	defer r.Close()
	if !maps.Equal(map[string]string(r.Meta()), f.Meta) {
		return fmt.Errorf("%s: its metadata differs from the first file's: every input must be a shard of one table", path)
	}
	cols := append(slices.Clone(f.Keep), f.ID)
	idx := make([]int, len(cols))
	for j, name := range cols {
		k := r.Schema().FieldIndices(name)
		if len(k) == 0 {
			return fmt.Errorf("%s has no column %q", path, name)
		}
		idx[j] = k[0]
	}
	acc := bottomAcc{}
	var bound *keptRow // the m-th best so far, once m rows were kept
	err = eachValuesBatch(r, idx, func(vals []table.Values, rows int) error {
		ids := vals[len(vals)-1]
		for i := range rows {
			acc.N++
			id := ids.String(i)
			if id == "" {
				return &table.DataError{File: sp.Path, Row: sp.FirstRow + acc.N, Column: f.ID, Err: errors.New("the row id is empty; every row needs an id")}
			}
			p := prf.ID(id)
			k := keptRow{Hi: p.Hi, Lo: p.Lo}
			if bound != nil && bound.less(k) < 0 {
				continue
			}
			k.Row = make([]string, len(vals))
			for j := range vals {
				k.Row[j] = strings.Clone(vals[j].String(i))
			}
			acc.Rows = append(acc.Rows, k)
			if len(acc.Rows) >= 2*f.M {
				acc.trim(f.M)
				b := acc.Rows[f.M-1]
				bound = &b
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	acc.trim(f.M)
	if acc.Dup != "" {
		acc.File = sp.Path
	}
	emit(acc)
	return nil
}

// mergeBottomFn merges bottom-M sets into the bottom-M of their union.
type mergeBottomFn struct {
	M int `json:"m"`
}

func (f *mergeBottomFn) MergeAccumulators(a, b bottomAcc) bottomAcc {
	out := bottomAcc{Rows: append(slices.Clone(a.Rows), b.Rows...), N: a.N + b.N}
	out.Dup, out.File = a.Dup, a.File
	if out.Dup == "" {
		out.Dup, out.File = b.Dup, b.File
	}
	out.trim(f.M)
	return out
}

// SamplePipeline adds to s the bottom-m of the files' rows by the PRF of
// their id column: one bottomAcc.
func SamplePipeline(s beam.Scope, files []string, secret []byte, m int, id string, keep []string, meta table.Meta) beam.PCollection {
	perFile := beam.ParDo(s, &bottomFileFn{Secret: secret, M: m, ID: id, Keep: keep, Meta: meta}, readSplits(s, files))
	return beam.Combine(s, &mergeBottomFn{M: m}, perFile)
}
