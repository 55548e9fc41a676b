package table

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"unsafe"
	"weak"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// DictType is the type of categorical columns built from codes:
// dictionary<int32, utf8>, the type pqarrow reads dictionary pages as.
var DictType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

// DictField is a field of DictType.
func DictField(name string) arrow.Field { return arrow.Field{Name: name, Type: DictType} }

// Labels is a codebook column's labels as an Arrow dictionary, built once
// and shared by every batch, so that a stage holding codes writes labels
// without building a string per row: a column is the codes themselves as
// dictionary indices. Writers turn it into labels in CSV, a dictionary page
// per row group in Parquet (the labels hashed once per row group, the codes
// written as they are) and a dictionary in Arrow IPC. Such a Parquet file
// still reads as plain string columns, for pramkit and other tools alike.
type Labels struct {
	dict *array.String

	// The index of the labels for reading (ReadOptions.Labels), built on
	// first use and read-only after.
	once  sync.Once
	index labelTable
}

// code returns the code of the label whose bytes are b, and whether b is
// a label. It is safe for concurrent use and keeps no reference to b.
func (l *Labels) code(b []byte) (uint32, bool) {
	l.once.Do(func() { l.index = newLabelTable(l.dict) })
	return l.index.get(b)
}

// labelTable finds a label by its bytes: an open-addressed table keyed by
// a label's length and first 8 bytes, with the next 8 kept as a word too,
// so that a label of at most 16 bytes — most categories: Male, Bachelors,
// Exec-managerial — is compared as two words, and the bytes past 16 by a
// string comparison. A CSV reader codes every cell of a coded
// column through it, on the parsing goroutines; labelCache's hash of the
// whole string and its comparison cost about twice as much a cell.
type labelTable struct {
	slots []labelEntry
	mask  uint64
}

type labelEntry struct {
	head uint64 // the label's first 8 bytes, little-endian, zero-padded
	n    int    // its length, -1 for an empty slot
	code uint32
	next uint64 // its bytes 8 to 16, as head
	tail string // its bytes past the first 16
}

func newLabelTable(dict *array.String) labelTable {
	size := 16
	for size < 2*dict.Len() {
		size *= 2
	}
	t := labelTable{slots: make([]labelEntry, size), mask: uint64(size - 1)}
	for i := range t.slots {
		t.slots[i].n = -1
	}
	for i := range dict.Len() {
		v := dict.Value(i)
		if _, dup := t.get([]byte(v)); dup {
			continue // the first one's code, as a lookup by label finds
		}
		head := head8([]byte(v))
		for k := t.hash(head, len(v)); ; k = (k + 1) & t.mask {
			if e := &t.slots[k]; e.n < 0 {
				*e = labelEntry{head: head, n: len(v), code: uint32(i)}
				if len(v) > 8 {
					e.next = head8([]byte(v[8:]))
				}
				if len(v) > 16 {
					e.tail = v[16:]
				}
				break
			}
		}
	}
	return t
}

// head8 is b's first 8 bytes as a little-endian word, zero-padded.
func head8(b []byte) uint64 {
	if len(b) >= 8 {
		return binary.LittleEndian.Uint64(b)
	}
	if cap(b) >= 8 {
		// A CSV field is followed in its buffer by the rest of the line:
		// one load, the bytes past the field masked off, instead of a loop
		// whose exit, at a label's random length, was mispredicted.
		return binary.LittleEndian.Uint64(b[:8]) & (1<<(8*uint(len(b))) - 1)
	}
	var h uint64
	for i, c := range b {
		h |= uint64(c) << (8 * i)
	}
	return h
}

func (t *labelTable) hash(head uint64, n int) uint64 {
	h := (head ^ uint64(n)*0xbf58476d1ce4e5b9) * 0x9e3779b97f4a7c15
	return (h >> 32) & t.mask
}

func (t *labelTable) get(b []byte) (uint32, bool) {
	head := head8(b)
	for k := t.hash(head, len(b)); ; k = (k + 1) & t.mask {
		e := &t.slots[k]
		switch {
		case e.n < 0:
			return 0, false
		case e.n == len(b) && e.head == head:
			// Most labels are at most 16 bytes (Adult's longest is 21):
			// two words compared, no call to compare bytes.
			if len(b) <= 8 || e.next == head8(b[8:]) && (len(b) <= 16 || e.tail == string(b[16:])) {
				return e.code, true
			}
		}
	}
}

// NewLabels builds the dictionary of labels; code i stands for labels[i].
func NewLabels(labels []string) *Labels {
	return LabelsOf(len(labels), func(i int) string { return labels[i] })
}

