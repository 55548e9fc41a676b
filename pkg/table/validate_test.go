package table

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func int32Buf(v ...int32) *memory.Buffer {
	return memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(v))
}

func oneColumn(a arrow.Array) arrow.RecordBatch {
	s := arrow.NewSchema([]arrow.Field{{Name: "c", Type: a.DataType()}}, nil)
	return array.NewRecordBatch(s, []arrow.Array{a}, int64(a.Len()))
}

// TestValidateBatch builds the corrupt columns a damaged file decodes to,
// each of which makes Values.String panic or read the wrong bytes.
func TestValidateBatch(t *testing.T) {
	str := func(offs ...int32) arrow.Array {
		d := array.NewData(arrow.BinaryTypes.String, len(offs)-1,
			[]*memory.Buffer{nil, int32Buf(offs...), memory.NewBufferBytes([]byte("abcdef"))}, nil, 0, 0)
		return array.MakeFromData(d)
	}
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	dict := func(idx ...int32) arrow.Array {
		d := array.NewData(dictType, len(idx), []*memory.Buffer{nil, int32Buf(idx...)}, nil, 0, 0)
		d.SetDictionary(str(0, 1, 3).Data())
		return array.MakeFromData(d)
	}
	for _, c := range []struct {
		name string
		col  arrow.Array
		want string // "" for valid
	}{
		{"good strings", str(0, 1, 3, 6), ""},
		{"decreasing offsets", str(0, 4, 2, 6), "decrease"},
		{"negative offset", str(0, -1, 2, 6), "outside"},
		{"offset past the data", str(0, 1, 9, 6), "outside"},
		{"good dictionary", dict(0, 1, 1), ""},
		{"index past the dictionary", dict(0, 2, 1), "dictionary entry 2 of 2"},
		{"negative index", dict(0, -1), "dictionary entry"},
	} {
		err := validateBatch(oneColumn(c.col))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// Arrow's utf8 type promises UTF-8, but the CSV reader takes bytes as they
// come, so a Latin-1 CSV that an earlier tool turned into Arrow must read
// back: validation checks offsets, not encodings.
func TestLatin1SurvivesArrow(t *testing.T) {
	csv := "name\nJos\xe9\nRen\xe9e\n"
	r, err := Open("-", ReadOptions{Stdin: strings.NewReader(csv)})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := Create("-", r.Schema(), nil, WriteOptions{Format: Arrow, Stdout: &buf})
	if err != nil {
		t.Fatal(err)
	}
	if err := EachBatch(r, func(rec arrow.RecordBatch, _ int64) error { return w.Write(rec) }); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	back, err := Open("-", ReadOptions{Stdin: &buf})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	rec, err := back.Next()
	if err != nil {
		t.Fatal(err)
	}
	if got := ValuesOf(rec.Column(0)).String(1); got != "Ren\xe9e" {
		t.Errorf("got %q", got)
	}
}
