package perturb_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/internal/releasetest"
	"github.com/pramkit/pramkit/pkg/table"
)

// TestInputsReuseBuffers: perturb reads its inputs with
// table.ReadOptions.ReuseBuffers, so a released row group's (Parquet) or
// message's (Arrow IPC) buffers are handed to a later one. Inputs of
// several 64 Ki-row row groups, whose buffers (256 KiB a column) are in
// the pooled range, give the same release, byte for byte, from Parquet
// and from Arrow IPC files, at GOMAXPROCS 1 and 2 and two chunk sizes, as
// a first run that pooled nothing (table.PoolNoBuffersForTests): a batch
// whose buffers were reused while its codes were still needed would
// change the release.
func TestInputsReuseBuffers(t *testing.T) {
	if testing.Short() {
		t.Skip("150,000 rows")
	}
	dir := t.TempDir()
	const m = 150_000
	r := rand.New(rand.NewPCG(3, 4))
	cb := releasetest.WriteCodebook(t, dir,
		releasetest.Categorical{Name: "a", Categories: releasetest.Labels("a", 5)},
		releasetest.Categorical{Name: "b", Categories: releasetest.Labels("b", 3)},
		releasetest.Categorical{Name: "c", Categories: releasetest.Labels("c", 7)})
	abRows, cRows := make([][]string, m), make([][]string, m)
	for i := range m {
		abRows[i] = []string{fmt.Sprintf("a%d", r.IntN(5)), fmt.Sprintf("b%d", r.IntN(3))}
		cRows[i] = []string{fmt.Sprintf("c%d", r.IntN(7))}
	}
	var pq, arrow []string
	for i, s := range []struct {
		names []string
		rows  [][]string
	}{{[]string{"a", "b"}, abRows}, {[]string{"c"}, cRows}} {
		in := filepath.Join(dir, fmt.Sprint("s", i, ".csv"))
		releasetest.WriteSample(t, in, s.names, s.rows, 10*m)
		enc := filepath.Join(dir, fmt.Sprint("e", i, ".parquet"))
		key := filepath.Join(dir, fmt.Sprint("k", i, ".parquet"))
		if res := runTool(encryptCmd, "--codebook", cb, "--key-out", key, "-o", enc, "--seed", fmt.Sprint(20+i), "--insecure-seed", in); res.Code != 0 {
			t.Fatalf("encrypt: %s", res.Stderr)
		}
		pq = append(pq, enc)
		arrow = append(arrow, cmdtest.CopyTable(t, enc, filepath.Join(dir, fmt.Sprint("e", i, ".arrow"))))
	}
	release := func(out string, ins []string) []byte {
		if res := runTool(perturbCmd, "--no-ledger", "--epsilon", "1", "--seed", "5", "--insecure-seed", "-o", out, ins[0], ins[1]); res.Code != 0 {
			t.Fatalf("perturb: %s", res.Stderr)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	restore := table.PoolNoBuffersForTests()
	ref := release(filepath.Join(dir, "rel-fresh.parquet"), pq)
	restore()
	for ci, cfg := range parallelConfigs[:2] {
		for _, chunk := range []int{cfg.chunk, 1000} {
			for fi, ins := range [][]string{pq, arrow} {
				var got []byte
				withConfig(cfg.procs, chunk, func() {
					got = release(filepath.Join(dir, fmt.Sprint("rel", ci, chunk, fi, ".parquet")), ins)
				})
				if !bytes.Equal(got, ref) {
					t.Errorf("GOMAXPROCS=%d, %d-row chunks, %s inputs: the release differs from the run that pooled nothing", cfg.procs, chunk, []string{"Parquet", "Arrow"}[fi])
				}
			}
		}
	}
}
