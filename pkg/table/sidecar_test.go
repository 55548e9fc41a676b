package table

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// readErr reads a whole table and returns the first error.
func readErr(path string) (Meta, int64, error) {
	r, err := Open(path, ReadOptions{})
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r.Meta(), r.RowsRead(), nil
		}
		if err != nil {
			return nil, 0, err
		}
	}
}

func TestSidecarRecordsTheDataDigest(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.csv")
	writeRows(t, p, []string{"x"}, [][]string{{"1"}, {"2"}}, Meta{"n": "2"}, WriteOptions{})
	b, _ := os.ReadFile(p + ".meta.json")
	var s struct {
		Pramkit int
		Data    struct {
			Bytes  int64
			SHA256 string
		}
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	// "x\n1\n2\n" is 6 bytes; the digest is printf 'x\n1\n2\n' | sha256sum.
	if s.Pramkit != 1 || s.Data.Bytes != 6 || s.Data.SHA256 != "aea284871ddeeebac4b57b7a8ee7dad070886e690408ce2409306b9b6487beb1" {
		t.Errorf("sidecar %s", b)
	}
}

// A sidecar moved beside rows of another run is refused: on open when the
// sizes differ, at the end of the rows when only the content does.
func TestMismatchedPairIsRefused(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.csv")
	b := filepath.Join(dir, "b.csv")
	c := filepath.Join(dir, "c.csv")
	writeRows(t, a, []string{"x"}, [][]string{{"1"}, {"2"}}, Meta{"run": "a"}, WriteOptions{})
	writeRows(t, b, []string{"x"}, [][]string{{"3"}, {"4"}}, Meta{"run": "b"}, WriteOptions{})
	writeRows(t, c, []string{"x"}, [][]string{{"10"}, {"4"}}, Meta{"run": "c"}, WriteOptions{})
	side, _ := os.ReadFile(b + ".meta.json")
	// Same size, other rows: refused once the rows are read.
	os.WriteFile(a+".meta.json", side, 0o644)
	_, _, err := readErr(a)
	if err == nil || !strings.Contains(err.Error(), a+" does not match its metadata sidecar "+a+".meta.json") || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("same size: err = %v", err)
	}
	// Another size: refused on open.
	os.WriteFile(c+".meta.json", side, 0o644)
	if _, err := Open(c, ReadOptions{}); err == nil || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("other size: err = %v", err)
	}
	// The pair itself is fine.
	if m, n, err := readErr(b); err != nil || m["run"] != "b" || n != 2 {
		t.Errorf("b: %v %d %v", m, n, err)
	}
}

func TestSidecarWithoutDigestIsRefused(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "old.csv")
	os.WriteFile(p, []byte("x\n1\n"), 0o644)
	os.WriteFile(p+".meta.json", []byte(`{"pramkit":1,"meta":{"n":"1"}}`), 0o644)
	_, err := Open(p, ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "does not record the size and SHA-256 of "+p) || !strings.Contains(err.Error(), "run the stage that wrote") {
		t.Errorf("err = %v", err)
	}
}

