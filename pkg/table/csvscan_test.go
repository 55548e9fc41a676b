package table

import (
	"bytes"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// oracleCSV reads data with encoding/csv as the CSV reader used to: the
// header fixes the field count; it returns the data rows before the first
// error and that error's start line (0 for none).
func oracleCSV(data []byte) (header []string, rows [][]string, errLine int, ok bool) {
	r := csv.NewReader(bytes.NewReader(data))
	h, err := r.Read()
	if err != nil {
		return nil, nil, 0, false
	}
	header = h
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return header, rows, 0, true
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return header, rows, pe.StartLine, true
		}
		if err != nil {
			return header, rows, -1, true
		}
		rows = append(rows, rec)
	}
}

// scanCSV reads data with our reader, one row per batch.
func scanCSV(data []byte) (rows [][]string, errLine int, err error) {
	return scanCSVWith(data, ReadOptions{})
}

// scanCSVWith is scanCSV with options (Stdin and BatchSize are set).
func scanCSVWith(data []byte, opt ReadOptions) (rows [][]string, errLine int, err error) {
	opt.Stdin, opt.BatchSize = bytes.NewReader(data), 1
	rd, err := Open("-", opt)
	if err != nil {
		return nil, 0, err
	}
	defer rd.Close()
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return rows, 0, nil
		}
		if err != nil {
			var de *DataError
			if errors.As(err, &de) {
				return rows, de.Line, nil
			}
			return rows, -1, nil
		}
		row := make([]string, rec.NumCols())
		for j := range row {
			row[j] = strings.Clone(ValuesOf(rec.Column(j)).String(0))
		}
		rows = append(rows, row)
	}
}

func checkAgainstOracle(t *testing.T, data []byte) {
	t.Helper()
	if sniff(data) != CSV || bytes.HasPrefix(data, []byte(metaLinePrefix)) || bytes.HasPrefix(data, []byte{0xef, 0xbb, 0xbf}) {
		return
	}
	_, want, wantLine, ok := oracleCSV(data)
	if !ok {
		return
	}
	got, gotLine, err := scanCSV(data)
	if err != nil {
		return // header refused (duplicate or empty names): not the scanner's business
	}
	if len(want) == 0 {
		want = nil
	}
	if !reflect.DeepEqual(got, want) || gotLine != wantLine {
		t.Fatalf("input %q:\nscanner rows %q, error at line %d\nencoding/csv rows %q, error at line %d", data, got, gotLine, want, wantLine)
	}
	// The same rows read in part (every other column) and with the first
	// column as codes over some of its values: the scanner takes fields
	// apart differently then (readPlain appends only what is read).
	rd, err := Open("-", ReadOptions{Stdin: bytes.NewReader(data)})
	if err != nil {
		t.Fatal(err)
	}
	var header []string
	for _, f := range rd.Schema().Fields() {
		header = append(header, f.Name)
	}
	rd.Close()
	var cols []string
	for j := 0; j < len(header); j += 2 {
		cols = append(cols, header[j])
	}
	var some []string
	for i, row := range want {
		if i%2 == 0 && !slices.Contains(some, row[0]) {
			some = append(some, row[0])
		}
	}
	opt := ReadOptions{Columns: cols, Labels: map[string]*Labels{header[0]: NewLabels(some)}}
	got, gotLine, err = scanCSVWith(data, opt)
	if err != nil {
		t.Fatalf("input %q, columns %q: %v", data, cols, err)
	}
	var wantPart [][]string
	for _, row := range want {
		var part []string
		for j := 0; j < len(row); j += 2 {
			part = append(part, row[j])
		}
		wantPart = append(wantPart, part)
	}
	if !reflect.DeepEqual(got, wantPart) || gotLine != wantLine {
		t.Fatalf("input %q, columns %q, %q coded over %q:\nscanner rows %q, error at line %d\nencoding/csv rows %q, error at line %d", data, cols, header[0], some, got, gotLine, wantPart, wantLine)
	}
	// And in row-text mode (LendRowText): the last column built, every
	// row read back from its record's text in reverse column order.
	batch := 3 // rows of a batch before a failing record are not returned: 1 then
	if wantLine != 0 {
		batch = 1
	}
	got, gotLine = scanCSVText(t, data, header, batch)
	var wantRev [][]string
	for _, row := range want {
		rev := slices.Clone(row)
		slices.Reverse(rev)
		wantRev = append(wantRev, rev)
	}
	if !reflect.DeepEqual(got, wantRev) || gotLine != wantLine {
		t.Fatalf("input %q, row text:\nscanner rows %q, error at line %d\nencoding/csv rows (reversed) %q, error at line %d", data, got, gotLine, wantRev, wantLine)
	}
}

