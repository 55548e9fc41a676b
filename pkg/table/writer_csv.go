package table

import (
	"bufio"
	"encoding/csv"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

type csvWriter struct {
	w      *csv.Writer
	buf    *bufio.Writer
	row    []string
	values []Values
}

// newCSVWriter writes the header row, preceded by a "#pramkit" metadata line
// when the metadata has nowhere else to go (metaLine: a stream, no sidecar).
func newCSVWriter(s sink, schema *arrow.Schema, meta Meta, metaLine bool) (*csvWriter, error) {
	buf := bufio.NewWriterSize(s, 256<<10)
	if metaLine && len(meta) > 0 {
		b, err := encodeSidecar(meta)
		if err != nil {
			return nil, err
		}
		buf.WriteString(metaLinePrefix)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	w := csv.NewWriter(buf)
	header := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		header[i] = f.Name
	}
	if err := w.Write(header); err != nil {
		return nil, err
	}
	return &csvWriter{w: w, buf: buf, row: make([]string, len(header)), values: make([]Values, len(header))}, nil
}

func (c *csvWriter) write(rec arrow.RecordBatch) error {
	for j := range c.values {
		c.values[j] = ValuesOf(rec.Column(j))
	}
	n := int(rec.NumRows())
	for i := 0; i < n; i++ {
		for j := range c.row {
			c.row[j] = c.values[j].String(i)
		}
		if len(c.row) == 1 && c.row[0] == "" {
			// encoding/csv writes a lone empty field as a blank line, which
			// readers skip: quote it so the row survives.
			c.w.Flush()
			c.buf.WriteString("\"\"\n")
			continue
		}
		if err := c.w.Write(c.row); err != nil {
			return fmt.Errorf("writing CSV: %w", err)
		}
	}
	return c.w.Error()
}

func (c *csvWriter) close() error {
	c.w.Flush()
	if err := c.w.Error(); err != nil {
		return err
	}
	return c.buf.Flush()
}
