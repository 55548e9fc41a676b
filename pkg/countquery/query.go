package countquery

// The count-query language of estimate --query and --queries: a query is a
// conjunction 'col=value,col=value,…' (a backslash makes the next character
// literal), a --queries file a CSV with a column "query". The estimators of
// this package take the counts a caller gathers for the parsed conditions.

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/pramkit/pramkit/pkg/table"
)

// Cond is one col=value term of a count query.
type Cond struct {
	Col, Value string
}

// Query is one count query as the user wrote it.
type Query struct {
	Text  string // as given (trimmed)
	Conds []Cond // in the order written
	Line  int    // line in the --queries file, 0 for --query
}

// Where names a query in messages: "query 'a=b'" or "--queries q.csv line 4".
func (q *Query) Where(file string) string {
	if q.Line > 0 {
		return fmt.Sprintf("%s: line %d: query %s", file, q.Line, table.QuoteCell(q.Text))
	}
	return fmt.Sprintf("query %s", table.QuoteCell(q.Text))
}

// Parse parses 'col=value,col=value,…': conditions separated by
// commas, each a column name and a value separated by the first '='.
// White space around names and values is ignored; a backslash makes the
// next character literal ("a\,b" is the value a,b).
func Parse(s string) ([]Cond, error) {
	var conds []Cond
	var cur strings.Builder
	var col string
	haveEq := false
	end := func() error {
		v := strings.TrimSpace(cur.String())
		cur.Reset()
		if !haveEq {
			if v == "" {
				return errors.New("empty condition (two commas in a row, or a comma at an end); write col=value,col=value")
			}
			return fmt.Errorf("%s has no '=': write col=value", table.QuoteCell(v))
		}
		if col == "" {
			return fmt.Errorf("a condition has no column name before '=' (value %s)", table.QuoteCell(v))
		}
		if slices.ContainsFunc(conds, func(c Cond) bool { return c.Col == col }) {
			return fmt.Errorf("column %q appears twice; a count query holds one value per column", col)
		}
		conds = append(conds, Cond{Col: col, Value: v})
		col, haveEq = "", false
		return nil
	}
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty query; write col=value,col=value")
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			if i+1 == len(s) {
				return nil, errors.New("a backslash ends the query; write \\\\ for a literal backslash")
			}
			i++
			cur.WriteByte(s[i])
		case c == ',':
			if err := end(); err != nil {
				return nil, err
			}
		case c == '=' && !haveEq:
			col = strings.TrimSpace(cur.String())
			cur.Reset()
			haveEq = true
		default:
			cur.WriteByte(c)
		}
	}
	if err := end(); err != nil {
		return nil, err
	}
	return conds, nil
}

// ReadQueries reads a --queries file: CSV with a header row that has a
// column "query" (other columns are ignored). A file whose only column is
// "query" may leave its queries unquoted: the commas of a row are then
// part of its query.
func ReadQueries(path string, stdin io.Reader) ([]Query, error) {
	var r io.Reader = stdin
	name := "stdin"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("cannot read --queries %s: %w", path, unwrapPath(err))
		}
		defer f.Close()
		r, name = f, path
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s is empty: it needs a header row \"query\" and one query per row", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\ufeff")
	}
	col := slices.Index(header, "query")
	if col < 0 {
		return nil, fmt.Errorf("%s: the header row has no column \"query\" (it has %s); write \"query\" on the first line", name, strings.Join(header, ", "))
	}
	var out []Query
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		text := ""
		switch {
		case len(header) == 1:
			text = strings.Join(rec, ",")
		case col < len(rec):
			text = rec[col]
		default:
			return nil, fmt.Errorf("%s: line %d has %d fields, fewer than the header's %d", name, line, len(rec), len(header))
		}
		q := Query{Text: strings.TrimSpace(text), Line: line}
		if q.Conds, err = Parse(text); err != nil {
			return nil, fmt.Errorf("%s: line %d: %v", name, line, err)
		}
		out = append(out, q)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no queries: one per row under the header \"query\"", name)
	}
	return out, nil
}

// unwrapPath drops *os.PathError's operation and path, which the
// message names itself.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
