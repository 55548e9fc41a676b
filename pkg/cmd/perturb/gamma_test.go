package perturb_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/internal/releasetest"
	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/cmd/decrypt"
	"github.com/pramkit/pramkit/pkg/cmd/encrypt"
	"github.com/pramkit/pramkit/pkg/pram"
	"github.com/pramkit/pramkit/pkg/table"
)

func runTool(build func(*cli.Streams) *cobra.Command, args ...string) releasetest.Result {
	return releasetest.Run(build, nil, args...)
}

func encryptCmd(s *cli.Streams) *cobra.Command { return encrypt.NewCmd(s, nil) }
func perturbCmd(s *cli.Streams) *cobra.Command { return releasetest.NewPerturb(s, nil) }
func decryptCmd(s *cli.Streams) *cobra.Command { return decrypt.NewCmd(s, nil) }

// curator holds some columns of the joint table; its cells are the labels
// "<column><index>".
type curator struct {
	name   string
	ks     []int
	format string // of its files: csv, parquet or arrow
	prf    bool   // PRF pads instead of one-time pads
}

func (c curator) colNames() []string {
	out := make([]string, len(c.ks))
	for j := range c.ks {
		out[j] = fmt.Sprintf("%s_%d", c.name, j)
	}
	return out
}

// pipeline runs encrypt at each curator, perturb at the server and
// decrypt, all through the commands, on the joint rows x (components in
// curator order). It returns the decrypted rows as value indices and the
// release's metadata.
func pipeline(t *testing.T, dir string, curators []curator, x [][]uint32, n int64, perturbArgs ...string) ([][]uint32, table.Meta) {
	t.Helper()
	var cbCols []releasetest.Categorical
	for _, c := range curators {
		for j, name := range c.colNames() {
			cbCols = append(cbCols, releasetest.Categorical{Name: name, Categories: releasetest.Labels(name+"=", c.ks[j])})
		}
	}
	cb := releasetest.WriteCodebook(t, dir, cbCols...)
	prf := filepath.Join(dir, "curator.prf")
	os.WriteFile(prf, []byte(strings.Repeat("c3", 32)), 0o600)
	var encs, keys []string
	off := 0
	for ci, c := range curators {
		names := c.colNames()
		rows := make([][]string, len(x))
		for i, row := range x {
			rows[i] = make([]string, len(names))
			for j, name := range names {
				rows[i][j] = name + "=" + strconv.Itoa(int(row[off+j]))
			}
		}
		off += len(names)
		in := filepath.Join(dir, c.name+".sample."+c.format)
		releasetest.WriteSample(t, in, names, rows, n)
		enc := filepath.Join(dir, c.name+".enc."+c.format)
		key := filepath.Join(dir, c.name+".key."+c.format)
		args := []string{"--codebook", cb, "--key-out", key, "-o", enc, "--seed", strconv.Itoa(100 + ci), "--insecure-seed", in}
		if c.prf {
			args = append(args, "--prf-key", prf)
		}
		if res := runTool(encryptCmd, args...); res.Code != 0 {
			t.Fatalf("encrypt %s: %s", c.name, res.Stderr)
		}
		encs = append(encs, enc)
		keys = append([]string{"--key", key}, keys...) // reverse order: keys match by name
	}
	rel := filepath.Join(dir, "release.arrow")
	args := append(append([]string{"-o", rel, "--seed", "7", "--insecure-seed"}, perturbArgs...), encs...)
	if res := runTool(perturbCmd, args...); res.Code != 0 {
		t.Fatalf("perturb: %s", res.Stderr)
	}
	out := filepath.Join(dir, "sanitized.arrow")
	if res := runTool(decryptCmd, append(keys, rel, "-o", out)...); res.Code != 0 {
		t.Fatalf("decrypt: %s", res.Stderr)
	}
	_, rows, _ := releasetest.ReadTable(t, out)
	_, _, relMeta := releasetest.ReadTable(t, rel)
	got := make([][]uint32, len(rows))
	for i, row := range rows {
		got[i] = make([]uint32, len(row))
		for j, cell := range row {
			v, err := strconv.Atoi(cell[strings.IndexByte(cell, '=')+1:])
			if err != nil {
				t.Fatalf("row %d: label %q", i+1, cell)
			}
			got[i][j] = uint32(v)
		}
	}
	if len(got) != len(x) {
		t.Fatalf("%d rows decrypted, want %d", len(got), len(x))
	}
	return got, relMeta
}

