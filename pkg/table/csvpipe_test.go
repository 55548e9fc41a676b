package table

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// withChunkBytes runs fn with CSV chunks of n bytes (0: the default).
func withChunkBytes(t *testing.T, n int, fn func()) {
	t.Helper()
	old := csvChunkBytes
	csvChunkBytes = n
	defer func() { csvChunkBytes = old }()
	fn()
}

// chunkSizes cuts inputs everywhere: chunks of one byte end after every
// record, others at arbitrary record boundaries.
var chunkSizes = []int{1, 2, 5, 13, 64, 0}

// TestCSVScannerMatchesEncodingCSVAtEveryChunkSize is the oracle test with
// the input cut into chunks of several sizes, so that records, quoted
// fields with embedded newlines, CRLF and errors fall in later chunks.
func TestCSVScannerMatchesEncodingCSVAtEveryChunkSize(t *testing.T) {
	for _, n := range chunkSizes {
		withChunkBytes(t, n, func() {
			for _, s := range csvSeeds {
				checkAgainstOracle(t, []byte(s))
			}
		})
	}
}

// pipeRows is a table whose quoted values hold commas, quotes, LF and CRLF,
// so that any chunk size cuts somewhere near them; CRLF line ends too.
func pipeRows(n int) (header []string, rows [][]string, data []byte) {
	header = []string{"id", "text", "sex"}
	texts := []string{"plain", "a,b", `say "hi"`, "line\nbreak", "two\n\nblank lines", "crlf\r\ninside", "", "\"\n\""}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.UseCRLF = true
	w.Write(header)
	for i := range n {
		r := []string{fmt.Sprint(i), texts[i%len(texts)], []string{"Female", "Male"}[i%2]}
		w.Write(r)
		// encoding/csv reads "\r\n" inside quotes as "\n".
		r[1] = strings.ReplaceAll(r[1], "\r\n", "\n")
		rows = append(rows, r)
	}
	w.Flush()
	return header, rows, b.Bytes()
}

// TestParallelCSVReaderRoundTrips reads one CSV at several chunk sizes,
// batch sizes and GOMAXPROCS: the same rows in the same order, batches of
// at most BatchSize rows, from a file with a bound sidecar (the SHA-256
// check runs on the chunks) and from a stream.
func TestParallelCSVReaderRoundTrips(t *testing.T) {
	header, want, data := pipeRows(2000)
	dir := t.TempDir()
	p := filepath.Join(dir, "t.csv")
	writeRows(t, p, header, want, Meta{"n": "2000"}, WriteOptions{})
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		for _, n := range chunkSizes {
			for _, batch := range []int{1, 7, 1000} {
				withChunkBytes(t, n, func() {
					for _, src := range []string{p, "-"} {
						opt := ReadOptions{BatchSize: batch, Stdin: bytes.NewReader(data)}
						_, got, _, _ := readAllMax(t, src, opt)
						if !reflect.DeepEqual(got, want) {
							t.Fatalf("GOMAXPROCS %d, chunks of %d bytes, batches of %d, %s: rows differ", procs, n, batch, src)
						}
					}
				})
			}
		}
	}
}

// readAllMax reads a table and checks that no batch exceeds BatchSize.
func readAllMax(t *testing.T, path string, opt ReadOptions) ([]string, [][]string, Meta, error) {
	t.Helper()
	r, err := Open(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var cols []string
	for _, f := range r.Schema().Fields() {
		cols = append(cols, f.Name)
	}
	var rows [][]string
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if rec.NumRows() > int64(opt.BatchSize) {
			t.Fatalf("a batch of %d rows, BatchSize %d", rec.NumRows(), opt.BatchSize)
		}
		for i := range int(rec.NumRows()) {
			row := make([]string, rec.NumCols())
			for j := range row {
				row[j] = strings.Clone(ValuesOf(rec.Column(j)).String(i))
			}
			rows = append(rows, row)
		}
		if r.RowsRead() != int64(len(rows)) {
			t.Fatalf("RowsRead %d after %d rows", r.RowsRead(), len(rows))
		}
	}
	return cols, rows, r.Meta(), nil
}

