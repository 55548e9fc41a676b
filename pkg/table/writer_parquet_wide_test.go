package table

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	xreader "github.com/xitongsys/parquet-go/reader"
)

// TestPackBitsRoundTrips: cells packed at any bit offset, in pieces of
// any length, unpack to the same cells; a cell other than 0 or 1 is
// refused wherever it stands (before, within or after the whole bytes).
func TestPackBitsRoundTrips(t *testing.T) {
	for _, c := range []struct {
		name   string
		pieces []int // lengths of the successive packBits calls
		bad    int   // index of a cell 2, or -1
	}{
		{"one aligned piece", []int{64}, -1},
		{"unaligned pieces", []int{3, 17, 1, 8, 30, 5}, -1},
		{"single cells", []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, -1},
		{"a 2 in the head", []int{5, 20}, 6},
		{"a 2 in a whole byte", []int{3, 40}, 20},
		{"a 2 in the tail", []int{3, 20}, 22},
	} {
		total := 0
		for _, k := range c.pieces {
			total += k
		}
		v := make([]int32, total)
		for i := range v {
			v[i] = int32(i*7/3) & 1
		}
		if c.bad >= 0 {
			v[c.bad] = 2
		}
		bits := make([]byte, (total+7)/8)
		at, ok := 0, true
		for _, k := range c.pieces {
			if !packBits(bits, at, v[at:at+k]) {
				ok = false
				break
			}
			at += k
		}
		if ok != (c.bad < 0) {
			t.Errorf("%s: packBits reports all 0/1 = %v", c.name, ok)
			continue
		}
		if !ok {
			continue
		}
		a := int32Bits(bits, total)
		got := a.(*array.Int32).Int32Values()
		for i := range v {
			if got[i] != v[i] {
				t.Errorf("%s: cell %d unpacks to %d, want %d", c.name, i, got[i], v[i])
				break
			}
		}
		a.Release()
	}
}

// wideMixedSchema is a wide table (38 columns) whose columns are not all
// bits: b0 and b5… are 0/1; b1 turns 2 in a later batch; b2 holds 0…5;
// b3 has nulls; b4 is text.
func wideMixedSchema() *arrow.Schema {
	fs := int32Schema(38).Fields()
	fs[3].Nullable = true
	fs[4].Type = arrow.BinaryTypes.String
	return arrow.NewSchema(fs, nil)
}

// wideMixedBatch is rows [first, first+n) of wideMixedSchema's table.
func wideMixedBatch(schema *arrow.Schema, first, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for j := range schema.NumFields() {
		for i := first; i < first+n; i++ {
			switch j {
			case 1:
				v := int32(i & 1)
				if i == 70_003 || i == 140_000 {
					v = 2
				}
				b.Field(j).(*array.Int32Builder).Append(v)
			case 2:
				b.Field(j).(*array.Int32Builder).Append(int32(i % 6))
			case 3:
				if i%1000 == 7 {
					b.Field(j).AppendNull()
				} else {
					b.Field(j).(*array.Int32Builder).Append(int32(i / 3 & 1))
				}
			case 4:
				b.Field(j).(*array.StringBuilder).Append(fmt.Sprintf("v%d", i%13))
			default:
				b.Field(j).(*array.Int32Builder).Append(int32(i / (j + 1) & 1))
			}
		}
	}
	return b.NewRecordBatch()
}

// TestWideParquetOfMixedColumnsIsTheSameFile: a wide table whose columns
// are 0/1 (held as bits), turn non-0/1 within a row group, hold other
// values, have nulls or are text is written one group at a time to the
// same bytes as through the writer's queue (rowGroupBuf, 4 bytes a cell),
// in batches that cut the groups' bytes at odd bits, whether the groups'
// bits are held whole or go to a temporary file in blocks (of 880 rows,
// which cut neither the batches nor the groups evenly; b1 turns 2 after
// blocks of its group went out); an independent reader sees the non-bit
// column's cells.
func TestWideParquetOfMixedColumnsIsTheSameFile(t *testing.T) {
	for _, held := range []int{wideHeldBytes, 4 << 10} {
		t.Run(fmt.Sprintf("held %d bytes", held), func(t *testing.T) {
			defer func(old int) { wideHeldBytes = old }(wideHeldBytes)
			wideHeldBytes = held
			testWideMixedParquet(t)
		})
	}
}

func testWideMixedParquet(t *testing.T) {
	const n = 150_000 // 3 row groups
	schema := wideMixedSchema()
	if RowsWithin(schema, GroupBytes, RowGroupRows) >= RowGroupRows {
		t.Fatal("the table is not wide: the test would not take the one-group path")
	}
	inline := sameInlineAndQueued(t, func() []byte {
		return writeParquetBatches(t, schema, nil, n, 9_999, func(first, k int) arrow.RecordBatch {
			return wideMixedBatch(schema, first, k)
		})
	})
	pr, err := xreader.NewParquetColumnReader(memFile{bytes.NewReader(inline)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.ReadStop()
	vals, _, _, err := pr.ReadColumnByIndex(1, n)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		want := int32(i & 1)
		if i == 70_003 || i == 140_000 {
			want = 2
		}
		if v != want {
			t.Fatalf("column b1, row %d: %v, want %d", i, v, want)
		}
	}
}

// TestWideGroupHoldsZeroOneColumnsAsBits: a wide group holds a column as
// bits while its cells are 0/1, and as cells (colBuf) from the batch that
// brings another value or a null on, or when it is not int32.
func TestWideGroupHoldsZeroOneColumnsAsBits(t *testing.T) {
	schema := wideMixedSchema()
	g, err := newWideGroup(schema, RowGroupRows, dictMemos(schema))
	if err != nil {
		t.Fatal(err)
	}
	if g.spill != nil || g.blockRows != RowGroupRows {
		t.Fatalf("a group of 36 bit columns is held in blocks of %d rows, spilled %v", g.blockRows, g.spill != nil)
	}
	for _, c := range []struct {
		first, n int
		full     []int // the columns held as cells after the batch
	}{
		{0, 5, []int{2, 4}},     // b3's first null is row 7
		{5, 10, []int{2, 3, 4}}, // b1's first 2 is row 70,003
		{69_990, 20, []int{1, 2, 3, 4}},
	} {
		rec := wideMixedBatch(schema, c.first, c.n)
		if err := g.appendRows(rec, 0, c.n); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		k := 0
		for j, col := range g.cols {
			isFull := k < len(c.full) && c.full[k] == j
			if isFull {
				k++
			}
			if (col.full != nil) != isFull {
				t.Errorf("after rows %d–%d, column b%d held as cells: %v, want %v", c.first, c.first+c.n-1, j, col.full != nil, isFull)
			}
		}
	}
	g.reset()
	if g.rows != 0 || g.cols[1].full != nil || g.cols[1].bits[0] != 0 {
		t.Errorf("reset leaves %d rows, column b1 held as cells %v, its first bits %#x", g.rows, g.cols[1].full != nil, g.cols[1].bits[0])
	}
}
