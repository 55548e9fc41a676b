// Package report builds pramkit's HTML report: one self-contained page
// that says, for each output file of the toolchain, what it is, how
// private it is and how accurate its statistics are, with charts (package
// chart) and copyable tables.
//
// It reads files only through the stages' contracts: table.Open, the
// release package's Decode structs, and the estimators of packages
// estimate, pram, bitflip, ddps, anonymize and countquery, so every number
// in a report is the one the estimate tool would print for the same file.
package report

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/ledger"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// Options say what to report on.
type Options struct {
	Files []string
	// Truth are original tables (--truth): true distributions and counts
	// are shown next to the estimates. A γ-diagonal release reads each
	// column from the first file that has it, joining the files by
	// position; the other kinds read the first file with all their
	// columns.
	Truth []string
	// Queries is a file of count queries (estimate --queries' format) to
	// answer on anonymized releases.
	Queries string
	// Ledger is a release ledger (perturb --ledger) whose entries for a
	// γ-diagonal release's sample are listed; "" lists none.
	Ledger string
	// Codebook is the codebook of the non-sensitive columns that --queries
	// name (estimate --codebook); "" reads their values as text.
	Codebook string
	// Groups is the sensitive table of an anatomy release; "" means the
	// file its metadata names, next to the release.
	Groups string
	// Level is the intervals' coverage (0.95).
	Level float64
	// RelError and TE are the relative error ε and the error probability
	// T_E of the anonymize guarantees (Definition 5, Lemma 4).
	RelError, TE float64
	// Version is the pramkit writing the report.
	Version string
	// Open opens a table; nil means table.Open.
	Open func(path string, opt table.ReadOptions) (table.Reader, error)
}

// MaxCells bounds the joint domain a report estimates on: the counts,
// estimates and truth are held densely.
const MaxCells = 1 << 20

// Build reads every file and returns the report.
func Build(o Options) (*Report, error) {
	if o.Open == nil {
		o.Open = table.Open
	}
	if o.Level == 0 {
		o.Level = 0.95
	}
	if o.RelError == 0 {
		o.RelError = 0.2
	}
	if o.TE == 0 {
		o.TE = 0.02
	}
	rep := &Report{Title: "pramkit release report", Version: o.Version}
	for _, f := range o.Files {
		s, err := o.section(f)
		if err != nil {
			return nil, err
		}
		rep.Sections = append(rep.Sections, s)
	}
	if len(rep.Sections) == 1 {
		rep.Title = "pramkit report: " + rep.Sections[0].File
	}
	return rep, nil
}

// section reads one file and describes it according to its stage and
// mechanism.
func (o *Options) section(path string) (*Section, error) {
	if table.IsStdio(path) {
		return nil, fmt.Errorf("report reads files, not standard input: give the file's path")
	}
	if key, kind := table.IsKeyMaterial(path); key {
		return nil, fmt.Errorf("%s: %s; a report never reads key material: give the release, not its key", path, kind)
	}
	in, err := o.Open(path, table.ReadOptions{})
	if err != nil {
		return nil, err
	}
	defer in.Close()
	meta := in.Meta()
	if err := release.CheckContract(meta, in.Name()); err != nil {
		return nil, err
	}
	s := &Section{File: in.Name()}
	stage, mech := meta[release.KeyStage], meta[release.KeyMechanism]
	switch {
	case stage == release.StageKey:
		return nil, fmt.Errorf("%s is a key file: a report never reads key material; give the release, not its key", in.Name())
	case stage == release.StageSample:
		err = o.sample(s, in)
	case stage == release.StageEncrypt:
		err = o.encrypted(s, in)
	case mech == release.MechanismBitflip:
		err = o.bitflip(s, in)
	case mech == release.MechanismDDPS:
		err = o.ddps(s, in)
	case stage == release.StagePerturb:
		err = o.perturbed(s, in)
	case stage == release.StageDecrypt:
		err = o.decrypted(s, in)
	case meta[release.KeyTable] == release.TableAnatomyGroups:
		return nil, fmt.Errorf("%s is the sensitive table of an anatomy release: report on the row table anonymize wrote with it (its -o file); the sensitive table is found next to it", in.Name())
	case stage == release.StageAnonymize:
		err = o.anonymized(s, in, path)
	case stage == "":
		return nil, fmt.Errorf("%s has no pramkit metadata: give a file written by a pramkit tool (sample, encrypt, perturb, decrypt, anonymize, estimate --tabulate), with its .meta.json sidecar next to it", in.Name())
	default:
		return nil, fmt.Errorf("%s was written by %s (stage %q), which writes no release: give a file written by sample, encrypt, perturb, decrypt, anonymize or estimate --tabulate", in.Name(), stageTool(stage), stage)
	}
	if err != nil {
		return nil, err
	}
	s.Facts = append(s.Facts, common(meta)...)
	return s, nil
}

