package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/table"
)

// adult is the Adult table reduced to codebook value indexes: cols[name][row]
// is the index of the row's value in column name's codebook. Missing values
// ("?") are a category of their own (SPEC §2), as the tools do by default.
type adult struct {
	n    int
	cb   *codebook.Codebook
	cols map[string][]uint32
}

// column returns the value indexes and the codebook of a loaded column.
func (a *adult) column(name string) ([]uint32, *codebook.Column) {
	c, _ := a.cb.Column(name)
	return a.cols[name], c
}

// loadAdult reads the named columns of the table at path (CSV, Parquet or
// Arrow, as pkg/table detects) and encodes them with the codebook file.
func loadAdult(path, codebookPath string, names []string) (*adult, error) {
	cb, err := codebook.Load(codebookPath)
	if err != nil {
		return nil, fmt.Errorf("loadAdult: %w", err)
	}
	r, err := table.Open(path, table.ReadOptions{})
	if err != nil {
		return nil, fmt.Errorf("loadAdult: %w", err)
	}
	defer r.Close()
	field := make([]int, len(names))
	enc := make([]*codebook.Encoder, len(names))
	for j, name := range names {
		idx := r.Schema().FieldIndices(name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("loadAdult: %s has no column %q", table.DisplayName(path), name)
		}
		field[j] = idx[0]
		c, ok := cb.Column(name)
		if !ok {
			return nil, fmt.Errorf("loadAdult: codebook %s has no column %q", codebookPath, name)
		}
		if enc[j], err = c.Encoder(codebook.Policy{}); err != nil {
			return nil, fmt.Errorf("loadAdult: %w", err)
		}
	}
	a := &adult{cb: cb, cols: make(map[string][]uint32, len(names))}
	out := make([][]uint32, len(names))
	for {
		batch, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("loadAdult: %w", err)
		}
		for j := range names {
			v := table.ValuesOf(batch.Column(field[j]))
			for i := range v.Len() {
				x, err := enc[j].Index(v.String(i))
				if err != nil {
					return nil, fmt.Errorf("loadAdult: %s row %d: %w", table.DisplayName(path), a.n+i+1, err)
				}
				out[j] = append(out[j], x)
			}
		}
		a.n += int(batch.NumRows())
	}
	if a.n == 0 {
		return nil, fmt.Errorf("loadAdult: %s has no rows", table.DisplayName(path))
	}
	for j, name := range names {
		a.cols[name] = out[j]
	}
	return a, nil
}