// TestLemmaIII1FullTransitionRows checks on K = 3·2 = 6, small enough to
// tabulate A, that decrypt(perturb(encrypt(x))) releases each joint value x
// as y with frequency A[y, x] = γ/q if y = x, else 1/q (Lin–Wang–Rane
// Lemma III.1), through the three commands' code paths.
func TestLemmaIII1FullTransitionRows(t *testing.T) {
	const (
		perValue = 10_000
		gamma    = 5.0 // q = γ + K − 1 = 10: keep 0.5, move to each other value 0.1
		alpha    = 1e-6
	)
	curators := []curator{{name: "alice", ks: []int{3}, format: "csv"}, {name: "bob", ks: []int{2}, format: "parquet"}}
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
	got, meta := pipeline(t, t.TempDir(), curators, x, int64(len(x)), "--gamma", "5")
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
	if meta["K"] != "6" || meta["gamma"] != "5" || meta["mechanism"] != "gamma-diagonal" {
		t.Errorf("release metadata %v", meta)
	}
}

// TestLemmaIII1SeveralCurators checks keep and move frequencies for three
// curators holding five columns, K = 5·4·3·7·2 = 840, one of them with PRF
// pads: kept with frequency γ/q, and, when moved, the offset x̂ − x
// uniform over the K − 1 non-zero joint values.
func TestLemmaIII1SeveralCurators(t *testing.T) {
	const (
		m     = 120_000
		gamma = 839.0 // q = 1678: keep 0.5; ~71 moved rows per offset
		alpha = 1e-6
	)
	curators := []curator{
		{name: "alice", ks: []int{5, 4}, format: "csv"},
		{name: "bob", ks: []int{3}, format: "parquet", prf: true},
		{name: "carol", ks: []int{7, 2}, format: "arrow"},
	}
	ks := []uint32{5, 4, 3, 7, 2}
	dom, _ := pram.NewDomain(ks)
	K := dom.Size()
	r := rand.New(rand.NewPCG(5, 6))
	x := make([][]uint32, m)
	for i := range x {
		x[i] = make([]uint32, len(ks))
		dom.Decode(r.Uint64N(K), x[i])
	}
	got, meta := pipeline(t, t.TempDir(), curators, x, 10*m, "--gamma", "839")
	var kept int64
	moved := make([]int64, K)
	d := make([]uint32, len(ks))
	for i := range x {
		for j, k := range ks {
			d[j] = (got[i][j] + k - x[i][j]) % k
		}
		g, _ := dom.Encode(d)
		if g == 0 {
			kept++
		}
		moved[g]++
	}
	q := gamma + float64(K) - 1
	stattest.AssertBinomial(t, "rows kept", kept, m, gamma/q, alpha)
	probs := make([]float64, K)
	for g := 1; g < int(K); g++ {
		probs[g] = 1 / float64(K-1)
	}
	moved[0] = 0
	stattest.AssertChiSquare(t, "offsets of moved rows", moved, probs, alpha)
	if meta["K"] != "840" || meta["pad"] != "mixed" {
		t.Errorf("release metadata K = %q, pad = %q", meta["K"], meta["pad"])
	}
}

// encrypted writes one curator's encrypted table of m rows of one column
// with k categories, sampled from n rows, and returns its path.
func encrypted(t *testing.T, dir, name string, k, m int, n int64) string {
	t.Helper()
	rows := make([][]string, m)
	for i := range rows {
		rows[i] = []string{fmt.Sprintf("v%d", i%k)}
	}
	in := filepath.Join(dir, name+".sample.csv")
	releasetest.WriteSample(t, in, []string{name}, rows, n)
	cbDir := filepath.Join(dir, name+".cb")
	os.Mkdir(cbDir, 0o755)
	cb := releasetest.WriteCodebook(t, cbDir, releasetest.Categorical{Name: name, Categories: releasetest.Labels("v", k)})
	enc := filepath.Join(dir, name+".enc.parquet")
	if res := runTool(encryptCmd, "--codebook", cb, "--key-out", filepath.Join(dir, name+".key"), "-o", enc, in); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	return enc
}

