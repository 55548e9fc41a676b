package table

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/endian"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// schemaMessageFields are fields of every type pramkit writes, and a few
// it does not (a timestamp with a zone, a list, field metadata with a long
// value): writeSchemaMessage copies arrow-go's encoding of the fields as
// it is, whatever they are.
func schemaMessageFields() []arrow.Field {
	fmd := arrow.NewMetadata([]string{"note", "long"}, []string{"x", strings.Repeat("f", 300)})
	return []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Nullable: true},
		{Name: "x", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Uint32, ValueType: arrow.BinaryTypes.String}},
		{Name: "text", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "code", Type: arrow.PrimitiveTypes.Int32},
		{Name: "u", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "b", Type: arrow.PrimitiveTypes.Int8},
		{Name: "p", Type: arrow.PrimitiveTypes.Float64, Metadata: fmd},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "Europe/Paris"}},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
		{Name: "", Type: arrow.BinaryTypes.String},
	}
}

// schemaMessageMetadata are metadata of short and long values (long: at
// least bigMetaValue bytes, of every length mod 8), first, last, alone and
// interleaved, empty keys and values, and bytes that are not UTF-8.
func schemaMessageMetadata() map[string]arrow.Metadata {
	long := func(n int, c byte) string { return strings.Repeat(string(c), n) }
	cases := map[string]arrow.Metadata{
		"none":  {},
		"short": arrow.NewMetadata([]string{"a", "pramkit.n", ""}, []string{"1", "", "v"}),
		"mixed": arrow.NewMetadata(
			[]string{"pramkit.codebook", "a", "pramkit.kind", "b", "c", ""},
			[]string{long(1<<16+3, '{'), "x", long(bigMetaValue, 'k'), "", long(5000, '\xff'), long(bigMetaValue+7, 'e')}),
		"all long":  arrow.NewMetadata([]string{"k1", "k2", "k3"}, []string{long(bigMetaValue+1, '1'), long(bigMetaValue+2, '2'), long(1<<20, '3')}),
		"long last": arrow.NewMetadata([]string{"a", "b"}, []string{"short", long(3000, 'z')}),
	}
	for r := range 8 {
		cases[fmt.Sprintf("one long, %d mod 8", r)] = arrow.NewMetadata([]string{"pramkit.codebook"}, []string{long(bigMetaValue+r, 'c')})
	}
	return cases
}

// TestSchemaMessageIsArrowGos: writeSchemaMessage writes, byte for byte,
// the schema message arrow-go's ipc writer would (GetSchemaPayload), for
// fields of many types and metadata of long and short values in every
// arrangement, in either byte order; arrow-go's stream reader reads it
// back as the same schema, metadata included.
func TestSchemaMessageIsArrowGos(t *testing.T) {
	for _, order := range []endian.Endianness{endian.NativeEndian, endian.NonNativeEndian} {
		for name, md := range schemaMessageMetadata() {
			s := arrow.NewSchemaWithEndian(schemaMessageFields(), &md, order)
			var want, got bytes.Buffer
			p := ipc.GetSchemaPayload(s, memory.DefaultAllocator)
			if _, err := p.WritePayload(&want); err != nil {
				t.Fatal(err)
			}
			p.Release()
			// Not arrow-go's encoding written in its place.
			if _, err := schemaPieces(s); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := writeSchemaMessage(&got, s); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("%s, %v: %d bytes differ from arrow-go's %d", name, order, got.Len(), want.Len())
				continue
			}
			got.Write([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0})
			r, err := ipc.NewReader(&got)
			if err != nil {
				t.Fatalf("%s: arrow-go cannot read it: %v", name, err)
			}
			// The reader swaps a stream of the other byte order to this
			// machine's.
			if rs := r.Schema(); !rs.WithEndianness(order).Equal(s) || !rs.Metadata().Equal(s.Metadata()) {
				t.Errorf("%s: arrow-go reads another schema", name)
			}
			r.Release()
		}
	}
}

