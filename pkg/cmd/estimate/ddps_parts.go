package estimate

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/ddps"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// A ddps release can be estimated from parts, as a γ-diagonal one
// (pram_parts.go): both estimators read the release only through the
// counts C1[v], C2[v] of the two rounds' reports (Joy Eq. 41), which add up
// over disjoint parts of the owners. A count table (estimate --tabulate)
// holds the counts of (round one, round two) report pairs — one row per
// observed pair — so it keeps everything the rows hold but their order,
// which no estimator reads. A ddps release records no number of owners, so
// unlike a γ-diagonal release's the parts' total cannot be checked: a
// missing part goes unnoticed, and only a path given twice is refused.

// ddpsPairs accumulates the counts of report pairs (o1, o2), outputs
// 0..V: O(observed pairs) memory.
type ddpsPairs struct {
	count map[[2]int]int64
	total int64
}

// add counts n more owners reporting (o1, o2); false on int64 overflow.
func (p *ddpsPairs) add(o1, o2 int, n int64) bool {
	if n > math.MaxInt64-p.total {
		return false
	}
	p.total += n
	p.count[[2]int{o1, o2}] += n
	return true
}

// tally is the rounds' counts for the estimators.
func (p *ddpsPairs) tally(m *ddps.Mechanism) *ddps.Tally {
	t := m.NewTally()
	for k, n := range p.count {
		t.RoundOne[k[0]] += n
		t.RoundTwo[k[1]] += n
	}
	return t
}