// TestEpsilonAndGammaFollowTheoremIII2 checks the γ and ε perturb records
// against hand-computed values of Theorem III.2,
// ε = ln((n + m(γ − 1))/n), and its inverse γ = 1 + (n/m)(e^ε − 1).
func TestEpsilonAndGammaFollowTheoremIII2(t *testing.T) {
	tests := []struct {
		name             string
		n, m             int
		flag, value      string
		wantGamma, wantE float64
	}{
		// 1 + 100·(11 − 1)/1000 = 2, so ε = ln 2.
		{"gamma 11, n 1000, m 100", 1000, 100, "--gamma", "11", 11, math.Ln2},
		// γ = 1 + (1000/100)(2 − 1) = 11.
		{"epsilon ln 2, n 1000, m 100", 1000, 100, "--epsilon", "0.6931471805599453", 11, math.Ln2},
		// No sampling (m = n): ε = ln γ.
		{"gamma e, m = n", 100, 100, "--gamma", "2.718281828459045", math.E, 1},
		// γ = 1 + 4(e − 1) = 7.873127313836179.
		{"epsilon 1, n 400, m 100", 400, 100, "--epsilon", "1", 1 + 4*(math.E-1), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			enc := encrypted(t, dir, "a", 4, tt.m, int64(tt.n))
			out := filepath.Join(dir, "rel.csv")
			if res := runTool(perturbCmd, tt.flag, tt.value, enc, "-o", out); res.Code != 0 {
				t.Fatal(res.Stderr)
			}
			_, _, meta := releasetest.ReadTable(t, out)
			g, _ := meta.Float("gamma", "")
			e, _ := meta.Float("epsilon", "")
			if math.Abs(g-tt.wantGamma) > 1e-12*tt.wantGamma || math.Abs(e-tt.wantE) > 1e-12 {
				t.Errorf("γ = %v, ε = %v; want %v, %v", g, e, tt.wantGamma, tt.wantE)
			}
			if meta["n"] != strconv.Itoa(tt.n) || meta["m"] != strconv.Itoa(tt.m) || meta["K"] != "4" || meta["releases"] != "1" {
				t.Errorf("metadata %v", meta)
			}
		})
	}
}

// TestExampleIII3LikelihoodRatioEqualsEpsilon computes, by brute force over
// every table of n = 3 rows on K = 2 values, every neighbour and every
// output, the largest likelihood ratio of the release that perturb makes
// for ε = 0.5 with m = 2 (the γ it records), and checks that it equals
// e^ε, attained as in Example III.3 (all rows a against one b, output all b).
func TestExampleIII3LikelihoodRatioEqualsEpsilon(t *testing.T) {
	const n, m, eps = 3, 2, 0.5
	dir := t.TempDir()
	enc := encrypted(t, dir, "a", 2, m, n)
	out := filepath.Join(dir, "rel.csv")
	if res := runTool(perturbCmd, "--epsilon", "0.5", enc, "-o", out); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	_, _, meta := releasetest.ReadTable(t, out)
	gamma, _ := meta.Float("gamma", "")
	dom, _ := pram.NewDomain([]uint32{2})
	mech, err := pram.NewMechanism(gamma, dom)
	if err != nil {
		t.Fatal(err)
	}
	// P(output | table): the sample is a uniformly random ordered pair of
	// distinct rows, then each sampled row goes through A.
	prob := func(tab [n]uint64, o [m]uint64) float64 {
		var sum float64
		var count int
		for i := range n {
			for j := range n {
				if i != j {
					sum += mech.Transition(o[0], tab[i]) * mech.Transition(o[1], tab[j])
					count++
				}
			}
		}
		return sum / float64(count)
	}
	var worst float64
	for t0 := range 1 << n {
		var tab [n]uint64
		for i := range n {
			tab[i] = uint64(t0>>i) & 1
		}
		for row := range n { // the neighbour replaces one row
			nb := tab
			nb[row] ^= 1
			for o0 := range 1 << m {
				o := [m]uint64{uint64(o0) & 1, uint64(o0>>1) & 1}
				worst = max(worst, prob(tab, o)/prob(nb, o))
			}
		}
	}
	if want := math.Exp(eps); math.Abs(worst-want) > 1e-12 {
		t.Errorf("largest likelihood ratio %v, want e^ε = %v", worst, want)
	}
	example := prob([n]uint64{1, 0, 0}, [m]uint64{1, 1}) / prob([n]uint64{0, 0, 0}, [m]uint64{1, 1})
	if math.Abs(example-math.Exp(eps)) > 1e-12 {
		t.Errorf("Example III.3 ratio %v, want %v", example, math.Exp(eps))
	}
}

