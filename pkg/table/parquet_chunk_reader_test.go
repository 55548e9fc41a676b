package table

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDecodeDictAddMatchesValues: decodeDictAdd adds to each cell the
// dictionary value its index points to (random pages of every width up
// to 12 bits, in mixes of run kinds), and on cut or corrupted pages
// fails exactly where, and with the error that, decodeDictIndices does.
func TestDecodeDictAddMatchesValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1))
	for w := 0; w <= 12; w++ {
		for trial := range 30 {
			n := 1 + rng.IntN(400)
			dictN := 1 << w
			if w > 0 && rng.IntN(2) == 0 {
				dictN = 1<<(w-1) + 1 + rng.IntN(1<<(w-1)) // not a power of two
			}
			vals := make([]int32, n)
			for i := range vals {
				if i > 0 && rng.IntN(2) == 0 {
					vals[i] = vals[i-1]
					continue
				}
				vals[i] = int32(rng.IntN(dictN))
			}
			data := encodeHybrid(rng, vals, w)
			lut := make([]uint32, dictN)
			for k := range lut {
				lut[k] = rng.Uint32N(1 << 20)
			}
			base := make([]uint32, n)
			for i := range base {
				base[i] = rng.Uint32N(1 << 20)
			}
			got := slices.Clone(base)
			if err := decodeDictAdd(got, data, lut); err != nil {
				t.Fatalf("w=%d trial %d: %v", w, trial, err)
			}
			for i, k := range vals {
				if got[i] != base[i]+lut[k] {
					t.Fatalf("w=%d trial %d: cell %d is %d, want %d + lut[%d] = %d", w, trial, i, got[i], base[i], k, base[i]+lut[k])
				}
			}
			// Corrupt: cut, a flipped byte, a smaller dictionary.
			bad := slices.Clone(data)
			switch rng.IntN(3) {
			case 0:
				bad = bad[:rng.IntN(len(bad))]
			case 1:
				bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
			}
			small := lut[:rng.IntN(dictN+1)]
			idx := make([]int32, n)
			werr := decodeDictIndices(idx, bad, len(small))
			err := decodeDictAdd(make([]uint32, n), bad, small)
			if fmt.Sprint(err) != fmt.Sprint(werr) {
				t.Fatalf("w=%d trial %d: corrupt page: error %v, decodeDictIndices's %v", w, trial, err, werr)
			}
		}
	}
}

// dictGroupsRead reads every column chunk of path's row groups, in a
// random order of row groups, through DictGroups with one scratch (the
// chunk reuse on or off): each chunk's labels and indices, or its error,
// and what Add makes of it with a random value per label.
func dictGroupsRead(t *testing.T, path string, cols []string, reuse bool, order []int) []string {
	t.Helper()
	defer func(old bool) { reuseChunks = old }(reuseChunks)
	reuseChunks = reuse
	r, err := Open(path, ReadOptions{DictColumns: cols, Columns: cols, ReuseBuffers: true})
	if err != nil {
		return []string{"open: " + err.Error()}
	}
	defer r.Close()
	dg := ParquetDictGroups(r)
	if dg == nil {
		t.Fatalf("%s: not read by DictGroups", path)
	}
	var out []string
	var s, sa DictScratch
	defer s.Close()
	defer sa.Close()
	for _, i := range order {
		if i >= dg.Len() {
			continue
		}
		for j := range cols {
			labels, idx, err := dg.Read(i, j, &s)
			if err != nil {
				out = append(out, fmt.Sprintf("group %d column %d: %v", i, j, err))
			} else {
				out = append(out, fmt.Sprintf("group %d column %d: %q %v", i, j, labels, idx))
			}
			// Add: each label's value is its length + 1000·its position.
			sum := make([]uint32, dg.Rows(i))
			aerr := dg.Add(i, j, &sa, sum, func(labels []string) []uint32 {
				lut := make([]uint32, len(labels))
				for k, l := range labels {
					lut[k] = uint32(len(l) + 1000*k)
				}
				return lut
			})
			if (aerr != nil) != (err != nil) || (err != nil && aerr.Error() != err.Error()) {
				t.Fatalf("%s group %d column %d: Add's error %v, Read's %v", path, i, j, aerr, err)
			}
			if err == nil {
				for r, k := range idx {
					if sum[r] != uint32(len(labels[k])+1000*int(k)) {
						t.Fatalf("%s group %d column %d row %d: Add gave %d, Read label %d %q", path, i, j, r, sum[r], k, labels[k])
					}
				}
			}
		}
	}
	return out
}