// countDDPSParts reads the first input (rel's, open as in) and every other
// one, after checking that it is a part of rel's release, into one tally.
func (o *Options) countDDPSParts(rel *ddpsRelease, in table.Reader) (*ddpsPairs, error) {
	p := &ddpsPairs{count: map[[2]int]int64{}}
	if err := rel.countPairs(in, p); err != nil {
		return nil, err
	}
	first := in.Meta()
	names := []string{rel.name}
	var more []string
	if len(o.Inputs) > 1 {
		more = o.Inputs[1:]
	}
	for i, path := range more {
		if j := slices.IndexFunc(o.Inputs[:i+1], func(q string) bool { return pramSameFile(q, path) }); j >= 0 {
			return nil, cli.Usagef("%s is given twice (arguments %d and %d): give each part of the release once (a ddps release records no number of owners, so estimate cannot check that the parts add up)", path, j+1, i+2)
		}
		name, err := o.countDDPSPart(rel, first, path, p)
		if err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	if p.total == 0 {
		return nil, errNoReports(strings.Join(names, " + "))
	}
	return p, nil
}

// countDDPSPart opens one more input, checks that its metadata is that of
// rel's release (first is the first input's) and adds its pairs to p.
func (o *Options) countDDPSPart(rel *ddpsRelease, first table.Meta, path string, p *ddpsPairs) (string, error) {
	in, err := o.Streams.Open(path)
	if err != nil {
		return path, err
	}
	defer in.Close()
	if cli.CarryInsecureSeed(o.Streams, "estimate", in.Name(), in.Meta(), nil) {
		o.insecure = true
	}
	for _, key := range release.DDPSPartKeys {
		a, okA := first[key]
		b, okB := in.Meta()[key]
		if a != b || okA != okB {
			return in.Name(), fmt.Errorf("%s and %s are not parts of the same release: their metadata item %q differs (%s vs %s); estimate each release on its own", rel.name, in.Name(), key, pramShort(a, okA), pramShort(b, okB))
		}
	}
	part := *rel
	part.name = in.Name()
	return in.Name(), part.countPairs(in, p)
}

// countPairs reads one input — released rows, or a count table's counted
// pairs — into p. Memory: one batch.
func (rel *ddpsRelease) countPairs(in table.Reader, p *ddpsPairs) error {
	names := []string{rel.column + ".round1", rel.column + ".round2"}
	isCounts := release.IsCountTable(in.Meta())
	if isCounts {
		names = append(names, release.CountColumn)
	}
	missing := func(name string) error {
		if name == release.CountColumn {
			return fmt.Errorf("%s is a count table without a %q column; tabulate the release again with estimate --tabulate", rel.name, name)
		}
		return fmt.Errorf("%s has no column %q: a ddps release holds %s and %s; the file was edited: randomize the original table again", rel.name, name, names[0], names[1])
	}
	output := make(map[string]int, len(rel.values)+1)
	output[rel.noneToken] = 0
	for i, v := range rel.values {
		output[v] = i + 1
	}
	// A part may be empty (countDDPSParts refuses an empty whole).
	return scanColumns(in, names, missing, nil, func(rec arrow.RecordBatch, cols []int, first int64) error {
		vals := [2]table.Values{table.ValuesOf(rec.Column(cols[0])), table.ValuesOf(rec.Column(cols[1]))}
		var cnt table.Values
		if isCounts {
			cnt = table.ValuesOf(rec.Column(cols[2]))
		}
		for i := range vals[0].Len() {
			row := first + int64(i)
			var o [2]int
			for r := range vals {
				x, ok := output[vals[r].String(i)]
				if !ok {
					return &table.DataError{File: rel.name, Row: row, Column: names[r],
						Err: fmt.Errorf("%s is not an output of this release (%s or a category of %s); the file was edited: randomize the original table again", table.QuoteCell(vals[r].String(i)), rel.noneToken, rel.column)}
				}
				o[r] = x
			}
			n := int64(1)
			if isCounts {
				s := cnt.String(i)
				v, err := strconv.ParseInt(s, 10, 64)
				if err != nil || v < 0 {
					return &table.DataError{File: rel.name, Row: row, Column: release.CountColumn,
						Err: fmt.Errorf("count %s is not a non-negative integer: the count table was edited; tabulate the release again with estimate --tabulate", table.QuoteCell(s))}
				}
				n = v
			}
			if !p.add(o[0], o[1], n) {
				return &table.DataError{File: rel.name, Row: row, Column: release.CountColumn,
					Err: fmt.Errorf("the counts add up to more than %d reports: the count table was edited; tabulate the release again with estimate --tabulate", int64(math.MaxInt64))}
			}
		}
		return nil
	})
}

// checkDDPSTabulate refuses, with --tabulate, the flags of an estimate.
func (o *Options) checkDDPSTabulate() error {
	if !o.Tabulate {
		return nil
	}
	for _, name := range []string{"json", "truth", "round-two"} {
		if o.cmd.Flags().Changed(name) {
			return cli.Usagef("--tabulate writes the counts, not an estimate: drop --%s (estimate from the count table instead)", name)
		}
	}
	return nil
}

// writeDDPSCountTable writes the pairs as a count table: COLUMN.round1,
// COLUMN.round2 (labels) and CountColumn, one row per observed pair in
// increasing order of outputs, with the release's metadata (meta, the
// first input's) marked as a count table.
func (o *Options) writeDDPSCountTable(rel *ddpsRelease, meta table.Meta, p *ddpsPairs) error {
	fields := []arrow.Field{
		{Name: rel.column + ".round1", Type: arrow.BinaryTypes.String},
		{Name: rel.column + ".round2", Type: arrow.BinaryTypes.String},
		{Name: release.CountColumn, Type: arrow.PrimitiveTypes.Int64},
	}
	schema := arrow.NewSchema(fields, nil)
	meta = maps.Clone(meta)
	meta[release.KeyCountTable] = release.CountTableTrue
	o.markInsecureSeed(meta)
	w, err := o.Streams.Create(o.Output, schema, meta, table.CSV, o.pramInputs())
	if err != nil {
		return err
	}
	defer w.Abort()
	rw := table.NewRowWriter(w, schema, 0)
	defer rw.Release()
	label := func(x int) string {
		if x == 0 {
			return rel.noneToken
		}
		return rel.values[x-1]
	}
	keys := slices.SortedFunc(maps.Keys(p.count), func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	for _, k := range keys {
		if p.count[k] == 0 {
			continue // a count table's explicit zero
		}
		rw.String(0, label(k[0]))
		rw.String(1, label(k[1]))
		rw.Int64(2, p.count[k])
		if err := rw.EndRow(); err != nil {
			return err
		}
	}
	if err := rw.Flush(); err != nil {
		return err
	}
	return w.Commit()
}
