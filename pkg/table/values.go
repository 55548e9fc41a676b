package table

import (
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Values reads the cells of one column of a batch as strings or integers,
// whatever the column's Arrow type. Tools work on categorical values, so a
// CSV column of digits and a Parquet int32 column read the same. Nulls read
// as the empty string.
type Values struct {
	arr arrow.Array
	str *array.String
	i64 *array.Int64
	i32 *array.Int32
	u32 *array.Uint32
	// dict is a dictionary column, dictStr its dictionary when utf8.
	dict    *array.Dictionary
	dictStr *array.String
}

// ValuesOf wraps a column.
func ValuesOf(a arrow.Array) Values {
	v := Values{arr: a}
	switch c := a.(type) {
	case *array.String:
		v.str = c
	case *array.Int64:
		v.i64 = c
	case *array.Int32:
		v.i32 = c
	case *array.Uint32:
		v.u32 = c
	case *array.Dictionary:
		v.dict = c
		v.dictStr, _ = c.Dictionary().(*array.String)
	}
	return v
}

// Len is the number of cells.
func (v Values) Len() int { return v.arr.Len() }

// String returns cell i as text. For string columns the result shares the
// batch's memory: strings.Clone it to keep it past the batch.
func (v Values) String(i int) string {
	if v.arr.IsNull(i) {
		return ""
	}
	switch {
	case v.str != nil:
		return v.str.Value(i)
	case v.i64 != nil:
		return strconv.FormatInt(v.i64.Value(i), 10)
	case v.i32 != nil:
		return strconv.FormatInt(int64(v.i32.Value(i)), 10)
	case v.u32 != nil:
		return strconv.FormatUint(uint64(v.u32.Value(i)), 10)
	}
	if d := v.dict; d != nil {
		k := d.GetValueIndex(i)
		if v.dictStr != nil && v.dictStr.IsValid(k) {
			return v.dictStr.Value(k)
		}
		return ValuesOf(d.Dictionary()).String(k)
	}
	return v.arr.ValueStr(i)
}

// Int returns cell i as an integer; ok is false for a null or a value that
// is not a base-10 integer.
func (v Values) Int(i int) (n int64, ok bool) {
	if v.arr.IsNull(i) {
		return 0, false
	}
	switch {
	case v.i64 != nil:
		return v.i64.Value(i), true
	case v.i32 != nil:
		return int64(v.i32.Value(i)), true
	case v.u32 != nil:
		return int64(v.u32.Value(i)), true
	}
	n, err := strconv.ParseInt(v.String(i), 10, 64)
	return n, err == nil
}

// StringSchema returns a schema of utf8 columns with the given names.
func StringSchema(names []string) *arrow.Schema {
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		fields[i] = arrow.Field{Name: n, Type: arrow.BinaryTypes.String}
	}
	return arrow.NewSchema(fields, nil)
}

// BatchBuilder accumulates rows of a schema made of utf8, int32 and int64
// columns and hands them out as record batches.
type BatchBuilder struct {
	schema *arrow.Schema
	b      *array.RecordBuilder
	rows   int
}

// NewBatchBuilder starts an empty batch of schema.
func NewBatchBuilder(schema *arrow.Schema) *BatchBuilder {
	return &BatchBuilder{schema: schema, b: array.NewRecordBuilder(memory.DefaultAllocator, schema)}
}

// Rows is the number of rows added since the last NewBatch.
func (bb *BatchBuilder) Rows() int { return bb.rows }

// Schema is the schema of the batches built.
func (bb *BatchBuilder) Schema() *arrow.Schema { return bb.schema }

// String appends s to utf8 column j.
func (bb *BatchBuilder) String(j int, s string) {
	bb.b.Field(j).(*array.StringBuilder).Append(s)
}

// Int32 appends v to int32 column j.
func (bb *BatchBuilder) Int32(j int, v int32) {
	bb.b.Field(j).(*array.Int32Builder).Append(v)
}

// Int64 appends v to int64 column j.
func (bb *BatchBuilder) Int64(j int, v int64) {
	bb.b.Field(j).(*array.Int64Builder).Append(v)
}

// Float64 appends v to float64 column j.
func (bb *BatchBuilder) Float64(j int, v float64) {
	bb.b.Field(j).(*array.Float64Builder).Append(v)
}

// EndRow counts a row whose cells were all appended.
func (bb *BatchBuilder) EndRow() { bb.rows++ }

// AppendStrings appends one row of a utf8-only schema.
func (bb *BatchBuilder) AppendStrings(row []string) {
	for j, s := range row {
		bb.b.Field(j).(*array.StringBuilder).Append(s)
	}
	bb.rows++
}

// NewBatch returns the rows added so far as a batch (the caller releases
// it) and starts a new one.
func (bb *BatchBuilder) NewBatch() arrow.RecordBatch {
	bb.rows = 0
	return bb.b.NewRecordBatch()
}

// Release frees the builder.
func (bb *BatchBuilder) Release() { bb.b.Release() }
