package estimate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"maps"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// The estimators of the local mechanisms (bitflip.go, ddps.go) write their
// results as the gamma-diagonal and count-query estimators do: the table
// through the table writer (CSV on standard output, any format with -o,
// the metadata carried along), and with --json a summary on standard
// output whose items the table's metadata carries too.

// localColumn is one column of a local report: text, or a number.
type localColumn struct {
	name  string
	float bool
}

// localReport is a table of estimates with its --json summary.
type localReport struct {
	// summary is what --json prints, but for its lists, which it leaves
	// null: the items the output's metadata takes (localSummaryMeta).
	summary func() any
	// lists are the summary's per-value lists, in the order of their
	// keys in it: --json writes them an element at a time where the
	// summary has "key":null (writeJSON). Built and marshalled whole, a
	// ddps release of 2M values had them take 65 MB, and 96 more as
	// JSON, for a peak RSS of 371 MB.
	lists   []jsonList
	columns []localColumn
	rows    iter.Seq[[]any] // string or float64 cells, as columns says
	meta    table.Meta      // items besides the summary's, or nil
}

// jsonList is a list of n elements of a --json summary under key; elem
// returns the i-th, a value encoding/json marshals.
type jsonList struct {
	key  string
	n    int
	elem func(i int) any
}

// writeJSON writes what json.Encoder (HTML left unescaped) writes for the
// summary with its lists filled in, without holding them: the summary
// is marshalled with each list null, and the k-th list's elements are
// written in place of the first "key":null after the (k−1)-th. A
// `"key":null` can only be an object's item (in a string value its
// quotes would be escaped), and the lists are given in their keys' order.
func (rep *localReport) writeJSON(out io.Writer) error {
	var skel bytes.Buffer
	enc := json.NewEncoder(&skel)
	enc.SetEscapeHTML(false) // labels such as ">50K" as they are
	if err := enc.Encode(rep.summary()); err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	rest := skel.Bytes()
	var elem bytes.Buffer
	ee := json.NewEncoder(&elem)
	ee.SetEscapeHTML(false)
	for _, l := range rep.lists {
		null := []byte(`"` + l.key + `":null`)
		at := bytes.Index(rest, null)
		if at < 0 {
			return fmt.Errorf("internal error: the --json summary has no %s", null)
		}
		w.Write(rest[:at])
		w.WriteString(`"` + l.key + `":[`)
		for i := range l.n {
			if i > 0 {
				w.WriteByte(',')
			}
			elem.Reset()
			if err := ee.Encode(l.elem(i)); err != nil {
				return err
			}
			w.Write(bytes.TrimSuffix(elem.Bytes(), []byte("\n")))
		}
		w.WriteByte(']')
		rest = rest[at+len(null):]
	}
	w.Write(rest)
	return w.Flush()
}

// checkLocalFlags refuses, before anything is read, what no local release
// takes: --json with -o - (the summary and the table would both go to
// standard output), --codebook (the release carries its codebook) and a
// second --truth (a release is made from one original table).
func (o *Options) checkLocalFlags(in table.Reader) error {
	switch {
	case o.JSON && o.cmd.Flags().Changed("output") && table.IsStdio(o.Output.Path):
		return cli.Usagef("--json prints the summary on standard output: give -o FILE for the table, or drop --json")
	case o.Codebook != "":
		return cli.Usagef("%s carries its codebook in its metadata: drop --codebook", in.Name())
	case len(o.Truth) > 1:
		return cli.Usagef("a %s release has one original table: give --truth once", in.Meta()[release.KeyMechanism])
	}
	return nil
}

// scanColumns calls fn with every batch of in, the indices of the columns
// names and the row number of the batch's first row (1-based). missing(name)
// is the error for an absent column, empty the one for a table without
// rows. Memory: one batch.
func scanColumns(in table.Reader, names []string, missing func(name string) error, empty error,
	fn func(rec arrow.RecordBatch, cols []int, first int64) error) error {
	cols := make([]int, len(names))
	for j, name := range names {
		idx := in.Schema().FieldIndices(name)
		if len(idx) == 0 {
			return missing(name)
		}
		cols[j] = idx[0]
	}
	err := table.EachBatch(in, func(rec arrow.RecordBatch, first int64) error { return fn(rec, cols, first) })
	if err != nil {
		return err
	}
	if in.RowsRead() == 0 {
		return empty
	}
	return nil
}

