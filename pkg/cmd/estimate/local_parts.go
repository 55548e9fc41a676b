package estimate

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/bitflip"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/ddps"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// A bitflip release can be estimated from parts too: its estimators (and
// the normal intervals) read the release only through the number of rows n
// and each bit's number of ones, which add up over disjoint parts of the
// rows. Its count table holds them as one row: every bit column with its
// number of ones, and CountColumn with n (a count table of several rows is
// read as their sum). --anonymity reads no rows (only q and L, and the
// original records of --truth): it works on a count table as on the rows,
// and takes one file.
//
// A ddps release can be estimated from parts, as a γ-diagonal one
// (pram_parts.go): both estimators read the release only through the
// counts C1[v], C2[v] of the two rounds' reports (Joy Eq. 41), which add up
// over disjoint parts of the owners. A count table (estimate --tabulate)
// holds the counts of (round one, round two) report pairs — one row per
// observed pair — so it keeps everything the rows hold but their order,
// which no estimator reads. A ddps release records no number of owners, so
// unlike a γ-diagonal release's the parts' total cannot be checked: a
// missing part goes unnoticed, and only a path given twice is refused.

// ddpsPairs accumulates the reports of the two rounds, outputs 0..V:
// their counts C1 and C2 (the tally), in O(V) memory; or, for a count
// table (pairs), the counts of report pairs (o1, o2), O(observed pairs)
// memory — ~40 bytes a pair in a map, 160 MB for 4M owners of 1M values,
// which the estimators do not need.
type ddpsPairs struct {
	count map[[2]int]int64 // nil unless pairs
	t     *ddps.Tally
}

// newDDPSPairs counts for m's estimators, and the pairs too if pairs.
func newDDPSPairs(m *ddps.Mechanism, pairs bool) *ddpsPairs {
	p := &ddpsPairs{t: m.NewTally()}
	if pairs {
		p.count = map[[2]int]int64{}
	}
	return p
}

// add counts n more owners reporting (o1, o2); false on int64 overflow.
func (p *ddpsPairs) add(o1, o2 int, n int64) bool {
	if p.t.AddN(o1, o2, n) != nil { // outputs in range and n ≥ 0: countPairs checked
		return false
	}
	if p.count != nil {
		p.count[[2]int{o1, o2}] += n
	}
	return true
}

// countDDPSParts reads the first input (rel's, open as in) and every other
// one, after checking that it is a part of rel's release, into one tally,
// and the report pairs too if pairs (--tabulate).
func (o *Options) countDDPSParts(rel *ddpsRelease, in table.Reader, pairs bool) (*ddpsPairs, error) {
	p := newDDPSPairs(rel.mech, pairs)
	if err := rel.countPairs(o, in, p); err != nil {
		return nil, err
	}
	names, err := o.eachLocalPart(in, release.DDPSPartKeys, func(part table.Reader) error {
		r := *rel
		r.name = part.Name()
		return r.countPairs(o, part, p)
	})
	if err != nil {
		return nil, err
	}
	if p.t.N() == 0 {
		return nil, errNoReports(names)
	}
	return p, nil
}

// eachLocalPart opens every input after the first (in, already read) in
// turn, checks that it is not given twice and that its metadata items keys
// are the first's, and calls fn with it. It returns the inputs' names
// joined for a message.
func (o *Options) eachLocalPart(in table.Reader, keys []string, fn func(part table.Reader) error) (string, error) {
	names := []string{in.Name()}
	var more []string
	if len(o.Inputs) > 1 {
		more = o.Inputs[1:]
	}
	for i, path := range more {
		if j := slices.IndexFunc(o.Inputs[:i+1], func(q string) bool { return pramSameFile(q, path) }); j >= 0 {
			return "", cli.Usagef("%s is given twice (arguments %d and %d): give each part of the release once (a %s release records no number of rows, so estimate cannot check that the parts add up)", path, j+1, i+2, in.Meta()[release.KeyMechanism])
		}
		err := func() error {
			part, err := o.Streams.Open(path)
			if err != nil {
				return err
			}
			defer part.Close()
			if cli.CarryInsecureSeed(o.Streams, "estimate", part.Name(), part.Meta(), nil) {
				o.insecure = true
			}
			for _, key := range keys {
				a, okA := in.Meta()[key]
				b, okB := part.Meta()[key]
				if a != b || okA != okB {
					return fmt.Errorf("%s and %s are not parts of the same release: their metadata item %q differs (%s vs %s); estimate each release on its own", in.Name(), part.Name(), key, pramShort(a, okA), pramShort(b, okB))
				}
			}
			names = append(names, part.Name())
			return fn(part)
		}()
		if err != nil {
			return "", err
		}
	}
	return strings.Join(names, " + "), nil
}