// TestSecondReleaseComposes checks that perturbing a release again is
// refused unless --allow-recompose, that the composed ε printed and
// recorded is ln((n + m(γ_1γ_2 − 1))/n), and that the counter survives
// decrypt and encrypt.
func TestSecondReleaseComposes(t *testing.T) {
	const n, m = 1000, 100
	dir := t.TempDir()
	enc := encrypted(t, dir, "a", 3, m, n)
	rel1 := filepath.Join(dir, "rel1.parquet")
	if res := runTool(perturbCmd, "--gamma", "11", enc, "-o", rel1); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	// ln((1000 + 100·(11·3 − 1))/1000) = ln 4.2.
	want := math.Log(4.2)
	rel2 := filepath.Join(dir, "rel2.parquet")
	res := runTool(perturbCmd, "--gamma", "3", rel1, "-o", rel2)
	if res.Code != cli.ExitFailure || !strings.Contains(res.Stderr, fmt.Sprintf("composes to ε = %.6g", want)) || !strings.Contains(res.Stderr, "pass --allow-recompose") {
		t.Errorf("second release: code %d, %q", res.Code, res.Stderr)
	}
	if _, err := os.Stat(rel2); err == nil {
		t.Error("a refused release left an output file")
	}
	res = runTool(perturbCmd, "--gamma", "3", "--allow-recompose", rel1, "-o", rel2)
	if res.Code != 0 || !strings.Contains(res.Stderr, fmt.Sprintf("composed ε = %.6g", want)) {
		t.Fatalf("--allow-recompose: code %d, %q", res.Code, res.Stderr)
	}
	_, _, meta := releasetest.ReadTable(t, rel2)
	ec, _ := meta.Float("epsilon_composed", "")
	e, _ := meta.Float("epsilon", "")
	if meta["releases"] != "2" || meta["gamma_composed"] != "33" || math.Abs(ec-want) > 1e-12 || math.Abs(e-math.Log(1.2)) > 1e-12 {
		t.Errorf("metadata %v", meta)
	}
	// Same γ twice: ComposedEpsilon(n, m, γ, 2).
	rel3 := filepath.Join(dir, "rel3.parquet")
	if res := runTool(perturbCmd, "--gamma", "11", "--allow-recompose", rel1, "-o", rel3); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	_, _, meta3 := releasetest.ReadTable(t, rel3)
	ec3, _ := meta3.Float("epsilon_composed", "")
	if w, _ := pram.ComposedEpsilon(n, m, 11, 2); math.Abs(ec3-w) > 1e-12 {
		t.Errorf("epsilon_composed %v, want %v", ec3, w)
	}
	// decrypt → encrypt → perturb still sees the first release.
	dec := filepath.Join(dir, "dec.csv")
	if res := runTool(decryptCmd, "--key", filepath.Join(dir, "a.key"), rel1, "-o", dec); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	reenc := filepath.Join(dir, "reenc.csv")
	if res := runTool(encryptCmd, "--key-out", filepath.Join(dir, "re.key"), dec, "-o", reenc); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	if res := runTool(perturbCmd, "--gamma", "3", reenc, "-o", filepath.Join(dir, "rel4.csv")); res.Code != cli.ExitFailure || !strings.Contains(res.Stderr, "already perturbed (release 1") {
		t.Errorf("re-encrypted release: code %d, %q", res.Code, res.Stderr)
	}
}