// errNoReports is the error for a release without rows.
func errNoReports(name string) error {
	return fmt.Errorf("%s has no reports (no data rows): nothing to estimate", name)
}

// scanTruth reads the original table given by --truth as scanColumns does,
// for the columns names the release was made from; fn also gets the
// table's name for errors about its rows. A release in its place is an
// error.
func (o *Options) scanTruth(path string, names []string, fn func(file string, rec arrow.RecordBatch, cols []int, first int64) error) error {
	in, err := o.Streams.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	if mech := in.Meta()[release.KeyMechanism]; mech != "" {
		return fmt.Errorf("--truth %s is a release (mechanism %s), not the original table; give the table that was randomized", in.Name(), mech)
	}
	missing := func(name string) error {
		return fmt.Errorf("--truth %s has no column %q: give the original table the release was made from", in.Name(), name)
	}
	return scanColumns(in, names, missing, fmt.Errorf("--truth %s has no data rows", in.Name()),
		func(rec arrow.RecordBatch, cols []int, first int64) error { return fn(in.Name(), rec, cols, first) })
}

// writeLocalReport prints the summary (--json) and writes the table: to -o
// FILE when given, else to standard output unless --json printed there.
func (o *Options) writeLocalReport(rep *localReport) error {
	if o.JSON {
		if err := rep.writeJSON(o.Streams.Out); err != nil {
			return err
		}
		if table.IsStdio(o.Output.Path) {
			return nil
		}
	}
	meta, err := localSummaryMeta(rep.summary())
	if err != nil {
		return err
	}
	maps.Copy(meta, rep.meta)
	meta[release.KeyStage] = release.StageEstimate
	fields := make([]arrow.Field, len(rep.columns))
	for j, c := range rep.columns {
		fields[j] = arrow.Field{Name: c.name, Type: arrow.BinaryTypes.String}
		if c.float {
			fields[j].Type = arrow.PrimitiveTypes.Float64
		}
	}
	o.markInsecureSeed(meta)
	schema := arrow.NewSchema(fields, nil)
	// The estimate is a small table for people: CSV unless asked otherwise.
	w, err := o.Streams.Create(o.Output, schema, meta, table.CSV, o.pramInputs())
	if err != nil {
		return err
	}
	defer w.Abort()
	rw := table.NewRowWriter(w, schema, 0)
	defer rw.Release()
	for row := range rep.rows {
		for j, cell := range row {
			if rep.columns[j].float {
				rw.Float64(j, cell.(float64))
			} else {
				rw.String(j, cell.(string))
			}
		}
		if err := rw.EndRow(); err != nil {
			return err
		}
	}
	if err := rw.Flush(); err != nil {
		return err
	}
	return w.Commit()
}

// localSummaryMeta returns the items of a --json summary as metadata:
// numbers, strings and booleans as --json writes them (numbers parse back
// exactly), the items of a nested object as "object_item". Lists are the
// rows of the table and stay out.
func localSummaryMeta(summary any) (table.Meta, error) {
	js, err := json.Marshal(summary)
	if err != nil {
		return nil, fmt.Errorf("summary: %w", err)
	}
	meta := table.Meta{}
	var add func(prefix string, obj []byte) error
	add = func(prefix string, obj []byte) error {
		var items map[string]json.RawMessage
		if err := json.Unmarshal(obj, &items); err != nil {
			return fmt.Errorf("summary: %w", err)
		}
		for k, v := range items {
			switch v[0] {
			case '[', 'n': // a list (table rows), or null
			case '{':
				if err := add(prefix+k+"_", v); err != nil {
					return err
				}
			case '"':
				var s string
				if err := json.Unmarshal(v, &s); err != nil {
					return fmt.Errorf("summary: %w", err)
				}
				meta[prefix+k] = s
			default:
				meta[prefix+k] = string(v)
			}
		}
		return nil
	}
	return meta, add("", js)
}