// countPairs reads one input — released rows, or a count table's counted
// pairs — into p. A Parquet file is read again with the reports as
// dictionaries (reopenAsDictionaries), each looked up once per row group's
// dictionary: as strings, a batch of them took ~28 MB at 1M values.
// Memory: one batch.
func (rel *ddpsRelease) countPairs(o *Options, in table.Reader, p *ddpsPairs) error {
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
	if d, err := reopenAsDictionaries(o, in, names[:2]); err != nil {
		return err
	} else if d != nil {
		defer d.Close()
		in = d
	}
	// A report's output: ⊥0, or a value by the codebook's index
	// (readDDPSRelease checked that the values are its categories).
	errNotOutput := errors.New("not an output")
	output := func(s string) (uint32, error) {
		if s == rel.noneToken {
			return 0, nil
		}
		x, ok := rel.col.LabelIndex(s)
		if !ok || rel.output(x) < 0 {
			return 0, errNotOutput
		}
		return uint32(rel.output(x)), nil
	}
	coders := [2]*table.Coder{table.NewCoder(output), table.NewCoder(output)}
	var reports [2][]uint32
	// A part may be empty (countDDPSParts refuses an empty whole).
	return scanColumns(in, names, missing, nil, func(rec arrow.RecordBatch, cols []int, first int64) error {
		n := int(rec.NumRows())
		for r := range reports {
			reports[r] = slices.Grow(reports[r][:0], n)[:n]
			if i, _ := coders[r].Codes(reports[r], rec.Column(cols[r]), 0); i >= 0 {
				s := table.ValuesOf(rec.Column(cols[r])).String(i)
				return &table.DataError{File: rel.name, Row: first + int64(i), Column: names[r],
					Err: fmt.Errorf("%s is not an output of this release (%s or a category of %s); the file was edited: randomize the original table again", table.QuoteCell(s), rel.noneToken, rel.column)}
			}
		}
		var cnt table.Values
		if isCounts {
			cnt = table.ValuesOf(rec.Column(cols[2]))
		}
		for i := range n {
			row := first + int64(i)
			c := int64(1)
			if isCounts {
				s := cnt.String(i)
				v, err := strconv.ParseInt(s, 10, 64)
				if err != nil || v < 0 {
					return &table.DataError{File: rel.name, Row: row, Column: release.CountColumn,
						Err: fmt.Errorf("count %s is not a non-negative integer: the count table was edited; tabulate the release again with estimate --tabulate", table.QuoteCell(s))}
				}
				c = v
			}
			if !p.add(int(reports[0][i]), int(reports[1][i]), c) {
				return &table.DataError{File: rel.name, Row: row, Column: release.CountColumn,
					Err: fmt.Errorf("the counts add up to more than %d reports: the count table was edited; tabulate the release again with estimate --tabulate", int64(math.MaxInt64))}
			}
		}
		return nil
	})
}

// checkDDPSTabulate refuses, with --tabulate, the flags of an estimate.
func (o *Options) checkDDPSTabulate() error {
	return o.checkLocalTabulate("json", "truth", "round-two")
}

// checkBitflipTabulate refuses, with --tabulate, the flags of an estimate.
func (o *Options) checkBitflipTabulate() error {
	return o.checkLocalTabulate("json", "truth", "level", "columns", "anonymity", "anonymity-samples", "anonymity-max-bits")
}