// LabelsOf builds the dictionary of n labels, code i standing for
// label(i), with no slice of them made first (a codebook column of many
// labels would copy its list to pass it to NewLabels).
func LabelsOf(n int, label func(i int) string) *Labels {
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	b.Reserve(n)
	for i := range n {
		b.Append(label(i))
	}
	return frozenLabels(b.NewStringArray())
}

// LabelsOfText is the dictionary of the labels text[offs[i]:offs[i+1]],
// sharing text's and offs' memory, which must not change (a Go string's
// bytes never do): a codebook column's labels (codebook.labelList) become
// a dictionary without a copy, 12 MB less at 1M labels.
func LabelsOfText(text string, offs []int32) *Labels {
	data := memory.NewBufferBytes(unsafe.Slice(unsafe.StringData(text), len(text)))
	off := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offs))
	d := array.NewData(arrow.BinaryTypes.String, len(offs)-1, []*memory.Buffer{nil, off, data}, nil, 0, 0)
	defer d.Release()
	return frozenLabels(array.NewStringData(d))
}

// frozenDicts holds the dictionaries of Labels, weakly: their buffers
// never change (nothing but the constructors above writes them), so a
// writer that keeps a batch's dictionary past the Write call may keep a
// reference to one of these instead of a copy (dictMemo.copyOf). At 1M
// labels the copy was 10 MB held for the whole run of decrypt, anonymize
// or estimate. An entry goes when its dictionary is collected.
var frozenDicts sync.Map // weak.Pointer[array.Data] → struct{}

// frozenLabels is Labels over dict, whose memory must never change.
func frozenLabels(dict *array.String) *Labels {
	d := dict.Data().(*array.Data)
	k := weak.Make(d)
	frozenDicts.Store(k, struct{}{})
	runtime.AddCleanup(d, func(k weak.Pointer[array.Data]) { frozenDicts.Delete(k) }, k)
	return &Labels{dict: dict}
}

// isFrozen tells whether d is the dictionary of a Labels.
func isFrozen(d arrow.ArrayData) bool {
	p, ok := d.(*array.Data)
	if !ok {
		return false
	}
	_, ok = frozenDicts.Load(weak.Make(p))
	return ok
}

// Len is the number of labels.
func (l *Labels) Len() int { return l.dict.Len() }

// Dictionary is the labels as the dictionary of l's columns (l keeps its
// reference: Retain it to keep it past l).
func (l *Labels) Dictionary() arrow.Array { return l.dict }

// Column returns codes as a DictType column over l, sharing codes' memory
// (codes must not change until the batch is written and released). Every
// code must be below l.Len(); writers check it.
func (l *Labels) Column(codes []uint32) arrow.Array {
	buf := memory.NewBufferBytes(arrow.Uint32Traits.CastToBytes(codes))
	data := array.NewData(DictType, len(codes), []*memory.Buffer{nil, buf}, nil, 0, 0)
	data.SetDictionary(l.dict.Data())
	a := array.NewDictionaryData(data)
	data.Release()
	return a
}

// CodesBatch returns the first n rows of cols as a batch of schema: column j
// is a DictType column over labels[j], or, where labels[j] is nil, an int32
// column of the codes (as Int32Batch). It shares cols' memory.
func CodesBatch(schema *arrow.Schema, cols [][]uint32, labels []*Labels, n int) arrow.RecordBatch {
	arrs := make([]arrow.Array, len(cols))
	for j, col := range cols {
		if labels[j] != nil {
			arrs[j] = labels[j].Column(col[:n])
			continue
		}
		arrs[j] = int32Column(col[:n])
	}
	rec := array.NewRecordBatch(schema, arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	return rec
}

// plainSchema is s with dictionary columns declared as their value type:
// what a Parquet file of s stores in its ARROW:schema, so readers see
// string columns (the pages are dictionary-encoded all the same).
func plainSchema(s *arrow.Schema) *arrow.Schema {
	var fields []arrow.Field
	for i, f := range s.Fields() {
		if d, ok := f.Type.(*arrow.DictionaryType); ok {
			if fields == nil {
				fields = append([]arrow.Field(nil), s.Fields()...)
			}
			fields[i].Type = d.ValueType
		}
	}
	if fields == nil {
		return s
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// checkDictionaries checks the dictionary columns of a batch handed to a
// writer: an index past its dictionary is a bug in the stage, reported
// rather than written (or read out of bounds).
func checkDictionaries(rec arrow.RecordBatch) error {
	for j, col := range rec.Columns() {
		if col.DataType().ID() != arrow.DICTIONARY {
			continue
		}
		if err := validateArray(col); err != nil {
			return fmt.Errorf("internal error: column %s: %v", QuoteCell(rec.Schema().Field(j).Name), err)
		}
	}
	return nil
}