// TestArrowStreamWithLongMetadataIsArrowGos: a stream written by the
// arrowWriter, whose metadata (the codebook's JSON) is long, is byte for
// byte arrow-go's ipc writer's for the same schema and batches, and reads
// back through our reader with the same metadata and rows.
func TestArrowStreamWithLongMetadataIsArrowGos(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "label", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}},
	}, nil)
	meta := Meta{"codebook": strings.Repeat("[\"l\"],", 50001), "kind": "gamma-diagonal", "n": "9"}
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	db := array.NewDictionaryBuilder(memory.DefaultAllocator, schema.Field(1).Type.(*arrow.DictionaryType)).(*array.BinaryDictionaryBuilder)
	for i := range 10 {
		ib.Append(int64(i))
		db.AppendString(fmt.Sprint("v", i%3))
	}
	ids, labels := ib.NewArray(), db.NewArray()
	defer ids.Release()
	defer labels.Release()
	full := withMeta(schema, meta)
	rec := array.NewRecordBatch(full, []arrow.Array{ids, labels}, 10)
	defer rec.Release()

	var got bufSink
	aw, err := newArrowWriter(&got, schema, meta, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := aw.write(rec); err != nil {
		t.Fatal(err)
	}
	if err := aw.close(); err != nil {
		t.Fatal(err)
	}
	// What the arrowWriter wrote before it wrote the schema message
	// itself: arrow-go's writer given the schema with its metadata.
	var want bytes.Buffer
	old := &arrowWriter{w: ipc.NewWriter(&want, ipc.WithSchema(full)), schema: full, batchRows: 4, memos: dictMemos(full)}
	if err := old.write(rec); err != nil {
		t.Fatal(err)
	}
	if err := old.close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("the stream's %d bytes differ from arrow-go's %d", got.Len(), want.Len())
	}
	r, err := Open("-", ReadOptions{Stdin: bytes.NewReader(got.Bytes())})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if m := r.Meta(); m["codebook"] != meta["codebook"] || m["kind"] != meta["kind"] || m["n"] != "9" {
		t.Errorf("our reader reads other metadata")
	}
	lens, read := arrowIPCRows(t, got.Bytes(), 1)
	if fmt.Sprint(lens) != "[4 4 2]" || read[9] != "v0" || read[5] != "v2" {
		t.Errorf("arrow-go reads batches of %v rows, labels %q", lens, read)
	}
}

// TestArrowMetaIsTheReadersOnly: once an Arrow stream or file is open, its
// pramkit items live in the reader's Meta alone, not also in the schema
// the ipc reader keeps (forgetSchemaMeta), so a caller that deletes a
// decoded item frees it; other tools' items stay in that schema.
func TestArrowMetaIsTheReadersOnly(t *testing.T) {
	meta := Meta{"n": "2", "codebook": strings.Repeat("c", 1000)}
	md := arrow.NewMetadata([]string{"other.tool"}, []string{"kept"})
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.BinaryTypes.String}}, &md)
	full := withMeta(schema, meta)
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	sb.AppendValues([]string{"x", "y"}, nil)
	col := sb.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(full, []arrow.Array{col}, 2)
	defer rec.Release()

	var stream, file bytes.Buffer
	sw := ipc.NewWriter(&stream, ipc.WithSchema(full))
	fw, err := ipc.NewFileWriter(&file, ipc.WithSchema(full))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []interface {
		Write(arrow.RecordBatch) error
		Close() error
	}{sw, fw} {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{"s.arrow": stream.Bytes(), "f.arrow": file.Bytes()} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := Open(p, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r.Meta(), meta) {
			t.Errorf("%s: Meta = %v, want %v", name, r.Meta(), meta)
		}
		var kept *arrow.Schema
		inner := r
		if s, ok := r.(*slicingReader); ok {
			inner = s.Reader
		}
		switch a := inner.(type) {
		case *arrowStreamReader:
			kept = a.r.Schema()
		case *arrowFileReader:
			kept = a.r.Schema()
		default:
			t.Fatalf("%s: read by a %T", name, r)
		}
		km := kept.Metadata()
		for i, k := range km.Keys() {
			if _, ours := metaKey(k); ours && km.Values()[i] != "" {
				t.Errorf("%s: the ipc reader's schema still holds %s", name, k)
			}
		}
		if v, ok := km.GetValue("other.tool"); !ok || v != "kept" {
			t.Errorf("%s: the ipc reader's schema lost the other tool's item", name)
		}
		r.Close()
	}
}