// TestParallelCSVErrorsNameTheRowInLaterChunks puts a bad record deep in a
// file (after multi-line quoted values, so rows and lines differ) and
// checks that the error names the same row and line at every chunk size.
func TestParallelCSVErrorsNameTheRowInLaterChunks(t *testing.T) {
	_, _, data := pipeRows(500)
	lines := bytes.Count(data, []byte{'\n'})
	cases := []struct{ name, tail, want string }{
		{"ragged", "1,2\r\n", fmt.Sprintf("line %d (row 501)", lines+1)},
		{"bare quote", "1,x\"y,z\r\n", fmt.Sprintf("line %d (row 501)", lines+1)},
		{"unterminated", "1,\"x,z\r\n2,y,z\r\n", fmt.Sprintf("line %d (row 501)", lines+1)},
	}
	for _, c := range cases {
		input := append(bytes.Clone(data), c.tail...)
		input = append(input, "7,after,Male\r\n"...)
		for _, n := range chunkSizes {
			withChunkBytes(t, n, func() {
				r, err := Open("-", ReadOptions{Stdin: bytes.NewReader(input), BatchSize: 64})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				for err == nil {
					_, err = r.Next()
				}
				if errors.Is(err, io.EOF) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s, chunks of %d bytes: error %v, want %q", c.name, n, err, c.want)
				}
				if r.RowsRead() > 500 {
					t.Errorf("%s: %d rows read past the bad row 501", c.name, r.RowsRead())
				}
				// The error sticks.
				if _, again := r.Next(); again == nil || again.Error() != err.Error() {
					t.Errorf("%s: Next after the error returns %v", c.name, again)
				}
			})
		}
	}
}

// TestParallelCSVSidecarCheckSeesEveryChunk changes one byte near the end
// of a bound file: refused at every chunk size, as before.
func TestParallelCSVSidecarCheckSeesEveryChunk(t *testing.T) {
	header, rows, _ := pipeRows(3000)
	p := filepath.Join(t.TempDir(), "t.csv")
	writeRows(t, p, header, rows, Meta{"n": "3000"}, WriteOptions{})
	b, _ := os.ReadFile(p)
	i := bytes.LastIndex(b, []byte("Male"))
	copy(b[i:], "Mole")
	os.WriteFile(p, b, 0o644)
	for _, n := range []int{1, 100, 0} {
		withChunkBytes(t, n, func() {
			_, _, err := readErr(p)
			if err == nil || !strings.Contains(err.Error(), "SHA-256") {
				t.Errorf("chunks of %d bytes: err = %v", n, err)
			}
		})
	}
}

// TestCSVRecordWithoutEndIsReportedNotBuffered: a stray quote makes the
// rest of a file one unterminated quoted value; the reader reports the
// record once maxCSVRecord bytes pass without a record boundary, instead
// of holding the whole file.
func TestCSVRecordWithoutEndIsReportedNotBuffered(t *testing.T) {
	old := maxCSVRecord
	maxCSVRecord = 1000
	defer func() { maxCSVRecord = old }()
	var b bytes.Buffer
	b.WriteString("a,b\n1,2\n\"3,4\n")
	for range 500 {
		b.WriteString("5,6\n")
	}
	withChunkBytes(t, 64, func() {
		// One byte a read, so that the input arrives in many reads.
		r, err := Open("-", ReadOptions{Stdin: iotest.OneByteReader(&b), BatchSize: 10})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for err == nil {
			_, err = r.Next()
		}
		if errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "line 3 (row 2)") || !strings.Contains(err.Error(), "quote is missing") {
			t.Errorf("error %v", err)
		}
	})
}