func stageTool(stage string) string {
	if stage == release.StageEstimate {
		return "estimate"
	}
	return "pramkit " + stage
}

// common are the facts every file carries: who wrote it and how.
func common(meta table.Meta) []Fact {
	var f []Fact
	if v := meta[release.KeyVersion]; v != "" {
		f = append(f, Fact{"written by pramkit", v})
	}
	if v := meta[release.KeyContract]; v != "" {
		f = append(f, Fact{"release contract version", v})
	}
	if v := meta[release.KeyOrder]; v != "" {
		f = append(f, Fact{"row order", v})
	}
	if meta[release.KeyInsecureSeed] == "true" {
		f = append(f, Fact{"insecure seed", "yes: this file was made with --seed --insecure-seed, so anyone who knows the seed can undo its randomness. For tests only: do not publish it"})
	}
	if v := meta[release.KeyFingerprint]; v != "" {
		f = append(f, Fact{"sample fingerprint", v})
	}
	return f
}

// codebookFacts names the codebook's hash (codebook.Codebook.Hash: SHA-256
// of its canonical form), which identifies the labels a release was made
// with.
func codebookFacts(cb *codebook.Codebook) []Fact {
	if cb == nil {
		return nil
	}
	return []Fact{{"codebook hash (SHA-256)", cb.Hash()}}
}

// ledgerBlock lists the ledger's entries for the sample fingerprint fp.
func (o *Options) ledgerBlock(fp string) (*Block, error) {
	if o.Ledger == "" || fp == "" {
		return nil, nil
	}
	if _, err := os.Stat(o.Ledger); err != nil {
		return nil, fmt.Errorf("--ledger %s: %v; give the ledger perturb wrote (perturb --ledger FILE, by default ~/.local/state/pramkit/releases.jsonl)", o.Ledger, errors.Unwrap(err))
	}
	l, err := ledger.Open(o.Ledger, nil)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	entries, err := l.Lookup(fp)
	if err != nil {
		return nil, err
	}
	t := &Table{Caption: "Release ledger: releases of this sample", Head: []string{"release", "time", "γ", "ε", "composed ε", "output", "pramkit"},
		Numeric: []bool{true, false, true, true, true, false, false}}
	for _, e := range entries {
		t.Rows = append(t.Rows, []string{strconv.Itoa(e.Releases), e.Time.UTC().Format("2006-01-02 15:04:05Z"), num(e.Gamma), num(e.Epsilon), num(e.EpsilonComposed), e.Output, e.ToolVersion})
	}
	if len(entries) == 0 {
		t.Note = "The ledger " + o.Ledger + " records no release of this sample."
	}
	return &Block{Heading: "Release ledger", Table: t}, nil
}

// num formats a number for reading: integers in full, 4 significant
// digits otherwise (one decimal from 1000 on, never an exponent there).
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return "–"
	case v == math.Trunc(v) && a < 1e15:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
}

