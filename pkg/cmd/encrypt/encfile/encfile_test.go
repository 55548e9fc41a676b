package encfile

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/pkg/table"
)

// writeCSV writes a CSV table with the given header and rows.
func writeCSV(t *testing.T, header []string, rows [][]string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.csv")
	schema := table.StringSchema(header)
	w, err := table.Create(p, schema, nil, table.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bb := table.NewBatchBuilder(schema)
	for _, r := range rows {
		bb.AppendStrings(r)
	}
	rec := bb.NewBatch()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	bb.Release()
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCursorReadsBlocksAcrossBatches reads 23 rows in batches of 7 as
// blocks of 5, columns picked by name in another order than the file's.
func TestCursorReadsBlocksAcrossBatches(t *testing.T) {
	var rows [][]string
	for i := range 23 {
		rows = append(rows, []string{itoa(i % 5), itoa(i % 3)})
	}
	r, err := table.Open(writeCSV(t, []string{"a", "b"}, rows), table.ReadOptions{BatchSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := NewCursor(r, []string{"b", "a"}, []uint32{3, 5}, false)
	if err != nil {
		t.Fatal(err)
	}
	block := Block(2, 5)
	var got int
	for {
		n, err := c.Read(block)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		for i := range n {
			row := got + i
			if block[0][i] != uint32(row%3) || block[1][i] != uint32(row%5) {
				t.Fatalf("row %d: b=%d a=%d", row+1, block[0][i], block[1][i])
			}
		}
		got += n
	}
	if got != 23 || c.Rows() != 23 {
		t.Errorf("read %d rows, Rows() = %d, want 23", got, c.Rows())
	}
}

// TestCursorRejectsValuesOutsideTheAlphabet checks the error names file,
// row and column, and quotes the value only when it is not key material.
func TestCursorRejectsValuesOutsideTheAlphabet(t *testing.T) {
	tests := []struct {
		name   string
		cell   string
		secret bool
		want   string
	}{
		{"k or more", "4", false, `row 3, column "a": ciphertext value 4 is outside 0..3`},
		{"negative", "-2", false, `row 3, column "a": ciphertext value -2 is outside 0..3`},
		{"not an integer", "x", false, `row 3, column "a": the cell is empty or not an integer`},
		{"empty", "", false, `row 3, column "a": the cell is empty or not an integer`},
		{"pad out of range", "987654", true, `row 3, column "a": the pad is not an integer in 0..3 (value not shown: it is key material)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeCSV(t, []string{"a", "z"}, [][]string{{"0", "z"}, {"3", "z"}, {tt.cell, "z"}})
			r, err := table.Open(p, table.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			c, _ := NewCursor(r, []string{"a"}, []uint32{4}, tt.secret)
			_, err = c.Read(Block(1, 10))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), p) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if tt.secret && strings.Contains(err.Error(), tt.cell) {
				t.Errorf("error quotes the pad: %v", err)
			}
		})
	}
}

func TestNewCursorNamesMissingColumn(t *testing.T) {
	r, err := table.Open(writeCSV(t, []string{"a"}, [][]string{{"0"}}), table.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := NewCursor(r, []string{"b"}, []uint32{2}, false); err == nil || !strings.Contains(err.Error(), `lists column "b" but the table has no such column (columns: a)`) {
		t.Errorf("error %v", err)
	}
}

func TestInt32BatchRoundTrip(t *testing.T) {
	cols := [][]uint32{{0, 1, 1<<31 - 1, 9}, {5, 6, 7, 8}}
	rec := Int32Batch(Int32Schema([]string{"a", "b"}), cols, 3)
	defer rec.Release()
	if rec.NumRows() != 3 || rec.NumCols() != 2 {
		t.Fatalf("%d rows, %d columns", rec.NumRows(), rec.NumCols())
	}
	for j := range cols {
		v := table.ValuesOf(rec.Column(j))
		for i := range 3 {
			if x, ok := v.Int(i); !ok || x != int64(cols[j][i]) {
				t.Errorf("column %d row %d: %d, want %d", j, i, x, cols[j][i])
			}
		}
	}
}

func TestReadColumnsValidates(t *testing.T) {
	tests := []struct {
		name, json, want string
	}{
		{"ok", `[{"name":"a","k":3,"codebook_hash":"h","key_id":"i","pad":"otp"}]`, ""},
		{"missing", "", `no "columns" in the metadata: FIX`},
		{"not JSON", `[{`, "the file was damaged"},
		{"empty", `[]`, "lists no columns"},
		{"k zero", `[{"name":"a","k":0,"pad":"otp"}]`, "alphabet size k = 0"},
		{"k too large", `[{"name":"a","k":2147483649,"pad":"otp"}]`, "alphabet size k = 2147483649"},
		{"duplicate", `[{"name":"a","k":2,"pad":"otp"},{"name":"a","k":2,"pad":"otp"}]`, `column "a" twice`},
		{"no name", `[{"name":"","k":2,"pad":"otp"}]`, "without a name"},
		{"bad pad", `[{"name":"a","k":2,"pad":"xor"}]`, `pad kind "xor"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meta := table.Meta{}
			if tt.json != "" {
				meta["columns"] = tt.json
			}
			cols, err := ReadColumns(meta, "f.csv", "FIX")
			if tt.want == "" {
				if err != nil || len(cols) != 1 || cols[0].K != 3 {
					t.Errorf("%v, %v", cols, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "f.csv") {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestReadSampleValidates(t *testing.T) {
	for _, tt := range []struct {
		meta table.Meta
		want string
	}{
		{table.Meta{"n": "10", "m": "3", "fingerprint": "f"}, ""},
		{table.Meta{"n": "10", "m": "3"}, `no sample "fingerprint" in the metadata: FIX`},
		{table.Meta{"n": "2", "m": "3", "fingerprint": "f"}, "n ≥ m ≥ 1"},
		{table.Meta{"n": "2", "m": "0", "fingerprint": "f"}, "n ≥ m ≥ 1"},
		{table.Meta{"n": "x", "m": "1", "fingerprint": "f"}, "not an integer"},
	} {
		s, err := ReadSample(tt.meta, "f.csv", "FIX")
		if tt.want == "" {
			if err != nil || s != (Sample{N: 10, M: 3, Fingerprint: "f"}) {
				t.Errorf("%v: %+v, %v", tt.meta, s, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.meta, err, tt.want)
		}
	}
}

func TestHistoryRoundTrip(t *testing.T) {
	for _, h := range []History{
		{Releases: 0, GammaProduct: 1},
		{Releases: 1, GammaProduct: 11},
		{Releases: 3, GammaProduct: 1331},
		{Releases: 1, GammaProduct: 11, Gammas: []float64{11}},
		{Releases: 3, GammaProduct: 2 * 3.5 * 7, Gammas: []float64{2, 3.5, 7}},
	} {
		meta := table.Meta{}
		if h.Releases == 1 {
			meta.SetFloat("gamma", h.GammaProduct)
		}
		h.Set(meta)
		got, err := ReadHistory(meta, "f")
		if err != nil || got.Releases != h.Releases || got.GammaProduct != h.GammaProduct || !slices.Equal(got.Gammas, h.Gammas) {
			t.Errorf("%+v: read back %+v, %v", h, got, err)
		}
	}
	if _, err := ReadHistory(table.Meta{"releases": "2", "gamma": "3"}, "f"); err == nil || !strings.Contains(err.Error(), `no valid "gamma_composed"`) {
		t.Errorf("error %v", err)
	}
	for _, tt := range []struct{ gammas, want string }{
		{`[2,3]`, "lists 2 γ's for 3 releases"},
		{`[2,3,"x"]`, "not a JSON list"},
		{`[2,3,0.5]`, "not a finite number > 1"},
		{`[2,3,4]`, "multiplies to 24"},
	} {
		meta := table.Meta{"releases": "3", "gamma_composed": "30", "gammas": tt.gammas}
		if _, err := ReadHistory(meta, "f"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("gammas %s: error %v, want %q", tt.gammas, err, tt.want)
		}
	}
}

func TestHistoryThen(t *testing.T) {
	h := History{GammaProduct: 1}.Then(2).Then(5)
	if h.Releases != 2 || h.GammaProduct != 10 || !slices.Equal(h.Gammas, []float64{2, 5}) {
		t.Errorf("two releases: %+v", h)
	}
	// An older file that kept only Γ: the list stays unknown.
	old := History{Releases: 2, GammaProduct: 10}.Then(3)
	if old.Releases != 3 || old.GammaProduct != 30 || old.Gammas != nil {
		t.Errorf("after an unknown list: %+v", old)
	}
}

func TestPRFKeys(t *testing.T) {
	raw := bytes.Repeat([]byte{7}, 32)
	hexKey := []byte(strings.Repeat("07", 32) + "\n")
	a, err1 := ParsePRFKey(raw)
	b, err2 := ParsePRFKey(hexKey)
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		t.Fatalf("raw and hex keys differ: %v %v", err1, err2)
	}
	if _, err := ParsePRFKey([]byte("SECRET-SHORT")); err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("error %v", err)
	}
	k1, k2 := DeriveRunKey(raw, "run1"), DeriveRunKey(raw, "run2")
	if k1 == k2 || k1 != DeriveRunKey(raw, "run1") {
		t.Error("run keys must be deterministic per run id and differ between runs")
	}
	meta := table.Meta{KeyPRFKey: "zz" + strings.Repeat("0", 62)}
	if _, err := RunKeyFromMeta(meta, "k"); err == nil || strings.Contains(err.Error(), "zz") {
		t.Errorf("error %v", err)
	}
}

func itoa(i int) string { return string(rune('0' + i)) }
