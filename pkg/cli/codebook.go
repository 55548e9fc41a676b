package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/table"
)

// CodebookFlags are the flags of a tool that maps values to category
// indexes: a declared codebook, or an explicit request to infer one.
type CodebookFlags struct {
	Path    string // --codebook FILE
	Infer   bool   // --infer-codebook
	Save    string // --save-codebook FILE: where an inferred codebook is written
	Missing string // --missing-token for inference

	// others is the declared file's columns that Load did not select,
	// until Others takes them.
	others *codebook.Codebook
}

// Others returns, once, the declared codebook's columns that Load did not
// select (nil when it selected them all, or with --infer-codebook): a
// stage may use them for more than what its output declares (anonymize
// carries such columns as codes). Taking them lets them go when the
// stage is done with them; Load parsed the file once.
func (c *CodebookFlags) Others() *codebook.Codebook {
	o := c.others
	c.others = nil
	return o
}

// AddCodebookFlags registers --codebook, --infer-codebook, --save-codebook
// and --missing-token.
func AddCodebookFlags(cmd *cobra.Command, c *CodebookFlags) {
	f := cmd.Flags()
	f.StringVar(&c.Path, "codebook", "", "codebook `FILE` declaring each column's categories (see README: Codebooks)")
	f.BoolVar(&c.Infer, "infer-codebook", false, "derive the codebook from the input instead (reads a file input twice). "+
		"This REVEALS the set of values present: prefer a codebook written from public documentation")
	f.StringVar(&c.Save, "save-codebook", "", "with --infer-codebook, also write the inferred codebook to `FILE` (share it with the other parties)")
	f.StringVar(&c.Missing, "missing-token", "", "with --infer-codebook, the `TOKEN` that marks a missing value (e.g. ?)")
}

// Load returns the codebook for columns of input: the declared one, or, with
// --infer-codebook, one inferred by reading input once (so input must be a
// file, which the caller then reads again). An inferred codebook is written
// to --save-codebook when given.
func (c *CodebookFlags) Load(s *Streams, input string, columns []string) (*codebook.Codebook, error) {
	switch {
	case c.Path != "" && c.Infer:
		return nil, Usagef("give either --codebook or --infer-codebook, not both")
	case c.Path != "":
		cb, err := codebook.Load(c.Path)
		if err != nil {
			return nil, err
		}
		if len(columns) == 0 {
			return cb, nil
		}
		sel, err := cb.Select(columns)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Path, err)
		}
		var rest []string
		for _, n := range cb.Names() {
			if !slices.Contains(columns, n) {
				rest = append(rest, n)
			}
		}
		if len(rest) > 0 {
			c.others, _ = cb.Select(rest)
		}
		return sel, nil
	case !c.Infer:
		return nil, Usagef("a codebook is needed: give --codebook FILE, or --infer-codebook to derive one from the data (which reveals the values present)")
	}
	if table.IsStdio(input) {
		return nil, Usagef("--infer-codebook reads the input twice: give a file, not standard input")
	}
	in, err := s.Open(input)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	names := columns
	if len(names) == 0 {
		for _, f := range in.Schema().Fields() {
			names = append(names, f.Name)
		}
	}
	idx := make([]int, len(names))
	for i, n := range names {
		j := in.Schema().FieldIndices(n)
		if len(j) == 0 {
			return nil, fmt.Errorf("%s has no column %q", in.Name(), n)
		}
		idx[i] = j[0]
	}
	inf, err := codebook.NewInferrer(names, codebook.InferOptions{Missing: c.Missing})
	if err != nil {
		return nil, err
	}
	row := make([]string, len(names))
	err = table.EachBatch(in, func(rec arrow.RecordBatch, first int64) error {
		vals := make([]table.Values, len(idx))
		for i, j := range idx {
			vals[i] = table.ValuesOf(rec.Column(j))
		}
		for r := 0; r < int(rec.NumRows()); r++ {
			for i := range vals {
				row[i] = vals[i].String(r)
			}
			if err := inf.Add(row); err != nil {
				return &table.DataError{File: in.Name(), Row: first + int64(r), Err: err}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	cb, err := inf.Codebook()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in.Name(), err)
	}
	if c.Save != "" {
		var b strings.Builder
		if err := cb.Write(&b); err != nil {
			return nil, err
		}
		// The categories come from the input's values: no more readable
		// than the input.
		if err := table.WriteFile(c.Save, []byte(b.String()), table.WriteOptions{Inputs: []string{input}, Flag: "--save-codebook"}); err != nil {
			return nil, err
		}
	}
	return cb, nil
}