// TestDictGroupsReuseMatchesFresh: reading row groups with the chunks'
// buffer and page readers reused (chunkScratch) gives, group by group and
// column by column, the labels and indices of a fresh GetColumnPageReader
// per chunk, on pramkit's files and on arrow-go's own of many variants
// (V1 and V2 pages, several pages per chunk, Snappy or none), row groups
// read in a random order by one scratch.
func TestDictGroupsReuseMatchesFresh(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 1))
	check := func(path string, cols []string) {
		r, err := Open(path, ReadOptions{DictColumns: cols, Columns: cols})
		if err != nil {
			t.Fatal(err)
		}
		n := ParquetDictGroups(r)
		groups := 0
		if n != nil {
			groups = n.Len()
		}
		r.Close()
		if n == nil {
			return
		}
		order := rng.Perm(groups)
		order = append(order, rng.Perm(groups)...) // each group twice
		got := dictGroupsRead(t, path, cols, true, order)
		want := dictGroupsRead(t, path, cols, false, order)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: the reused reads differ from fresh ones:\n%q\n%q", path, got, want)
		}
	}
	before := chunkReuses.Load()
	for range 20 {
		cols, rows := dictRows(1 + rng.IntN(5000))
		check(writeParquetRows(t, cols, rows, 1+rng.IntN(700)), cols[:2])
	}
	if chunkReuses.Load() == before {
		t.Fatal("no chunk was read through a reused page reader")
	}
	read := 0
	for seed := range uint64(60) {
		p, _ := randomParquet(t, seed)
		for _, cols := range [][]string{{"label", "many"}, {"label"}} {
			r, err := Open(p, ReadOptions{DictColumns: cols, Columns: cols})
			if err != nil {
				t.Fatal(err)
			}
			ok := ParquetDictGroups(r) != nil
			r.Close()
			if ok {
				check(p, cols)
				read++
				break
			}
		}
	}
	if read < 30 {
		t.Errorf("DictGroups read %d of 60 random files", read)
	}
}

// TestDictGroupsReuseOnCorruptFiles flips bytes in the pages of pramkit
// Parquet files of several row groups: the reused reads fail on the same
// chunks, with the same errors, as fresh ones, and agree where they read.
func TestDictGroupsReuseOnCorruptFiles(t *testing.T) {
	cols, rows := dictRows(4000)
	good, err := os.ReadFile(writeParquetRows(t, cols, rows, 300))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(23, 1))
	p := filepath.Join(t.TempDir(), "bad.parquet")
	failed := 0
	for trial := range 200 {
		bad := slices.Clone(good)
		for range 1 + rng.IntN(3) {
			bad[4+rng.IntN(len(bad)*3/4)] ^= byte(1 + rng.IntN(255))
		}
		if err := os.WriteFile(p, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		order := rng.Perm(14)
		got := dictGroupsRead(t, p, cols[:2], true, order)
		want := dictGroupsRead(t, p, cols[:2], false, order)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: the reused reads differ from fresh ones:\n%q\n%q", trial, got, want)
		}
		for _, l := range got {
			if !slices.Contains([]byte(l), '[') {
				failed++
				break
			}
		}
	}
	if failed < 20 {
		t.Errorf("only %d of 200 corrupt files failed a read", failed)
	}
}
