package perturb_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/releasetest"
	ppl "github.com/pramkit/pramkit/pkg/pipeline"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// parallelConfigs are the (GOMAXPROCS, chunk rows) pairs a seeded run must
// not depend on: one and two cores, the default chunk and chunks of 7 and
// 100 rows (which also cut encrypt's reader batches, since it reads
// batches of ChunkRows rows).
var parallelConfigs = []struct{ procs, chunk int }{{1, ppl.ChunkRows}, {2, ppl.ChunkRows}, {1, 7}, {2, 100}}

// withConfig runs f with GOMAXPROCS and pipeline.ChunkRows set.
func withConfig(procs, chunk int, f func()) {
	oldProcs, oldChunk := runtime.GOMAXPROCS(procs), ppl.ChunkRows
	ppl.ChunkRows = chunk
	defer func() { runtime.GOMAXPROCS(oldProcs); ppl.ChunkRows = oldChunk }()
	f()
}

// TestSeededRunsIgnoreCoresAndChunks: encrypt (one-time and PRF pads),
// perturb (gamma-diagonal, with and without --noise-key) and decrypt (CSV
// and Parquet out) seeded with --seed N --insecure-seed give the same
// output at GOMAXPROCS 1 and 2 and at every chunk size: every draw is keyed
// by the row's index (rng.Keyed), never by the order workers run in.
// Encrypted tables and keys are compared cell by cell with metadata whose
// public key id (always from crypto/rand) is masked; perturb's and
// decrypt's outputs, from the same inputs, byte for byte.
func TestSeededRunsIgnoreCoresAndChunks(t *testing.T) {
	dir := t.TempDir()
	const m = 3000
	r := rand.New(rand.NewPCG(1, 2))
	cb := releasetest.WriteCodebook(t, dir,
		releasetest.Categorical{Name: "a", Categories: releasetest.Labels("a", 5)},
		releasetest.Categorical{Name: "b", Categories: releasetest.Labels("b", 3)},
		releasetest.Categorical{Name: "c", Categories: releasetest.Labels("c", 7)})
	aRows, cRows := make([][]string, m), make([][]string, m)
	for i := range m {
		aRows[i] = []string{fmt.Sprintf("a%d", r.IntN(5)), fmt.Sprintf("b%d", r.IntN(3))}
		cRows[i] = []string{fmt.Sprintf("c%d", r.IntN(7))}
	}
	aIn, cIn := filepath.Join(dir, "a.sample.csv"), filepath.Join(dir, "c.sample.parquet")
	releasetest.WriteSample(t, aIn, []string{"a", "b"}, aRows, 10*m)
	releasetest.WriteSample(t, cIn, []string{"c"}, cRows, 10*m)
	prf := filepath.Join(dir, "c.prf")
	noise := filepath.Join(dir, "server.noise")
	os.WriteFile(prf, []byte(strings.Repeat("7e", 32)), 0o600)
	os.WriteFile(noise, []byte(strings.Repeat("3d", 32)), 0o600)

	// Encrypt in every configuration; the first one's files feed perturb.
	var encA, keyA, encC, keyC string
	var ref []string
	for ci, cfg := range parallelConfigs {
		sub := filepath.Join(dir, fmt.Sprint("enc", ci))
		os.Mkdir(sub, 0o755)
		ea, ka := filepath.Join(sub, "a.enc.parquet"), filepath.Join(sub, "a.key.parquet")
		ec, kc := filepath.Join(sub, "c.enc.arrow"), filepath.Join(sub, "c.key.parquet")
		withConfig(cfg.procs, cfg.chunk, func() {
			if res := runTool(encryptCmd, "--codebook", cb, "--key-out", ka, "-o", ea, "--seed", "11", "--insecure-seed", aIn); res.Code != 0 {
				t.Fatalf("encrypt a: %s", res.Stderr)
			}
			if res := runTool(encryptCmd, "--codebook", cb, "--key-out", kc, "-o", ec, "--prf-key", prf, "--seed", "12", "--insecure-seed", cIn); res.Code != 0 {
				t.Fatalf("encrypt c: %s", res.Stderr)
			}
		})
		got := []string{maskedTable(t, ea), maskedTable(t, ka), maskedTable(t, ec), maskedTable(t, kc)}
		if ci == 0 {
			ref, encA, keyA, encC, keyC = got, ea, ka, ec, kc
			continue
		}
		for i := range got {
			if got[i] != ref[i] {
				t.Errorf("encrypt with GOMAXPROCS=%d, %d-row chunks: output %d differs from GOMAXPROCS=%d, %d-row chunks", cfg.procs, cfg.chunk, i, parallelConfigs[0].procs, parallelConfigs[0].chunk)
			}
		}
	}

	// Perturb and decrypt the same files in every configuration.
	var refBytes [][]byte
	for ci, cfg := range parallelConfigs {
		sub := filepath.Join(dir, fmt.Sprint("rel", ci))
		os.Mkdir(sub, 0o755)
		rel, relNoise := filepath.Join(sub, "release.parquet"), filepath.Join(sub, "release.noise.arrow")
		outCSV, outPQ := filepath.Join(sub, "out.csv"), filepath.Join(sub, "out.parquet")
		withConfig(cfg.procs, cfg.chunk, func() {
			if res := runTool(perturbCmd, "--no-ledger", "--epsilon", "1", "--seed", "7", "--insecure-seed", "-o", rel, encA, encC); res.Code != 0 {
				t.Fatalf("perturb: %s", res.Stderr)
			}
			if res := runTool(perturbCmd, "--no-ledger", "--gamma", "3", "--noise-key", noise, "-o", relNoise, encA, encC); res.Code != 0 {
				t.Fatalf("perturb --noise-key: %s", res.Stderr)
			}
			if res := runTool(decryptCmd, "--key", keyA, "--key", keyC, "-o", outCSV, rel); res.Code != 0 {
				t.Fatalf("decrypt: %s", res.Stderr)
			}
			if res := runTool(decryptCmd, "--key", keyC, "--key", keyA, "-o", outPQ, relNoise); res.Code != 0 {
				t.Fatalf("decrypt: %s", res.Stderr)
			}
		})
		var got [][]byte
		for _, p := range []string{rel, relNoise, outCSV, outCSV + ".meta.json", outPQ} {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, b)
		}
		if ci == 0 {
			refBytes = got
			continue
		}
		for i := range got {
			if !bytes.Equal(got[i], refBytes[i]) {
				t.Errorf("GOMAXPROCS=%d, %d-row chunks: output %d (release, noise-key release, CSV, its sidecar, Parquet) differs", cfg.procs, cfg.chunk, i)
			}
		}
	}
}

// maskedTable renders a table's cells and metadata with the public key id
// masked (it comes from crypto/rand in every run, seeded or not).
func maskedTable(t *testing.T, path string) string {
	t.Helper()
	names, rows, meta := releasetest.ReadTable(t, path)
	var cols []release.Column
	cols, err := release.ReadColumns(meta, path, "")
	if err != nil {
		t.Fatal(err)
	}
	masked := table.Meta{}
	for k, v := range meta {
		for _, c := range cols {
			v = strings.ReplaceAll(v, c.KeyID, "KEYID")
		}
		masked[k] = v
	}
	return fmt.Sprint(names, rows, masked)
}
