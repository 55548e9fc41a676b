package estimate

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/cli"
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
	summary any // what --json prints
	columns []localColumn
	rows    [][]any    // string or float64 cells, as columns says
	meta    table.Meta // items besides the summary's, or nil
}

// checkLocalOutput refuses --json with -o -: the summary and the table
// would both go to standard output.
func (o *Options) checkLocalOutput() error {
	if o.JSON && o.cmd.Flags().Changed("output") && table.IsStdio(o.Output.Path) {
		return cli.Usagef("--json prints the summary on standard output: give -o FILE for the table, or drop --json")
	}
	return nil
}

// writeLocalReport prints the summary (--json) and writes the table: to -o
// FILE when given, else to standard output unless --json printed there.
func (o *Options) writeLocalReport(rep *localReport) error {
	if o.JSON {
		enc := json.NewEncoder(o.Streams.Out)
		enc.SetEscapeHTML(false) // labels such as ">50K" as they are
		if err := enc.Encode(rep.summary); err != nil {
			return err
		}
		if table.IsStdio(o.Output.Path) {
			return nil
		}
	}
	meta, err := localSummaryMeta(rep.summary)
	if err != nil {
		return err
	}
	maps.Copy(meta, rep.meta)
	meta["stage"] = "estimate"
	fields := make([]arrow.Field, len(rep.columns))
	for j, c := range rep.columns {
		fields[j] = arrow.Field{Name: c.name, Type: arrow.BinaryTypes.String}
		if c.float {
			fields[j].Type = arrow.PrimitiveTypes.Float64
		}
	}
	schema := arrow.NewSchema(fields, nil)
	// The estimate is a small table for people: CSV unless asked otherwise.
	w, err := o.Streams.Create(o.Output, schema, meta, table.CSV, append([]string{o.Input}, o.Truth...))
	if err != nil {
		return err
	}
	defer w.Abort()
	bb := table.NewBatchBuilder(schema)
	defer bb.Release()
	flush := func() error {
		rec := bb.NewBatch()
		defer rec.Release()
		return w.Write(rec)
	}
	for _, row := range rep.rows {
		for j, cell := range row {
			if rep.columns[j].float {
				bb.Float64(j, cell.(float64))
			} else {
				bb.String(j, cell.(string))
			}
		}
		bb.EndRow()
		if bb.Rows() == table.DefaultBatchSize {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if bb.Rows() > 0 {
		if err := flush(); err != nil {
			return err
		}
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
		return nil, fmt.Errorf("estimate: summary: %w", err)
	}
	meta := table.Meta{}
	var add func(prefix string, obj []byte) error
	add = func(prefix string, obj []byte) error {
		var items map[string]json.RawMessage
		if err := json.Unmarshal(obj, &items); err != nil {
			return fmt.Errorf("estimate: summary: %w", err)
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
					return fmt.Errorf("estimate: summary: %w", err)
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
