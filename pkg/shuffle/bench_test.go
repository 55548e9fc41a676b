package shuffle

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/table"
)

// BenchmarkEmitSpilled emits 2M shuffled rows shaped like anonymize's on
// the bench table (an id as text and six categorical codes) from spill
// files, the default budget and buckets (Write is not timed); run with
// -cpu 1,2 to see how Emit, which decodes on every core, scales.
func BenchmarkEmitSpilled(b *testing.B) {
	const n, batch = 2_000_000, 1 << 15
	fields := []arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}}
	for j := range 6 {
		fields = append(fields, table.DictField(fmt.Sprint("c", j)))
	}
	sch := arrow.NewSchema(fields, nil)
	labels := table.NewLabels([]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o"})
	var recs []arrow.RecordBatch
	for off := 0; off < n; off += batch {
		ids := array.NewStringBuilder(memory.DefaultAllocator)
		cols := make([][]uint32, 6)
		for i := off; i < off+batch; i++ {
			ids.Append(fmt.Sprint(i + 1))
			for j := range cols {
				cols[j] = append(cols[j], uint32((i*(j+3))%15))
			}
		}
		arrs := []arrow.Array{ids.NewArray()}
		for j := range cols {
			arrs = append(arrs, labels.Column(cols[j]))
		}
		recs = append(recs, array.NewRecordBatch(sch, arrs, batch))
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s, err := New(sch, rng.NewSeeded(1), Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range recs {
			if err := s.Write(r); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		rows := 0
		if err := s.Emit(func(rec arrow.RecordBatch) error { rows += int(rec.NumRows()); return nil }); err != nil {
			b.Fatal(err)
		}
		if rows != len(recs)*batch {
			b.Fatalf("%d rows out", rows)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(recs)*batch), "ns/row")
}

// BenchmarkEmitBitsSpilled emits 4M shuffled rows of bitflip's bench
// reports (17 one-bit columns, bit mode) from spill files, the default
// budget and buckets (WritePacked is not timed); run with -cpu 1,2. Emit's
// own goroutine reads each bucket and draws its shuffle; the columns are
// unpacked on another.
func BenchmarkEmitBitsSpilled(b *testing.B) {
	const n, cols = 4_000_000, 17
	fields := make([]arrow.Field, cols)
	for j := range fields {
		fields[j] = arrow.Field{Name: fmt.Sprint("b", j), Type: arrow.PrimitiveTypes.Int32}
	}
	sch := arrow.NewSchema(fields, nil)
	rows := make([]uint64, n)
	for i := range rows {
		rows[i] = uint64(i*2654435761) & (1<<cols - 1)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s, err := New(sch, rng.NewSeeded(1), Options{Dir: b.TempDir(), Bits: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.WritePacked(rows); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		out := 0
		if err := s.Emit(func(rec arrow.RecordBatch) error { out += int(rec.NumRows()); return nil }); err != nil {
			b.Fatal(err)
		}
		if out != n {
			b.Fatalf("%d rows out", out)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/row")
}
