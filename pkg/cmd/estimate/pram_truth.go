package estimate

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/estimate"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// pramTruthFile is one --truth table and the release columns taken from it.
type pramTruthFile struct {
	r     table.Reader
	cols  []pramTruthCol
	idCol int // --truth-id column's position, -1 when joining by position
	vals  []table.Values
	ids   table.Values
	off   int // next row of the current batch
	n     int // rows in the current batch
	done  bool
	rows  int64
}

// pramTruthCol reads one release column from a truth file: labels as decrypt
// writes them, or raw values as the curators had them (numbers bucketed by
// the codebook's cuts, missing tokens), and adds x·stride to the joint
// value.
type pramTruthCol struct {
	fileCol int
	name    string
	labels  labelCode
	enc     *codebook.Encoder
	stride  uint64
}

func (c *pramTruthCol) index(s string) (uint32, error) {
	if x, ok := c.labels(s); ok {
		return x, nil
	}
	if x, err := c.enc.Index(s); err == nil {
		return x, nil
	}
	return 0, fmt.Errorf("value %s is not in the codebook of the column: --truth must be the original table the curators sampled, whose values the codebook covers", table.QuoteCell(s))
}

// addPRAMTruth reads the --truth tables, and sets the true type t and the ℓ2
// error of the estimated domain and of the printed marginal.
func (o *Options) addPRAMTruth(rel *pramRelease, res *pramResult) error {
	t, err := o.readPRAMTruth(rel)
	if err != nil {
		return err
	}
	views := []*pramView{&res.fit}
	if res.marginal {
		views = append(views, res.out)
	}
	for _, v := range views {
		tv := t
		if len(v.cols) < rel.dom.Dims() {
			if tv, _, err = estimate.Marginal(t, rel.dom, v.cols); err != nil {
				return err
			}
		}
		v.truth = &tv
		if v.l2, err = estimate.L2(v.est, tv); err != nil {
			return err
		}
	}
	return nil
}

// readPRAMTruth returns the joint type t of the full table over the release's
// domain, from the --truth tables joined by position or by --truth-id.
// Memory: O(distinct joint values) by position, plus O(n) ids by id.
func (o *Options) readPRAMTruth(rel *pramRelease) (estimate.Vector, error) {
	stdin := table.IsStdio(o.Input)
	for _, p := range o.Truth {
		if table.IsStdio(p) {
			if stdin {
				return estimate.Vector{}, cli.Usagef("standard input (-) can be only one of the release and the --truth files")
			}
			stdin = true
		}
	}
	var files []*pramTruthFile
	defer func() {
		for _, f := range files {
			f.r.Close()
		}
	}()
	stride := pramStrides(rel.dom)
	codes := rel.labelCodes()
	taken := make([]string, len(rel.names)) // file that supplies column j
	for _, p := range o.Truth {
		r, err := o.Streams.Open(p)
		if err != nil {
			return estimate.Vector{}, err
		}
		f := &pramTruthFile{r: r, idCol: -1}
		files = append(files, f)
		schema := r.Schema()
		if o.pramOpts().TruthID != "" {
			idx := schema.FieldIndices(o.pramOpts().TruthID)
			if len(idx) == 0 {
				return estimate.Vector{}, fmt.Errorf("mismatched --truth: %s has no id column %q (its columns: %s); every --truth file needs the --truth-id column", r.Name(), o.pramOpts().TruthID, strings.Join(pramFieldNames(r), ", "))
			}
			f.idCol = idx[0]
		}
		for j, name := range rel.names {
			idx := schema.FieldIndices(name)
			if taken[j] != "" || len(idx) == 0 {
				continue
			}
			taken[j] = r.Name()
			col := &rel.cb.Columns[j]
			enc, err := col.Encoder(codebook.Policy{})
			if err != nil {
				return estimate.Vector{}, err
			}
			f.cols = append(f.cols, pramTruthCol{fileCol: idx[0], name: name, labels: codes[j], enc: enc, stride: stride[j]})
		}
		if len(f.cols) == 0 {
			o.pramWarnf("--truth %s has none of the release's columns still needed (%s); it is not used", r.Name(), strings.Join(rel.names, ", "))
		}
	}
	var missing []string
	for j, t := range taken {
		if t == "" {
			missing = append(missing, rel.names[j])
		}
	}
	if len(missing) > 0 {
		return estimate.Vector{}, fmt.Errorf("mismatched --truth: no --truth file has column %s; give the curators' original tables, which together hold every column of the release (%s)", strings.Join(missing, ", "), strings.Join(rel.names, ", "))
	}
	used := files[:0:0]
	for _, f := range files {
		if len(f.cols) > 0 {
			used = append(used, f)
		}
	}
	if o.pramOpts().TruthID == "" && len(used) > 1 && rel.meta[release.KeySampleID] == release.SampleIDColumn {
		// Curators who sampled by id may hold their rows in different
		// orders, and a join by position would then mix people silently.
		o.pramWarnf("%s was sampled by an id column: the --truth files are joined by position, so they must list the same people in the same order; otherwise pass --truth-id COL", rel.name)
	}
	acc := map[uint64]int64{}
	var rows int64
	var err error
	if o.pramOpts().TruthID != "" {
		rows, err = pramJoinByID(used, o.pramOpts().TruthID, acc)
	} else {
		rows, err = pramJoinByPosition(used, acc)
	}
	if err != nil {
		return estimate.Vector{}, err
	}
	if rows != rel.n {
		return estimate.Vector{}, fmt.Errorf("mismatched --truth: the tables have %d rows but the release was sampled from n = %d; give the full original tables, before sampling", rows, rel.n)
	}
	c := pramCountsFromMap(rel.dom.Size(), acc)
	t := estimate.Vector{K: c.K, Index: c.Index, Value: make([]float64, len(c.Index))}
	for i, n := range c.Count {
		t.Value[i] = float64(n) / float64(rows)
	}
	return t, nil
}