// TestFlagMistakes checks the usage errors of gamma-diagonal: exit 2, one
// message, no output.
func TestFlagMistakes(t *testing.T) {
	dir := t.TempDir()
	enc := encrypted(t, dir, "a", 3, 10, 20)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{enc}, "either --epsilon E or --gamma G"},
		{[]string{"--epsilon", "1", "--gamma", "2", enc}, "either --epsilon E or --gamma G"},
		{[]string{"--epsilon", "0", enc}, "--epsilon must be a finite number > 0, got 0"},
		{[]string{"--epsilon", "-1", enc}, "--epsilon must be a finite number > 0"},
		{[]string{"--epsilon", "NaN", enc}, "--epsilon must be a finite number > 0, got NaN"},
		{[]string{"--epsilon", "+Inf", enc}, "--epsilon must be a finite number > 0"},
		{[]string{"--gamma", "1", enc}, "--gamma must be a finite number > 1, got 1"},
		{[]string{"--gamma", "0.5", enc}, "--gamma must be a finite number > 1"},
		{[]string{"--epsilon", "1000", enc}, "--epsilon 1000 with n = 20, m = 10"},
		{[]string{"--epsilon", "1", "--columns", "a", enc}, "--columns belongs to --mechanism bitflip, not gamma-diagonal"},
		{[]string{"--epsilon", "1", "-", "-"}, "standard input (-) can be only one"},
		{[]string{"--epsilon", "1", "--mechanism", "nope", enc}, `unknown --mechanism "nope"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[:len(tt.args)-1], " "), func(t *testing.T) {
			out := filepath.Join(dir, "out.csv")
			res := runTool(perturbCmd, append(tt.args, "-o", out)...)
			if res.Code != cli.ExitUsage || !strings.Contains(res.Stderr, tt.want) {
				t.Errorf("code %d, stderr %q; want 2 and %q", res.Code, res.Stderr, tt.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("output written")
			}
		})
	}
}

// TestStreamsInBoundedBlocks perturbs more rows than one block, from
// inputs whose batch boundaries differ (CSV against Parquet), and checks
// the joined rows stay aligned: with γ so large that no row moves, the
// release is the ciphertexts side by side.
func TestStreamsInBoundedBlocks(t *testing.T) {
	const m = 2*table.DefaultBatchSize + 123
	dir := t.TempDir()
	a := encrypted(t, dir, "a", 7, m, m)
	bRows := make([][]string, m)
	for i := range bRows {
		bRows[i] = []string{fmt.Sprintf("w%d", (i/3)%5)}
	}
	bIn := filepath.Join(dir, "b.sample.csv")
	releasetest.WriteSample(t, bIn, []string{"b"}, bRows, m)
	cb := releasetest.WriteCodebook(t, dir, releasetest.Categorical{Name: "b", Categories: releasetest.Labels("w", 5)})
	b := filepath.Join(dir, "b.enc.csv")
	if res := runTool(encryptCmd, "--codebook", cb, "--key-out", filepath.Join(dir, "b.key"), "-o", b, bIn); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	rel := filepath.Join(dir, "rel.arrow")
	// γ = 1e30: P(move) = (K − 1)/(γ + K − 1) ≈ 3.4e-29 per row.
	if res := runTool(perturbCmd, "--gamma", "1e30", a, b, "-o", rel); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	_, ra, _ := releasetest.ReadTable(t, a)
	_, rb, _ := releasetest.ReadTable(t, b)
	names, rr, _ := releasetest.ReadTable(t, rel)
	if len(names) != 2 || names[0] != "a" || names[1] != "b" || len(rr) != m {
		t.Fatalf("release columns %v, %d rows", names, len(rr))
	}
	for i := range rr {
		if rr[i][0] != ra[i][0] || rr[i][1] != rb[i][0] {
			t.Fatalf("row %d: %v, want [%s %s]", i+1, rr[i], ra[i][0], rb[i][0])
		}
	}
}

func BenchmarkPerturbTwoCurators(b *testing.B) {
	const m = 200_000
	dir := b.TempDir()
	var encs []string
	for _, c := range releasetest.BenchCurators(b, dir, m) {
		cb, in := c.Codebook, c.Sample
		enc := filepath.Join(dir, c.Name+".enc.arrow")
		if res := runTool(encryptCmd, "--codebook", cb, "--key-out", filepath.Join(dir, c.Name+".key"), "-o", enc, in); res.Code != 0 {
			b.Fatal(res.Stderr)
		}
		encs = append(encs, enc)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res := runTool(perturbCmd, append([]string{"--epsilon", "1", "-o", filepath.Join(dir, "rel.arrow")}, encs...)...); res.Code != 0 {
			b.Fatal(res.Stderr)
		}
	}
	b.ReportMetric(float64(m)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