// share formats a probability with 4 decimals.
func share(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// columnIndex finds the columns names in schema; missing lists those
// absent.
func columnIndex(schema *arrow.Schema, names []string) (idx []int, missing []string) {
	idx = make([]int, len(names))
	for j, n := range names {
		is := schema.FieldIndices(n)
		if len(is) == 0 {
			missing = append(missing, n)
			continue
		}
		idx[j] = is[0]
	}
	return idx, missing
}

// scanRows calls fn for every row of in with the values of the named
// columns and the row's weight: the count column's value in a count table
// (estimate --tabulate), else 1.
func scanRows(in table.Reader, names []string, fn func(vals []table.Values, i int, w int64, row int64) error) error {
	idx, missing := columnIndex(in.Schema(), names)
	if len(missing) > 0 {
		return fmt.Errorf("%s: column %q is missing, though the metadata names it; the file was edited: write it again with the tool that made it", in.Name(), missing[0])
	}
	count := -1
	if release.IsCountTable(in.Meta()) {
		ci, miss := columnIndex(in.Schema(), []string{release.CountColumn})
		if len(miss) > 0 {
			return fmt.Errorf("%s: a count table without its %q column; write it again with estimate --tabulate", in.Name(), release.CountColumn)
		}
		count = ci[0]
	}
	vals := make([]table.Values, len(names))
	return table.EachBatch(in, func(rec arrow.RecordBatch, first int64) error {
		for j, c := range idx {
			vals[j] = table.ValuesOf(rec.Column(c))
		}
		var cv table.Values
		if count >= 0 {
			cv = table.ValuesOf(rec.Column(count))
		}
		for i := range int(rec.NumRows()) {
			w := int64(1)
			if count >= 0 {
				var ok bool
				if w, ok = cv.Int(i); !ok || w < 0 {
					return &table.DataError{File: in.Name(), Row: first + int64(i), Column: release.CountColumn, Err: fmt.Errorf("count %s is not a whole number ≥ 0; write the count table again with estimate --tabulate", table.QuoteCell(cv.String(i)))}
				}
			}
			if err := fn(vals, i, w, first+int64(i)); err != nil {
				return err
			}
		}
		return nil
	})
}

// truthFile opens the first --truth file that has all the columns names;
// nil when no --truth was given.
func (o *Options) truthFile(names []string) (table.Reader, error) {
	if len(o.Truth) == 0 {
		return nil, nil
	}
	for _, p := range o.Truth {
		in, err := o.Open(p, table.ReadOptions{})
		if err != nil {
			return nil, err
		}
		if mech := in.Meta()[release.KeyMechanism]; mech != "" {
			in.Close()
			return nil, fmt.Errorf("--truth %s is a release (mechanism %s), not an original table; give the table the release was made from", in.Name(), mech)
		}
		if _, missing := columnIndex(in.Schema(), names); len(missing) == 0 {
			return in, nil
		}
		in.Close()
	}
	return nil, fmt.Errorf("--truth: no file among %s has all the columns %s; give the original table (or the curators' tables) with these columns", strings.Join(o.Truth, ", "), strings.Join(names, ","))
}

// truthCounts counts the joint values of columns names (each encoded with
// its codebook column) in the --truth files: dense counts over the joint
// domain, first column most significant. Each column is read from the
// first file that has it and the files are joined by position (row i of
// every file is the same person), as estimate --truth does with the
// curators' tables. nil without --truth.
func (o *Options) truthCounts(names []string, cols []*codebook.Column) ([]int64, int64, error) {
	if len(o.Truth) == 0 {
		return nil, 0, nil
	}
	var its []*rowIter
	defer func() {
		for _, it := range its {
			it.in.Close()
		}
	}()
	// where[j] is the reader and column of name j.
	type at struct{ it, col int }
	where := make([]at, len(names))
	found := 0
	for _, p := range o.Truth {
		if found == len(names) {
			break
		}
		in, err := o.Open(p, table.ReadOptions{})
		if err != nil {
			return nil, 0, err
		}
		if mech := in.Meta()[release.KeyMechanism]; mech != "" {
			in.Close()
			return nil, 0, fmt.Errorf("--truth %s is a release (mechanism %s), not an original table; give the table the release was made from", in.Name(), mech)
		}
		it := &rowIter{in: in}
		for j, n := range names {
			if where[j].it > 0 {
				continue
			}
			if is := in.Schema().FieldIndices(n); len(is) > 0 {
				it.cols = append(it.cols, is[0])
				where[j] = at{len(its) + 1, len(it.cols) - 1}
				found++
			}
		}
		if len(it.cols) == 0 {
			in.Close()
			continue
		}
		its = append(its, it)
	}
	if found < len(names) {
		var missing []string
		for j, w := range where {
			if w.it == 0 {
				missing = append(missing, names[j])
			}
		}
		return nil, 0, fmt.Errorf("--truth: no file among %s has the column %s; give the original table (or each curator's table, joined by position)", strings.Join(o.Truth, ", "), strings.Join(missing, ","))
	}
	size := int64(1)
	encs := make([]*codebook.Encoder, len(cols))
	for j, c := range cols {
		size *= int64(c.K())
		var err error
		if encs[j], err = c.Encoder(codebook.Policy{}); err != nil {
			return nil, 0, err
		}
	}
	counts := make([]int64, size)
	var total int64
	for {
		more := 0
		for _, it := range its {
			ok, err := it.next()
			if err != nil {
				return nil, 0, err
			}
			if ok {
				more++
			}
		}
		if more == 0 {
			break
		}
		if more < len(its) {
			var short, long *rowIter
			for _, it := range its {
				if it.done && short == nil {
					short = it
				} else if !it.done && long == nil {
					long = it
				}
			}
			return nil, 0, fmt.Errorf("--truth: %s has %d rows but %s has more; the files are joined by position: give the curators' tables for the same people in the same order", short.in.Name(), short.row, long.in.Name())
		}
		g := int64(0)
		for j, e := range encs {
			w := where[j]
			it := its[w.it-1]
			x, err := e.Index(it.vals[w.col].String(it.i))
			if err != nil {
				return nil, 0, &table.DataError{File: it.in.Name(), Row: it.row, Column: names[j], Err: err}
			}
			g = g*int64(cols[j].K()) + int64(x)
		}
		counts[g]++
		total++
	}
	return counts, total, nil
}

// rowIter reads a table row by row: the values of columns cols of the
// current row are vals[k].String(i).
type rowIter struct {
	in   table.Reader
	cols []int
	vals []table.Values
	i, n int
	row  int64 // 1-based number of the current row
	done bool
}

func (r *rowIter) next() (bool, error) {
	if r.done {
		return false, nil
	}
	r.i++
	for r.i >= r.n {
		rec, err := r.in.Next()
		if errors.Is(err, io.EOF) {
			r.done = true
			return false, nil
		}
		if err != nil {
			return false, err
		}
		r.vals = r.vals[:0]
		for _, c := range r.cols {
			r.vals = append(r.vals, table.ValuesOf(rec.Column(c)))
		}
		r.i, r.n = 0, int(rec.NumRows())
	}
	r.row++
	return true, nil
}

// sortedTop returns the indices of the n largest values (all when n ≥
// len), largest first; ties by index. A bounded heap of n: O(len·log n)
// time and O(n) memory, not a sort of all len (1M values at issue 11).
func sortedTop(v []float64, n int) []int {
	n = min(n, len(v))
	if n == 0 {
		return []int{}
	}
	h := &topHeap{v: v, idx: make([]int, 0, n)}
	for i := range v {
		switch {
		case len(h.idx) < n:
			heap.Push(h, i)
		case h.before(i, h.idx[0]):
			h.idx[0] = i
			heap.Fix(h, 0)
		}
	}
	slices.SortFunc(h.idx, func(a, b int) int {
		if h.before(a, b) {
			return -1
		}
		return 1
	})
	return h.idx
}

// topHeap is sortedTop's heap of the n best indices so far, the one
// listed last at its root.
type topHeap struct {
	v   []float64
	idx []int
}

// before says v[a] is listed before v[b]: larger, or equal with a lower
// index.
func (h *topHeap) before(a, b int) bool {
	return h.v[a] > h.v[b] || h.v[a] == h.v[b] && a < b
}

func (h *topHeap) Len() int           { return len(h.idx) }
func (h *topHeap) Less(i, j int) bool { return h.before(h.idx[j], h.idx[i]) }
func (h *topHeap) Swap(i, j int)      { h.idx[i], h.idx[j] = h.idx[j], h.idx[i] }
func (h *topHeap) Push(x any)         { h.idx = append(h.idx, x.(int)) }
func (h *topHeap) Pop() any           { panic("report: topHeap is never popped") }

// inOrder is 0, 1, …, n−1.
func inOrder(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}