// next makes the file's current batch non-empty; false at the end.
func (f *pramTruthFile) next() (bool, error) {
	for f.off == f.n {
		if f.done {
			return false, nil
		}
		rec, err := f.r.Next()
		if errors.Is(err, io.EOF) {
			f.done = true
			return false, nil
		}
		if err != nil {
			return false, err
		}
		f.vals = f.vals[:0]
		for _, c := range f.cols {
			f.vals = append(f.vals, table.ValuesOf(rec.Column(c.fileCol)))
		}
		if f.idCol >= 0 {
			f.ids = table.ValuesOf(rec.Column(f.idCol))
		}
		f.off, f.n = 0, int(rec.NumRows())
	}
	return true, nil
}

// add adds the file's part of the joint value of its row i (of the
// current batch) to g.
func (f *pramTruthFile) add(i int, g *uint64) error {
	for k := range f.cols {
		c := &f.cols[k]
		x, err := c.index(f.vals[k].String(i))
		if err != nil {
			return &table.DataError{File: f.r.Name(), Row: f.rows + int64(i-f.off) + 1, Column: c.name, Err: err}
		}
		*g += uint64(x) * c.stride
	}
	return nil
}

// pramJoinByPosition reads the files in lockstep: row i of each is the same
// person. Memory: one batch per file.
func pramJoinByPosition(files []*pramTruthFile, acc map[uint64]int64) (int64, error) {
	var rows int64
	buf := make([]uint64, 0, table.DefaultBatchSize)
	for {
		live, ended := 0, -1
		for k, f := range files {
			ok, err := f.next()
			if err != nil {
				return 0, err
			}
			if ok {
				live++
			} else {
				ended = k
			}
		}
		if live == 0 {
			return rows, nil
		}
		if ended >= 0 {
			other := files[0]
			for _, f := range files {
				if !f.done {
					other = f
				}
			}
			return 0, fmt.Errorf("mismatched --truth: %s ends after %d rows but %s has more; the curators' tables must hold the same people in the same order (or join them with --truth-id COL)", files[ended].r.Name(), files[ended].rows, other.r.Name())
		}
		c := files[0].n - files[0].off
		for _, f := range files[1:] {
			c = min(c, f.n-f.off)
		}
		buf = buf[:c]
		clear(buf)
		for _, f := range files {
			for i := range c {
				if err := f.add(f.off+i, &buf[i]); err != nil {
					return 0, err
				}
			}
			f.off += c
			f.rows += int64(c)
		}
		for _, g := range buf {
			acc[g]++
		}
		rows += int64(c)
	}
}

// pramIDEntry is one person's partial joint value and the files that had them.
type pramIDEntry struct {
	g    uint64
	seen uint64 // bit k: files[k] had this id
}

// pramJoinByID joins the files on the id column. Memory: O(n) ids.
func pramJoinByID(files []*pramTruthFile, idName string, acc map[uint64]int64) (int64, error) {
	if len(files) > 64 {
		return 0, cli.Usagef("--truth-id joins at most 64 --truth files, got %d", len(files))
	}
	ids := map[string]pramIDEntry{}
	for k, f := range files {
		for {
			ok, err := f.next()
			if err != nil {
				return 0, err
			}
			if !ok {
				break
			}
			for i := f.off; i < f.n; i++ {
				id := f.ids.String(i)
				row := f.rows + int64(i-f.off) + 1
				if id == "" {
					return 0, &table.DataError{File: f.r.Name(), Row: row, Column: idName, Err: errors.New("the id is empty; every row of a --truth file needs an id")}
				}
				e, ok := ids[id]
				if ok && e.seen&(1<<k) != 0 {
					return 0, &table.DataError{File: f.r.Name(), Row: row, Column: idName, Err: fmt.Errorf("id %s occurs twice; ids must be unique", table.QuoteCell(id))}
				}
				if !ok {
					if k > 0 {
						return 0, &table.DataError{File: f.r.Name(), Row: row, Column: idName, Err: fmt.Errorf("mismatched --truth: id %s is not in %s; the curators' tables must hold the same people", table.QuoteCell(id), files[0].r.Name())}
					}
					id = strings.Clone(id)
				}
				if err := f.add(i, &e.g); err != nil {
					return 0, err
				}
				e.seen |= 1 << k
				ids[id] = e
			}
			f.rows += int64(f.n - f.off)
			f.off = f.n
		}
	}
	all := uint64(1)<<len(files) - 1
	for id, e := range ids {
		if e.seen != all {
			for k, f := range files {
				if e.seen&(1<<k) == 0 {
					return 0, fmt.Errorf("mismatched --truth: id %s is in %s but not in %s; the curators' tables must hold the same people", table.QuoteCell(id), files[0].r.Name(), f.r.Name())
				}
			}
		}
		acc[e.g]++
	}
	return int64(len(ids)), nil
}