// checkLocalTabulate refuses, with --tabulate, the flags names.
func (o *Options) checkLocalTabulate(names ...string) error {
	if !o.Tabulate {
		return nil
	}
	for _, name := range names {
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
	w, err := o.createCountTable(schema, meta)
	if err != nil {
		return err
	}
	defer w.Abort()
	rw := table.NewRowWriter(w, schema, 0)
	defer rw.Release()
	label := rel.label
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

// countBitflipParts reads the first input (rel's, open as in) and every
// other one, after checking that it is a part of rel's release, into one
// tally.
func (o *Options) countBitflipParts(rel *bitflipRelease, in table.Reader) (*bitflip.Tally, error) {
	t := rel.mech.NewTally()
	if err := rel.countBits(in, t); err != nil {
		return nil, err
	}
	names, err := o.eachLocalPart(in, release.BitflipPartKeys, func(part table.Reader) error {
		r := *rel
		r.name = part.Name()
		return r.countBits(part, t)
	})
	if err != nil {
		return nil, err
	}
	if t.N == 0 {
		return nil, errNoReports(names)
	}
	return t, nil
}

// countBits adds one input's reports — rows of bits, or a count table's
// rows of counts — to t. Memory: one batch.
func (rel *bitflipRelease) countBits(in table.Reader, t *bitflip.Tally) error {
	names := make([]string, rel.layout.Width())
	for i := range names {
		names[i] = rel.layout.BitName(i)
	}
	isCounts := release.IsCountTable(in.Meta())
	if isCounts {
		names = append(names, release.CountColumn)
	}
	missing := func(name string) error {
		if name == release.CountColumn {
			return fmt.Errorf("%s is a count table without a %q column; tabulate the release again with estimate --tabulate", rel.name, name)
		}
		return fmt.Errorf("%s has no bit column %q, which its layout lists; the release was edited: randomize the original table again", rel.name, name)
	}
	L := rel.layout.Width()
	// A part may be empty (countBitflipParts refuses an empty whole).
	return scanColumns(in, names, missing, nil, func(rec arrow.RecordBatch, cols []int, first int64) error {
		if !isCounts {
			for i, c := range cols {
				ones, bad := bitflipCountOnes(rec.Column(c))
				if bad >= 0 {
					v := table.ValuesOf(rec.Column(c)).String(bad)
					return &table.DataError{File: rel.name, Row: first + int64(bad), Column: names[i],
						Err: fmt.Errorf("value %s is not a bit (0 or 1); the release was edited: randomize the original table again", table.QuoteCell(v))}
				}
				t.Ones[i] += ones
			}
			t.N += rec.NumRows()
			return nil
		}
		vals := make([]table.Values, len(cols))
		for i, c := range cols {
			vals[i] = table.ValuesOf(rec.Column(c))
		}
		edited := "the count table was edited; tabulate the release again with estimate --tabulate"
		for r := range int(rec.NumRows()) {
			row := first + int64(r)
			n, err := strconv.ParseInt(vals[L].String(r), 10, 64)
			if err != nil || n < 0 {
				return &table.DataError{File: rel.name, Row: row, Column: release.CountColumn,
					Err: fmt.Errorf("count %s is not a non-negative integer: %s", table.QuoteCell(vals[L].String(r)), edited)}
			}
			if n > math.MaxInt64-t.N {
				return &table.DataError{File: rel.name, Row: row, Column: release.CountColumn,
					Err: fmt.Errorf("the counts add up to more than %d reports: %s", int64(math.MaxInt64), edited)}
			}
			for i := range L {
				k, err := strconv.ParseInt(vals[i].String(r), 10, 64)
				if err != nil || k < 0 || k > n {
					return &table.DataError{File: rel.name, Row: row, Column: names[i],
						Err: fmt.Errorf("%s is not a number of ones in [0, %d] (the row's count): %s", table.QuoteCell(vals[i].String(r)), n, edited)}
				}
				t.Ones[i] += k // ≤ t.N, which does not overflow
			}
			t.N += n
		}
		return nil
	})
}

// writeBitflipCountTable writes t as a count table of one row: the bit
// columns with their numbers of ones and CountColumn with the number of
// reports, with the release's metadata (meta, the first input's) marked as
// a count table.
func (o *Options) writeBitflipCountTable(rel *bitflipRelease, meta table.Meta, t *bitflip.Tally) error {
	L := rel.layout.Width()
	fields := make([]arrow.Field, L+1)
	for i := range L {
		fields[i] = arrow.Field{Name: rel.layout.BitName(i), Type: arrow.PrimitiveTypes.Int64}
	}
	fields[L] = arrow.Field{Name: release.CountColumn, Type: arrow.PrimitiveTypes.Int64}
	schema := arrow.NewSchema(fields, nil)
	w, err := o.createCountTable(schema, meta)
	if err != nil {
		return err
	}
	defer w.Abort()
	rw := table.NewRowWriter(w, schema, 0)
	defer rw.Release()
	for i := range L {
		rw.Int64(i, t.Ones[i])
	}
	rw.Int64(L, t.N)
	if err := rw.EndRow(); err != nil {
		return err
	}
	if err := rw.Flush(); err != nil {
		return err
	}
	return w.Commit()
}