// Two runs writing the same output at once end with one run's complete
// pair, and a reader running meanwhile never accepts a mixed pair (nor
// fails: it sees one committed pair or the other).
func TestConcurrentWritersLeaveAConsistentPair(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.csv")
	const iters = 200
	// Widen the window between the two renames: without the lock, the
	// writers interleave there and the reader meets mixed pairs.
	betweenRenames = func() { time.Sleep(200 * time.Microsecond) }
	defer func() { betweenRenames = nil }()
	rowsOf := func(w int) [][]string {
		// Writers' files differ in size and content, so a mixed pair
		// fails either check.
		rows := make([][]string, 3+w)
		for i := range rows {
			rows[i] = []string{fmt.Sprint(w*1000 + i)}
		}
		return rows
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3*iters)
	report := func(err error) {
		select {
		case errs <- err:
		default: // enough reported
		}
	}
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range iters {
				meta := Meta{"writer": fmt.Sprint(w), "iter": fmt.Sprint(i)}
				if err := writeRowsErr(p, rowsOf(w), meta); err != nil {
					report(err)
				}
			}
		}()
	}
	done, stop := make(chan struct{}), make(chan struct{})
	reads := 0
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			m, n, err := readErr(p)
			if errors.Is(err, os.ErrNotExist) || (err != nil && strings.Contains(err.Error(), "cannot open")) {
				continue // not written yet
			}
			if err != nil {
				report(fmt.Errorf("reader: %w", err))
				continue
			}
			w := m["writer"]
			if w != "0" && w != "1" {
				report(fmt.Errorf("reader: accepted a pair whose metadata is %v", m))
				continue
			}
			if n != int64(len(rowsOf(int(w[0]-'0')))) {
				report(fmt.Errorf("reader: writer %s's metadata with %d rows", w, n))
			}
			reads++
		}
	}()
	wg.Wait()
	close(stop)
	<-done
	if reads < 10 {
		t.Errorf("the reader read only %d pairs", reads)
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, _, err := readErr(p); err != nil {
		t.Errorf("final pair: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*"+partialInfix+"*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

func writeRowsErr(path string, rows [][]string, meta Meta) error {
	schema := StringSchema([]string{"x"})
	w, err := Create(path, schema, meta, WriteOptions{})
	if err != nil {
		return err
	}
	defer w.Abort()
	bb := NewBatchBuilder(schema)
	defer bb.Release()
	for _, r := range rows {
		bb.AppendStrings(r)
	}
	rec := bb.NewBatch()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		return err
	}
	return w.Commit()
}

// drainErr reads r to its end and returns the rows and the first error.
func drainErr(r Reader) (int64, error) {
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r.RowsRead(), nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// TestSidecarOfReusesTheFirstReading: a CSV file opened again with
// ReadOptions.SidecarOf its first reader takes that reader's metadata (as
// it holds it now) without reading the sidecar again — a sidecar made
// unreadable since is not noticed — and still checks the data against
// the digest the sidecar recorded: rows changed since are refused, at
// open for another size and at the end for the same size. A reader of
// another file, or of another format, is ignored.
func TestSidecarOfReusesTheFirstReading(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.csv")
	writeRows(t, a, []string{"x", "y"}, [][]string{{"1", "p"}, {"2", "q"}}, Meta{"run": "a", "big": strings.Repeat("z", 100_000)}, WriteOptions{})
	first, err := Open(a, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	delete(first.Meta(), "big") // as estimate drops a codebook once parsed
	if err := os.WriteFile(a+".meta.json", []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(a, ReadOptions{}); err == nil {
		t.Fatal("the damaged sidecar is read without SidecarOf")
	}
	again, err := Open(a, ReadOptions{SidecarOf: first, Columns: []string{"y"}})
	if err != nil {
		t.Fatalf("with SidecarOf: %v", err)
	}
	if m := again.Meta(); m["run"] != "a" || len(m) != len(first.Meta()) {
		t.Errorf("metadata %v, want the first reader's %v", m, first.Meta())
	}
	if n, err := drainErr(again); err != nil || n != 2 {
		t.Errorf("reading it: %d rows, %v", n, err)
	}
	again.Close()

	// The rows change: same size, then another size.
	if err := os.WriteFile(a, []byte("x,y\n3,p\n2,q\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err = Open(a, ReadOptions{SidecarOf: first})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drainErr(again); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("rows changed, same size: %v", err)
	}
	again.Close()
	if err := os.WriteFile(a, []byte("x,y\n30,p\n2,q\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(a, ReadOptions{SidecarOf: first}); err == nil || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("rows changed, another size: %v", err)
	}

	// Another file's reader: its sidecar is read as usual.
	b := filepath.Join(dir, "b.csv")
	writeRows(t, b, []string{"x"}, [][]string{{"1"}}, Meta{"run": "b"}, WriteOptions{})
	other, err := Open(b, ReadOptions{SidecarOf: first})
	if err != nil {
		t.Fatal(err)
	}
	if other.Meta()["run"] != "b" {
		t.Errorf("b opened with a's reader: metadata %v", other.Meta())
	}
	other.Close()
}