// TestCSVReaderClosedEarlyStopsItsGoroutines closes a reader after one
// batch of a large input: no goroutine stays behind.
func TestCSVReaderClosedEarlyStopsItsGoroutines(t *testing.T) {
	_, _, data := pipeRows(20_000)
	before := runtime.NumGoroutine()
	for range 5 {
		withChunkBytes(t, 512, func() {
			r, err := Open("-", ReadOptions{Stdin: bytes.NewReader(data), BatchSize: 16})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
			r.Close()
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after closing, %d before", n, before)
	}
}

// TestBatchRowsEnvSetsTheDefaultBatchSize: $PRAMKIT_BATCH_ROWS sizes the
// batches of every format when ReadOptions leave it open; an explicit
// BatchSize wins; a bad value is refused naming the variable.
func TestBatchRowsEnvSetsTheDefaultBatchSize(t *testing.T) {
	header, rows, _ := pipeRows(100)
	dir := t.TempDir()
	for _, ext := range []string{"csv", "parquet", "arrow"} {
		p := filepath.Join(dir, "t."+ext)
		writeRows(t, p, header, rows, nil, WriteOptions{})
		for _, c := range []struct {
			env   string
			batch int
			want  int64
		}{{"", 0, 100}, {"7", 0, 7}, {"7", 30, 30}} {
			t.Setenv(BatchRowsEnv, c.env)
			r, err := Open(p, ReadOptions{BatchSize: c.batch})
			if err != nil {
				t.Fatal(err)
			}
			rec, err := r.Next()
			if err != nil || rec.NumRows() != c.want {
				t.Errorf("%s, %s=%q, BatchSize %d: first batch of %v rows (%v), want %d", ext, BatchRowsEnv, c.env, c.batch, rec.NumRows(), err, c.want)
			}
			r.Close()
		}
	}
	t.Setenv(BatchRowsEnv, "lots")
	if _, err := Open(filepath.Join(dir, "t.csv"), ReadOptions{}); err == nil || !strings.Contains(err.Error(), BatchRowsEnv) {
		t.Errorf("bad value: err = %v", err)
	}
	if _, err := BatchRows(); err == nil {
		t.Error("BatchRows accepts lots")
	}
}

// TestLowerCSVBatchRows: a CSV reader told before it starts reads batches
// of the lower size, all the rows in order; one that has started, or a
// higher size, is left as it is.
func TestLowerCSVBatchRows(t *testing.T) {
	header, rows, _ := pipeRows(100)
	p := filepath.Join(t.TempDir(), "t.csv")
	writeRows(t, p, header, rows, nil, WriteOptions{})
	for _, c := range []struct {
		rows    int
		started bool
		ok      bool
		want    int64
	}{{7, false, true, 7}, {1000, false, false, 100}, {0, false, false, 100}, {7, true, false, 100}} {
		r, err := Open(p, ReadOptions{BatchSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		if c.started {
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		}
		if ok := LowerCSVBatchRows(r, c.rows); ok != c.ok {
			t.Errorf("%+v: LowerCSVBatchRows = %v", c, ok)
		}
		if c.started {
			r.Close()
			continue
		}
		var got [][]string
		var first int64
		for {
			rec, err := r.Next()
			if err != nil {
				break
			}
			if first == 0 {
				first = rec.NumRows()
			}
			for i := range int(rec.NumRows()) {
				var row []string
				for j := range int(rec.NumCols()) {
					row = append(row, ValuesOf(rec.Column(j)).String(i))
				}
				got = append(got, row)
			}
		}
		r.Close()
		if first != c.want || !reflect.DeepEqual(got, rows) {
			t.Errorf("%+v: first batch of %d rows (want %d), rows equal: %v", c, first, c.want, reflect.DeepEqual(got, rows))
		}
	}
}

// TestParquetReaderClosedEarlyStopsDecoding closes Parquet readers after
// one batch, and after none: the decoding goroutine ends, and a second
// Close is harmless.
func TestParquetReaderClosedEarlyStopsDecoding(t *testing.T) {
	cols, rows := dictRows(20_000)
	p := writeParquetRows(t, cols, rows, 4000)
	before := runtime.NumGoroutine()
	for i := range 6 {
		r, err := Open(p, ReadOptions{BatchSize: 100, DictColumns: cols[:i%2]})
		if err != nil {
			t.Fatal(err)
		}
		if i >= 2 {
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		}
		r.Close()
		r.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after closing, %d before", n, before)
	}
}

// TestCSVLabelsReadAsCodes reads pipeRows' table with its text and sex
// columns coded (ReadOptions.Labels), at several chunk sizes, batch sizes
// and GOMAXPROCS: every cell reads as the same string as without codes
// (quoted cells with commas, quotes and line breaks included); a label's
// code is its index; a batch whose cells are all labels has the labels'
// own dictionary; other cells come after the labels, in order of first
// appearance in their batch; the schema says DictType.
func TestCSVLabelsReadAsCodes(t *testing.T) {
	header, want, data := pipeRows(700)
	dir := t.TempDir()
	p := filepath.Join(dir, "t.csv")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	textLabels := []string{"plain", `say "hi"`, "line\nbreak", "never"} // "a,b" and others are not labels
	labels := map[string]*Labels{"text": NewLabels(textLabels), "sex": NewLabels([]string{"Male", "Female"})}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2} {
		runtime.GOMAXPROCS(procs)
		for _, n := range []int{1, 64, 0} {
			withChunkBytes(t, n, func() {
				for _, batch := range []int{1, 7, 1000} {
					r, err := Open(p, ReadOptions{BatchSize: batch, Labels: labels})
					if err != nil {
						t.Fatal(err)
					}
					for _, f := range r.Schema().Fields() {
						if coded := labels[f.Name] != nil; coded != arrow.TypeEqual(f.Type, DictType) {
							t.Fatalf("column %s has type %s", f.Name, f.Type)
						}
					}
					row, shared := 0, 0
					if err := EachBatch(r, func(rec arrow.RecordBatch, _ int64) error {
						for j, name := range header {
							col := rec.Column(j)
							vs := ValuesOf(col)
							for i := range col.Len() {
								if got := vs.String(i); got != want[row+i][j] {
									t.Fatalf("procs %d chunk %d batch %d: row %d column %s reads %q, want %q", procs, n, batch, row+i+1, name, got, want[row+i][j])
								}
							}
							d, ok := col.(*array.Dictionary)
							if labels[name] == nil {
								continue
							}
							if !ok {
								t.Fatalf("column %s is a %T", name, col)
							}
							l := labels[name]
							if d.Dictionary().Data() == l.dict.Data() {
								shared++
							}
							dict := ValuesOf(d.Dictionary())
							var extras []string
							for k := l.Len(); k < d.Dictionary().Len(); k++ {
								extras = append(extras, dict.String(k))
							}
							var firsts []string
							for i := range col.Len() {
								v := want[row+i][j]
								if c := slices.Index(textLabels, v); name == "text" && c >= 0 && d.GetValueIndex(i) != c {
									t.Fatalf("label %q has code %d, want %d", v, d.GetValueIndex(i), c)
								}
								if d.GetValueIndex(i) >= l.Len() && !slices.Contains(firsts, v) {
									firsts = append(firsts, v)
								}
							}
							if !slices.Equal(extras, firsts) {
								t.Fatalf("column %s: the batch's other values are %q, want %q in order of first appearance", name, extras, firsts)
							}
						}
						row += int(rec.NumRows())
						return nil
					}); err != nil {
						t.Fatal(err)
					}
					r.Close()
					if row != len(want) {
						t.Fatalf("%d rows, want %d", row, len(want))
					}
					if shared == 0 {
						t.Fatalf("procs %d chunk %d batch %d: no batch kept the labels' own dictionary", procs, n, batch)
					}
				}
			})
		}
	}
}

// TestCSVSplitReusesItsReadBuffers reads 200 chunks (past the first MiB,
// which Open's buffered reader holds) of records of varied length, so that the bytes carried from one read to the next vary, and
// checks that split allocates read buffers only while the chunks in flight
// grow, not per read.
func TestCSVSplitReusesItsReadBuffers(t *testing.T) {
	var b strings.Builder
	b.WriteString("id,v\n")
	const chunk = 16 << 10
	for i := 0; b.Len() < 1<<20+200*chunk; i++ {
		fmt.Fprintf(&b, "%d,%s\n", i, strings.Repeat("x", i*7919%97))
	}
	p := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	withChunkBytes(t, chunk, func() {
		r, err := Open(p, ReadOptions{BatchSize: 64})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
		// Next saw the end, so split has returned. 4 here; 8 leaves
		// room for the scheduler (a buffer is dropped when more than
		// freeBuffers come back at once). Sized to each request, every
		// read took a fresh buffer (201); with 2 kept, about 20.
		if fresh := r.(*csvReader).pipe.fresh; fresh > 8 {
			t.Errorf("split allocated %d read buffers for about 200 chunks, want at most 8", fresh)
		}
	})
}

// TestCSVReuseBuffersReadsTheSameRows reads a CSV file whose batches
// have large text and code columns with and without ReuseBuffers,
// reading each batch's cells before the next (as the promise asks), and
// checks that both read the same rows and that with reuse the batches
// took far less fresh memory: a later batch is built in an earlier one's
// buffers once the reader has released it (at the next Next).
func TestCSVReuseBuffersReadsTheSameRows(t *testing.T) {
	labels := NewLabels([]string{"Female", "Male"})
	var b strings.Builder
	b.WriteString("id,note,sex\n")
	const rows = 200000
	for i := range rows {
		fmt.Fprintf(&b, "%d,%s,%s\n", i, strings.Repeat(string(rune('a'+i%26)), 60+i%13), []string{"Female", "Male"}[i%2])
	}
	p := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// The rows are compared by a digest of their cells, so that the
	// batches are most of what a read allocates.
	read := func(reuse bool) (uint64, uint64) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r, err := Open(p, ReadOptions{BatchSize: 2048, Labels: map[string]*Labels{"sex": labels}, ReuseBuffers: reuse})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		h, n := uint64(14695981039346656037), 0 // FNV-1a of the cells, each followed by a 0
		if err := EachBatch(r, func(rec arrow.RecordBatch, _ int64) error {
			for i := range int(rec.NumRows()) {
				for j := range int(rec.NumCols()) {
					for _, c := range []byte(ValuesOf(rec.Column(j)).String(i)) {
						h = (h ^ uint64(c)) * 1099511628211
					}
					h *= 1099511628211
				}
			}
			n += int(rec.NumRows())
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if n != rows {
			t.Fatalf("read %d rows, want %d", n, rows)
		}
		return h, after.TotalAlloc - before.TotalAlloc
	}
	want, fresh := read(false)
	got, reused := read(true)
	if got != want {
		t.Fatal("with ReuseBuffers the rows read differ")
	}
	// The batches' buffers, about 15 MB here (98 batches), are what
	// reuse saves, once the batches in flight have come back.
	if saved := int64(fresh) - int64(reused); saved < 6<<20 {
		t.Errorf("ReuseBuffers allocated %d MB, without %d MB: want at least 6 MB saved", reused>>20, fresh>>20)
	}
}

// TestReuseCSVBuffersOnlyBeforeReading: ReuseCSVBuffers turns reuse on for
// a CSV reader that has not read yet, and for nothing else.
func TestReuseCSVBuffersOnlyBeforeReading(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "t.csv")
	writeRows(t, p, []string{"x"}, [][]string{{"a"}, {"b"}}, Meta{}, WriteOptions{})
	r, err := Open(p, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !ReuseCSVBuffers(r) || !r.(*csvReader).reuse {
		t.Error("a CSV reader that has not read: reuse not turned on")
	}
	r.(*csvReader).reuse = false
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if ReuseCSVBuffers(r) {
		t.Error("a CSV reader that has read: reuse turned on mid-file")
	}
	q := filepath.Join(dir, "t.parquet")
	writeRows(t, q, []string{"x"}, [][]string{{"a"}}, Meta{}, WriteOptions{})
	pr, err := Open(q, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	if ReuseCSVBuffers(pr) {
		t.Error("a Parquet reader: ReuseCSVBuffers says it turned CSV reuse on")
	}
}

// TestCoderErrorOutlivesItsBatch keeps MapCoder's error for a cell of the
// first batch of a CSV file read with ReuseBuffers, reads on (later
// batches are built in the first one's buffers), and checks that the
// error still names the cell's value: the error holds a copy.
func TestCoderErrorOutlivesItsBatch(t *testing.T) {
	var b strings.Builder
	b.WriteString("x\n")
	for i := range 100000 {
		if i == 0 {
			b.WriteString(strings.Repeat("z", 80) + "\n")
			continue
		}
		b.WriteString(strings.Repeat(string(rune('a'+i%2)), 80) + "\n")
	}
	p := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(p, ReadOptions{BatchSize: 2048, ReuseBuffers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	coder := MapCoder(map[string]uint32{strings.Repeat("a", 80): 0, strings.Repeat("b", 80): 1})
	var kept error
	codes := make([]uint32, 2048)
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if bad, err := coder.Codes(codes[:rec.NumRows()], rec.Column(0), 0); bad >= 0 && kept == nil {
			kept = err
		}
	}
	want := (&UnknownLabelError{Label: strings.Repeat("z", 80)}).Error()
	if kept == nil || kept.Error() != want {
		t.Errorf("the first batch's error, read after the last batch: %v, want %s", kept, want)
	}
}

// TestCodeCSVColumnsAfterOpen: CodeCSVColumns on an opened, unread CSV
// reader — with a projection that reorders nothing but leaves a column
// out — codes the columns it names as ReadOptions.Labels would (DictType
// in the schema, every cell reading as its text, labels as their codes),
// and refuses once reading has started.
func TestCodeCSVColumnsAfterOpen(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(p, []byte("id,sex,job\n1,Male,x\n2,?,y\n3,Female,x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(p, ReadOptions{Columns: []string{"sex", "job"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sex := NewLabels([]string{"Male", "Female"})
	if !CodeCSVColumns(r, map[string]*Labels{"sex": sex, "id": NewLabels([]string{"1"})}) {
		t.Fatal("CodeCSVColumns refused an unread CSV reader")
	}
	if f := r.Schema().Field(0); f.Name != "sex" || !arrow.TypeEqual(f.Type, DictType) {
		t.Fatalf("field 0 is %s %s, want sex as DictType", f.Name, f.Type)
	}
	if f := r.Schema().Field(1); f.Name != "job" || !arrow.TypeEqual(f.Type, arrow.BinaryTypes.String) {
		t.Fatalf("field 1 is %s %s, want job as utf8", f.Name, f.Type)
	}
	rec, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	d, ok := rec.Column(0).(*array.Dictionary)
	if !ok {
		t.Fatalf("sex reads as a %T", rec.Column(0))
	}
	var got []string
	for i := range d.Len() {
		got = append(got, ValuesOf(d).String(i))
	}
	if want := []string{"Male", "?", "Female"}; !slices.Equal(got, want) {
		t.Errorf("sex reads %q, want %q", got, want)
	}
	if d.GetValueIndex(0) != 0 || d.GetValueIndex(2) != 1 {
		t.Errorf("Male and Female have codes %d and %d, want 0 and 1", d.GetValueIndex(0), d.GetValueIndex(2))
	}
	if CodeCSVColumns(r, map[string]*Labels{"job": NewLabels([]string{"x", "y"})}) {
		t.Error("CodeCSVColumns changed a reader that has started reading")
	}
}

// TestParallelReaderReadsTheFileInOrder: a parallelReader returns the
// file's bytes from its offset on, in order, whatever the read sizes and
// pieces — reads that end inside a piece, in the last piece, exactly at
// the end — then io.EOF.
func TestParallelReaderReadsTheFileInOrder(t *testing.T) {
	data := make([]byte, 1_300_007)
	for i := range data {
		data[i] = byte(i*7 + i/251)
	}
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, pieces := range []int{2, 3, 4} {
		for _, size := range []int{minReadPiece * 2, 600_000, 1 << 20, 3 << 20} {
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			head := make([]byte, 100)
			if _, err := io.ReadFull(f, head); err != nil {
				t.Fatal(err)
			}
			r := newParallelReader(f, pieces)
			var got []byte
			buf := make([]byte, size)
			for {
				n, err := r.Read(buf)
				got = append(got, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					t.Fatal("a Read returned no bytes and no error")
				}
			}
			f.Close()
			if !bytes.Equal(got, data[100:]) {
				t.Fatalf("%d pieces, reads of %d bytes: %d bytes read, not the file's %d from offset 100", pieces, size, len(got), len(data)-100)
			}
		}
	}
	if newParallelReader(nil, 2) != nil {
		t.Error("a parallelReader over no file")
	}
}
