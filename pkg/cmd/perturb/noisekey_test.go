package perturb_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/releasetest"
	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/pram"
	"github.com/pramkit/pramkit/pkg/release"
)

// TestNoiseKeyFollowsLemmaIII1 is TestLemmaIII1FullTransitionRows with
// --noise-key: the keyed offsets released through encrypt, perturb and
// decrypt follow the rows of A (γ/q kept, 1/q to each other value).
// alpha = 1e-6 per row of A.
func TestNoiseKeyFollowsLemmaIII1(t *testing.T) {
	const perValue, gamma, alpha = 10_000, 5.0, 1e-6
	dir := t.TempDir()
	key := filepath.Join(dir, "server.noise")
	os.WriteFile(key, []byte(strings.Repeat("5a", 32)), 0o600)
	curators := []curator{{name: "alice", ks: []int{3}, format: "csv"}, {name: "bob", ks: []int{2}, format: "parquet", prf: true}}
	dom, _ := pram.NewDomain([]uint32{3, 2})
	K := int(dom.Size())
	var x [][]uint32
	for g := range K {
		for range perValue {
			row := make([]uint32, 2)
			dom.Decode(uint64(g), row)
			x = append(x, row)
		}
	}
	got, meta := pipeline(t, dir, curators, x, int64(len(x)), "--gamma", "5", "--noise-key", key, "--no-ledger")
	if meta[release.KeyNoise] != release.NoisePRF {
		t.Errorf("release metadata %q = %q, want %q", release.KeyNoise, meta[release.KeyNoise], release.NoisePRF)
	}
	counts := make([][]int64, K)
	for g := range counts {
		counts[g] = make([]int64, K)
	}
	for i := range x {
		from, _ := dom.Encode(x[i])
		to, _ := dom.Encode(got[i])
		counts[from][to]++
	}
	q := gamma + float64(K) - 1
	for from := range K {
		probs := make([]float64, K)
		for to := range probs {
			probs[to] = 1 / q
		}
		probs[from] = gamma / q
		stattest.AssertChiSquare(t, fmt.Sprintf("row of A for joint value %d", from), counts[from], probs, alpha)
	}
}

// TestNoiseKeyPartsReproduceTheRelease is the retry property a Beam or
// Spark worker relies on: perturb --noise-key on the whole encrypted
// sample, and a worker applying pram.KeyedOffsets (keyed by
// release.DeriveNoiseKey) to two row-parts of the same ciphertext, each at
// its first row, give identical rows.
func TestNoiseKeyPartsReproduceTheRelease(t *testing.T) {
	const m, k, cut = 1000, 7, 413
	dir := t.TempDir()
	master := []byte(strings.Repeat("a7", 32))
	keyFile := filepath.Join(dir, "server.noise")
	os.WriteFile(keyFile, master, 0o600)
	enc := encrypted(t, dir, "c", k, m, 5000)
	rel := filepath.Join(dir, "release.csv")
	if res := runTool(perturbCmd, "--gamma", "2", "--noise-key", keyFile, "--no-ledger", enc, "-o", rel); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	_, encRows, encMeta := releasetest.ReadTable(t, enc)
	_, relRows, _ := releasetest.ReadTable(t, rel)
	mk, _ := release.ParsePRFKey(master)
	cols, err := release.ReadColumns(encMeta, enc, "")
	if err != nil {
		t.Fatal(err)
	}
	rk := release.DeriveNoiseKey(mk, encMeta[release.KeyFingerprint], 2, []string{cols[0].KeyID})
	dom, _ := pram.NewDomain([]uint32{k})
	mech, _ := pram.NewMechanism(2, dom)
	ko, err := pram.NewKeyedOffsets(mech, rk[:])
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for _, part := range [][2]int{{0, cut}, {cut, m}} {
		col := make([]uint32, part[1]-part[0])
		for i := range col {
			v, _ := strconv.Atoi(encRows[part[0]+i][0])
			col[i] = uint32(v)
		}
		if err := ko.PerturbColumns(uint64(part[0]), [][]uint32{col}); err != nil {
			t.Fatal(err)
		}
		for i, v := range col {
			row := part[0] + i
			if want := relRows[row][0]; strconv.Itoa(int(v)) != want {
				t.Fatalf("row %d: part gives %d, the whole run %s", row+1, v, want)
			}
			if relRows[row][0] != encRows[row][0] {
				moved++
			}
		}
	}
	// P(move) = (K−1)/q = 6/8: a release that moved nothing would pass the
	// comparison vacuously.
	if moved < m/2 {
		t.Errorf("%d of %d rows moved, want ≈ %d", moved, m, m*3/4)
	}
}