// scanCSVText reads data in row-text mode, building its last column, in
// batches of batch rows, and returns each row's cells read from the text in
// reverse order (checked against the built column).
func scanCSVText(t *testing.T, data []byte, header []string, batch int) (rows [][]string, errLine int) {
	t.Helper()
	var texts []*RowText // released at the end: a text outlives its batch
	defer func() {
		for _, x := range texts {
			x.Release()
		}
	}()
	rev := make([]int, len(header))
	for j := range rev {
		rev[j] = len(header) - 1 - j
	}
	rd, err := Open("-", ReadOptions{Stdin: bytes.NewReader(data), BatchSize: batch})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if !LendRowText(rd, header[len(header)-1:]) {
		t.Fatal("LendRowText refused a CSV reader that has not started")
	}
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return rows, 0
		}
		if err != nil {
			var de *DataError
			if errors.As(err, &de) {
				return rows, de.Line
			}
			return rows, -1
		}
		x := RowTextOf(rd)
		if x == nil || x.Len() != int(rec.NumRows()) || rec.NumCols() != 1 {
			t.Fatalf("input %q: a batch of %d rows, %d columns, with text %v", data, rec.NumRows(), rec.NumCols(), x)
		}
		texts = append(texts, x)
		for i := range x.Len() {
			row, err := x.Row(i, rev)
			if err != nil {
				t.Fatal(err)
			}
			if built := ValuesOf(rec.Column(0)).String(i); row[0] != built {
				t.Fatalf("input %q: row text's last cell %q, the built column's %q", data, row[0], built)
			}
			rows = append(rows, row)
		}
	}
}

func TestCSVScannerMatchesEncodingCSV(t *testing.T) {
	for _, s := range csvSeeds {
		checkAgainstOracle(t, []byte(s))
	}
}

var csvSeeds = []string{
	"a,b\n1,2\n", "a,b\n1,2", "a,b\r\n1,2\r\n", "a,b\n1,2\r", "a,b\n\n\n1,2\n\r\n3,4\n",
	"a,b\n\"x,y\",z\n", "a,b\n\"x\"\"y\",z\n", "a,b\n\"multi\nline\",z\n", "a,b\n\"multi\r\nline\",z\n",
	"a,b\n1\n", "a,b\n1,2,3\n", "a,b\nx\"y,z\n", "a,b\n\"x\"y,z\n", "a,b\n\"unterminated,z\n",
	"a,b\n\"\",\"\"\n", "a\n\"\"\n\n", "a,b\n,\n", "a,b\n1,\"2\"\n3,4", "a,b\n\"a\"\"\",b\n",
	"a,b\n1,2\n\"x\n", "a,b\nü,∑\n", "a,b\n\"a\nb\"\"\nc\",d\n1,2\n", "a,b\n1,\"\n\"\n",
	"a,b\n1,2\n3,\"4\"\"\n\n\"\n5,6\n",
	// Lines of several 8-byte words (splitPlain): commas at every offset,
	// a word of commas only, a field across words, too many fields.
	"a,b,c,d,e,f,g,h,i\n1,22,333,4444,55555,666666,7777777,88888888,999999999\n,,,,,,,,\n" +
		"abcdefghijklmnopqrstuvwxyz,b,c,d,e,f,g,h,i\r\nx,y\n",
}

// FuzzCSVScannerMatchesEncodingCSV: on any input, the scanner returns the
// same rows as encoding/csv and fails at the same record.
func FuzzCSVScannerMatchesEncodingCSV(f *testing.F) {
	for _, s := range csvSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkAgainstOracle(t, data) })
}

// TestCommaMaskMarksExactlyTheCommas: every byte value at every position
// of a word, beside commas and bytes next to ',' in value (0x2b, 0x2d,
// 0xac), is marked iff it is a comma.
func TestCommaMaskMarksExactlyTheCommas(t *testing.T) {
	for _, fill := range []byte{',', 0x2b, 0x2d, 0xac, 0, 0xff, 'a'} {
		for pos := range 8 {
			for b := range 256 {
				var w [8]byte
				for k := range w {
					w[k] = fill
				}
				w[pos] = byte(b)
				var want uint64
				for k, c := range w {
					if c == ',' {
						want |= 0x80 << (8 * k)
					}
				}
				if got := commaMask(binary.LittleEndian.Uint64(w[:])); got != want {
					t.Fatalf("% x: commaMask = %#x, want %#x", w, got, want)
				}
			}
		}
	}
}
