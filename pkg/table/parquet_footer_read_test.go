package table

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// TestFooterWithoutPramkitItemsIsArrowGosFooter: readParquetFooter's
// FileMetaData is the one arrow-go parses from the whole footer with the
// pramkit items left out of its key-value metadata (the other tools'
// items and ARROW:schema kept, in order), and the items it returns are the
// pramkit ones, large (past metaCloneBytes) and small, and an empty one —
// for a file with no pramkit item, one with only pramkit items besides
// ARROW:schema, and one with another tool's item among them; a file opened
// through it reads back its rows and its Meta.
func TestFooterWithoutPramkitItemsIsArrowGosFooter(t *testing.T) {
	big := strings.Repeat("0123456789", 100_000) // 1 MB: stored schema keeps fields only
	for _, tc := range []struct {
		name  string
		meta  Meta
		other map[string]string // schema metadata of another tool
	}{
		{"no items", nil, nil},
		{"small items", Meta{"stage": "perturb", "empty": ""}, nil},
		{"a large item and another tool's", Meta{"codebook": big, "stage": "sample"}, map[string]string{"pandas": "{}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := footerTestBatch(3, 500)
			defer rec.Release()
			sch := rec.Schema()
			if tc.other != nil {
				md := arrow.MetadataFrom(tc.other)
				sch = arrow.NewSchema(sch.Fields(), &md)
			}
			data := ownParquet(t, sch, tc.meta, 200, []arrow.RecordBatch{rec}).Bytes()
			path := filepath.Join(t.TempDir(), "t.parquet")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			md, ours, plain, err := readParquetFooter(f, int64(len(data)))
			if err != nil || !plain {
				t.Fatalf("plain %v, %v", plain, err)
			}

			want, err := metadata.NewFileMetaData(footerOf(data), nil)
			if err != nil {
				t.Fatal(err)
			}
			wantOurs, kept := splitPramkitItems(want)
			if !reflect.DeepEqual(md.FileMetaData, want.FileMetaData) {
				t.Errorf("footer without the pramkit items:\n%+v\nwant\n%+v", md.FileMetaData, want.FileMetaData)
			}
			if !reflect.DeepEqual(ours, wantOurs) {
				t.Errorf("items %d, want %d: %v", len(ours), len(wantOurs), ours)
			}
			if tc.other != nil && kept.FindValue("pandas") == nil {
				t.Error("another tool's item was taken out")
			}

			r, err := Open(path, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if got := r.Meta(); !reflect.DeepEqual(got, cloneOrEmpty(tc.meta)) {
				t.Errorf("Meta has %d items, want %d", len(got), len(tc.meta))
			}
			rows := 0
			for {
				b, err := r.Next()
				if err != nil {
					break
				}
				rows += int(b.NumRows())
			}
			if rows != 500 {
				t.Errorf("read %d rows, want 500", rows)
			}
		})
	}
}

func cloneOrEmpty(m Meta) Meta {
	if m == nil {
		return Meta{}
	}
	return m.Clone()
}

// TestFooterTakeRefusesBrokenMetadata: a footer cut short, or with bytes
// after its end, is an error, not a guess.
func TestFooterTakeRefusesBrokenMetadata(t *testing.T) {
	rec := footerTestBatch(2, 10)
	defer rec.Release()
	data := ownParquet(t, rec.Schema(), Meta{"stage": "x"}, 100, []arrow.RecordBatch{rec}).Bytes()
	footer := footerOf(data)
	for _, b := range [][]byte{footer[:len(footer)/2], footer[:len(footer)-1], append(append([]byte{}, footer...), 0)} {
		if _, _, err := takePramkitItems(b); err == nil {
			t.Errorf("%d of %d footer bytes: no error", len(b), len(footer))
		}
	}
}

// FuzzFooterTakeMatchesArrowGo: for any bytes, takePramkitItems does not
// panic; where it succeeds and arrow-go parses the bytes whole, arrow-go
// parses the stripped bytes too, to the same FileMetaData but for the
// pramkit items, which it returns. Seeds: footers of files with no item,
// small items, a large one and another tool's.
func FuzzFooterTakeMatchesArrowGo(f *testing.F) {
	rec := footerTestBatch(2, 30)
	defer rec.Release()
	for _, meta := range []Meta{nil, {"stage": "x", "empty": ""}, {"codebook": strings.Repeat("c", 70_000)}} {
		data := ownParquet(&testing.T{}, rec.Schema(), meta, 10, []arrow.RecordBatch{rec}).Bytes()
		f.Add(footerOf(data))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		b = append([]byte(nil), b...) // the items may point into it
		stripped, ours, err := takePramkitItems(b)
		if err != nil {
			return
		}
		want, err := parseFooterRecovering(append([]byte(nil), b...))
		if err != nil {
			return // arrow-go refuses it whole (openParquet recovers its panics too)
		}
		got, err := parseFooterRecovering(stripped)
		if err != nil {
			t.Fatalf("arrow-go parses the footer but not without its pramkit items: %v", err)
		}
		wantOurs, _ := splitPramkitItems(want)
		if !reflect.DeepEqual(ours, wantOurs) {
			t.Fatalf("items %v, want %v", ours, wantOurs)
		}
		if !reflect.DeepEqual(got.FileMetaData, want.FileMetaData) {
			t.Fatalf("footer without the items:\n%+v\nwant\n%+v", got.FileMetaData, want.FileMetaData)
		}
	})
}

// parseFooterRecovering is metadata.NewFileMetaData with its panics (an
// invalid logical type, say) made errors.
func parseFooterRecovering(b []byte) (md *metadata.FileMetaData, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return metadata.NewFileMetaData(b, nil)
}

// footerOf is the serialized FileMetaData of the Parquet file data.
func footerOf(data []byte) []byte {
	n := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	return data[len(data)-8-n : len(data)-8]
}

// splitPramkitItems takes the pramkit items out of md's key-value
// metadata, as readParquetFooter does, and returns them (nil if none)
// with the items kept.
func splitPramkitItems(md *metadata.FileMetaData) (Meta, metadata.KeyValueMetadata) {
	ours := Meta{}
	kept := metadata.KeyValueMetadata{}
	for _, e := range md.KeyValueMetadata() {
		if k, ok := metaKey(e.GetKey()); ok && e.Value != nil {
			ours[k] = *e.Value
			continue
		}
		kept = append(kept, e)
	}
	if len(ours) == 0 {
		return nil, kept
	}
	md.FileMetaData.KeyValueMetadata = kept
	return ours, kept
}
