package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/beam/internal/beamtest"
	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/cmd/decrypt"
	"github.com/pramkit/pramkit/pkg/cmd/estimate"
	"github.com/pramkit/pramkit/pkg/cmd/perturb"
	"github.com/pramkit/pramkit/pkg/cmd/sample"
)

// keyedCommands are the pramkit-beam commands of the console block in
// "When one machine is not enough" that runs encrypt.
func keyedCommands(t *testing.T) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(beamtest.MainRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var block [][]string
	section, in := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			section = line == "## When one machine is not enough"
		case section && line == "```console":
			in, block = true, nil
		case in && line == "```":
			in = false
			if len(block) > 0 && block[0][0] == "encrypt" {
				return block
			}
		case in && strings.HasPrefix(line, "$ bin/pramkit-beam "):
			block = append(block, splitWords(strings.TrimPrefix(line, "$ bin/pramkit-beam ")))
		}
	}
	t.Fatal("README.md: no console block starting with pramkit-beam encrypt in \"When one machine is not enough\"")
	return nil
}

// TestREADMEKeyedCommands runs the README's encrypt, perturb, decrypt and
// estimate commands on Prism over two curators' Adult samples, then checks
// that the perturb tool makes the same release from the Beam ciphertexts,
// that the decrypt tool opens the Beam release with the Beam keys into the
// same rows, that the estimate tool estimates them as pramkit-beam did,
// and that the release is the sample perturbed: with ε = 1, n = 32561,
// m = 5000, K = 32, a row keeps its joint value exactly when its offset is
// 0, with probability γ/(γ + K − 1) ≈ 0.282 (γ ≈ 12.19), so the share of
// rows equal to the sample lies in [0.22, 0.34] except with probability
// < 10⁻¹² (±0.06 is over 9 standard deviations of 0.0064); misaligned pads
// would give ≈ 1/32.
func TestREADMEKeyedCommands(t *testing.T) {
	cmds := keyedCommands(t)
	names := []string{}
	for _, c := range cmds {
		names = append(names, c[0])
	}
	if !slices.Equal(names, []string{"encrypt", "encrypt", "perturb", "decrypt", "estimate"}) {
		t.Fatalf("README commands %v", names)
	}
	root := beamtest.MainRoot(t)
	_, dir := beamtest.AdultRelease(t)
	t.Chdir(dir)
	os.MkdirAll("testdata/adult", 0o755)
	cb, err := os.ReadFile(filepath.Join(root, "testdata", "adult", "codebook.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile("testdata/adult/codebook.json", cb, 0o644)
	os.MkdirAll("enc", 0o755)
	for i, name := range []string{"alice.prf", "bob.prf", "server.noise"} {
		k := make([]byte, 32)
		for j := range k {
			k[j] = byte(17*i + j)
		}
		os.WriteFile(name, k, 0o600)
	}
	smp := beamtest.Tool(sample.NewCmd)
	beamtest.MustRun(t, smp, "--secret", "shared.secret", "-m", "5000", "--columns", "education", "adult.arrow", "-o", "alice.sample.csv")
	beamtest.MustRun(t, smp, "--secret", "shared.secret", "-m", "5000", "--columns", "income", "adult.arrow", "-o", "bob.sample.csv")
	for _, args := range cmds {
		os.Args = append([]string{"pramkit-beam"}, args...)
		if code := run(); code != 0 {
			t.Fatalf("pramkit-beam %q: exit %d", args, code)
		}
	}
	shard := "rel-00000-of-00001.csv"
	// The perturb tool perturbs the Beam ciphertexts into the Beam release.
	beamtest.MustRun(t, beamtest.Tool(perturb.NewCmd), "--epsilon", "1", "--noise-key", "server.noise", "--no-ledger",
		"enc/alice-00000-of-00001.csv", "enc/bob-00000-of-00001.csv", "-o", "cli.rel.csv")
	_, wantRel, _ := cmdtest.ReadTable(t, "cli.rel.csv")
	_, gotRel, _ := cmdtest.ReadTable(t, shard)
	if len(wantRel) != 5000 || fmt.Sprint(gotRel) != fmt.Sprint(wantRel) {
		t.Errorf("the Beam release differs from the perturb tool's on the Beam ciphertexts")
	}
	beamtest.MustRun(t, beamtest.Tool(decrypt.NewCmd), "--key", "alice.prf.key", "--key", "bob.prf.key", shard, "-o", "cli.dec.csv")
	_, want, _ := cmdtest.ReadTable(t, "cli.dec.csv")
	_, got, _ := cmdtest.ReadTable(t, "dec-00000-of-00001.csv")
	if len(want) != 5000 || len(got) != len(want) {
		t.Fatalf("%d rows, the decrypt tool %d", len(got), len(want))
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("row %d is %v, the decrypt tool's %v", i, got[i], want[i])
		}
	}
	beamtest.MustRun(t, beamtest.Tool(estimate.NewCmd), "dec-00000-of-00001.csv", "-o", "cli.est.csv")
	a, _ := os.ReadFile("cli.est.csv")
	b, _ := os.ReadFile("joint-est.csv")
	if len(a) < 100 || string(a) != string(b) {
		t.Errorf("joint-est.csv differs from the estimate tool's on the same shards")
	}
	_, alice, _ := cmdtest.ReadTable(t, "alice.sample.csv")
	_, bob, _ := cmdtest.ReadTable(t, "bob.sample.csv")
	same := 0
	for i := range got {
		if got[i][0] == alice[i][0] && got[i][1] == bob[i][0] {
			same++
		}
	}
	if share := float64(same) / float64(len(got)); share < 0.22 || share > 0.34 {
		t.Errorf("%.3f of the rows keep their joint value, want ≈ 0.28", share)
	}
}
