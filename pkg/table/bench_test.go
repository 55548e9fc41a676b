package table

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// benchCSV is 200k rows of six Adult-like categorical columns.
func benchCSV() []byte {
	var b bytes.Buffer
	b.WriteString("sex,race,education,marital-status,occupation,income\n")
	edu := []string{"HS-grad", "Some-college", "Bachelors", "Masters", "Assoc-voc", "11th"}
	occ := []string{"Prof-specialty", "Craft-repair", "Exec-managerial", "Adm-clerical", "Sales", "?"}
	for i := 0; i < 200_000; i++ {
		fmt.Fprintf(&b, "%s,White,%s,Never-married,%s,%s\n",
			[]string{"Male", "Female"}[i%2], edu[i%6], occ[(i/7)%6], []string{"<=50K", ">50K"}[i%3/2])
	}
	return b.Bytes()
}

func drain(b *testing.B, r Reader) {
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadCSV reports rows/s of the CSV reader (scanner + Arrow
// buffers).
func BenchmarkReadCSV(b *testing.B) {
	data := benchCSV()
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		r, err := Open("-", ReadOptions{Stdin: bytes.NewReader(data)})
		if err != nil {
			b.Fatal(err)
		}
		drain(b, r)
		r.Close()
	}
	b.ReportMetric(float64(200_000*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// benchCSVRandom is benchCSV's table with each row's values drawn at
// random (a fixed seed), as in a real table: benchCSV's cycle through the
// values is one a branch predictor learns.
func benchCSVRandom() []byte {
	var b bytes.Buffer
	b.WriteString("sex,race,education,marital-status,occupation,income\n")
	edu := []string{"HS-grad", "Some-college", "Bachelors", "Masters", "Assoc-voc", "11th"}
	occ := []string{"Prof-specialty", "Craft-repair", "Exec-managerial", "Adm-clerical", "Sales", "?"}
	mar := []string{"Never-married", "Married-civ-spouse", "Divorced"}
	r := rand.New(rand.NewPCG(5, 6))
	for range 200_000 {
		fmt.Fprintf(&b, "%s,White,%s,%s,%s,%s\n", []string{"Male", "Female"}[r.IntN(2)], edu[r.IntN(6)],
			mar[r.IntN(3)], occ[r.IntN(6)], []string{"<=50K", ">50K"}[r.IntN(2)])
	}
	return b.Bytes()
}

// BenchmarkReadCSVCoded reads benchCSVRandom with every column read as
// codes over its labels (ReadOptions.Labels), as encrypt, estimate,
// bitflip and anonymize read their codebook columns.
func BenchmarkReadCSVCoded(b *testing.B) {
	data := benchCSVRandom()
	r, err := Open("-", ReadOptions{Stdin: bytes.NewReader(data)})
	if err != nil {
		b.Fatal(err)
	}
	seen := make([]map[string]bool, len(r.Schema().Fields()))
	EachBatch(r, func(rec arrow.RecordBatch, _ int64) error {
		for j := range seen {
			if seen[j] == nil {
				seen[j] = map[string]bool{}
			}
			v := ValuesOf(rec.Column(j))
			for i := range int(rec.NumRows()) {
				seen[j][strings.Clone(v.String(i))] = true
			}
		}
		return nil
	})
	labels := map[string]*Labels{}
	for j, f := range r.Schema().Fields() {
		labels[f.Name] = NewLabels(slices.Sorted(maps.Keys(seen[j])))
	}
	r.Close()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := Open("-", ReadOptions{Stdin: bytes.NewReader(data), Labels: labels, ReuseBuffers: true})
		if err != nil {
			b.Fatal(err)
		}
		drain(b, r)
		r.Close()
	}
	b.ReportMetric(float64(200_000*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkWriteParquetReadBack converts the CSV to Parquet and reads it.
func BenchmarkWriteParquetReadBack(b *testing.B) {
	data := benchCSV()
	dir := b.TempDir()
	for i := 0; i < b.N; i++ {
		r, _ := Open("-", ReadOptions{Stdin: bytes.NewReader(data)})
		p := filepath.Join(dir, "x.parquet")
		w, err := Create(p, r.Schema(), nil, WriteOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err := w.Write(rec); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Commit(); err != nil {
			b.Fatal(err)
		}
		r.Close()
		pr, err := Open(p, ReadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		drain(b, pr)
		pr.Close()
	}
	b.ReportMetric(float64(200_000*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkReadCSVFile compares reading a CSV file with a bound sidecar
// (SHA-256 of every byte checked at the end) and without one.
func BenchmarkReadCSVFile(b *testing.B) {
	data := benchCSV()
	dir := b.TempDir()
	in, err := Open("-", ReadOptions{Stdin: bytes.NewReader(data)})
	if err != nil {
		b.Fatal(err)
	}
	bound := filepath.Join(dir, "bound.csv")
	w, err := Create(bound, in.Schema(), Meta{"n": "200000"}, WriteOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if err := EachBatch(in, func(rec arrow.RecordBatch, _ int64) error { return w.Write(rec) }); err != nil {
		b.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		b.Fatal(err)
	}
	plain := filepath.Join(dir, "plain.csv")
	if err := os.WriteFile(plain, data, 0o644); err != nil {
		b.Fatal(err)
	}
	for _, p := range []string{bound, plain} {
		b.Run(filepath.Base(p), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				r, err := Open(p, ReadOptions{})
				if err != nil {
					b.Fatal(err)
				}
				drain(b, r)
				r.Close()
			}
		})
	}
}

// BenchmarkReadArrow reads the CSV's rows from an Arrow IPC stream in
// memory: decoding plus validateBatch, the cost of checking every batch.
func BenchmarkReadArrow(b *testing.B) {
	data := benchCSV()
	r, _ := Open("-", ReadOptions{Stdin: bytes.NewReader(data)})
	var buf bytes.Buffer
	w, err := Create("-", r.Schema(), nil, WriteOptions{Format: Arrow, Stdout: &buf})
	if err != nil {
		b.Fatal(err)
	}
	if err := EachBatch(r, func(rec arrow.RecordBatch, _ int64) error { return w.Write(rec) }); err != nil {
		b.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		b.Fatal(err)
	}
	r.Close()
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ar, err := Open("-", ReadOptions{Stdin: bytes.NewReader(buf.Bytes())})
		if err != nil {
			b.Fatal(err)
		}
		drain(b, ar)
		ar.Close()
	}
	b.ReportMetric(float64(200_000*b.N)/b.Elapsed().Seconds(), "rows/s")
}
