package stage

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/beam/internal/beamtest"
	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/bitflip"
	"github.com/pramkit/pramkit/pkg/cli"
	estimatecmd "github.com/pramkit/pramkit/pkg/cmd/estimate"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/rng"
)

// TestBitflipOnPrism randomizes Adult's sex, income and occupation
// (L = 17 bits, q = 0.2) on Prism from Parquet shards read by row group
// (33 splits), next to the perturb tool on the whole table, and checks:
//   - every shard has the tool's columns and metadata, key for key, and
//     the shards hold the input's 32561 rows;
//   - the release is exactly the documented construction: row (file f,
//     row n) is the input's bits randomized by RandomizeKeyed from stream
//     ("BFLP", f·2^40 + n) of the run key of --seed 7, in shard key mod 4
//     at its rank by the order key PRF("BORD", row) — so the output order
//     is a keyed shuffle, and a rerun (checked) gives the same files;
//   - each bit's number of flips over the rows ~ Binomial(N, q): within
//     5.33 standard deviations, false alarm 1e-7 per bit, 1.7e-6 for all
//     17 by the union bound;
//   - estimate reads the 4 shards as parts of one release: its 'sex =
//     Female' is within 5 standard errors of the truth (false alarm 6e-7),
//     as the tool's release's is.
func TestBitflipOnPrism(t *testing.T) {
	dir, cb, rows := adultAnonTable(t)
	const q = 0.2
	args := []string{"--mechanism", "bitflip", "--lie", strconv.FormatFloat(q, 'g', -1, 64), "--columns", "sex,income,occupation",
		"--codebook", cb, "--seed", "7", "--insecure-seed"}
	run := perturbLocalOnPrism(t, dir, len(rows), release.MechanismBitflip, args)
	f, wantCols, wantMeta, got := run.f, run.wantCols, run.wantMeta, run.got

	// The construction, recomputed here.
	var md release.Bitflip
	if err := md.Decode(wantMeta, "want.csv"); err != nil {
		t.Fatal(err)
	}
	mech, err := bitflip.New(bitflip.Options{LieProbability: md.Lie, Bits: md.Bits})
	if err != nil {
		t.Fatal(err)
	}
	book, err := codebook.Load(cb)
	if err != nil {
		t.Fatal(err)
	}
	groups := []string{"sex", "income", "occupation"}
	at := []int{4, 5, 3} // their columns in adultAnonTable's rows
	encs := make([]*codebook.Encoder, len(groups))
	for j, g := range groups {
		col, _ := book.Column(g)
		if encs[j], err = col.Encoder(codebook.Policy{}); err != nil {
			t.Fatal(err)
		}
	}
	key := rng.RunKey(7, true, "pramkit-beam/perturb-bitflip")
	keyed := rng.NewKeyed(key)
	type out struct {
		key      bordKey
		in, bits uint64
	}
	want := make([][]out, 4)
	next := 0 // into rows: the parts a-0, a-1, a-2 cut adult.csv in order
	vals := make([]int, len(groups))
	word := make([]uint64, 1)
	for file, name := range []string{"a-0.parquet", "a-1.parquet", "a-2.parquet"} {
		_, part, _ := cmdtest.ReadTable(t, f(name))
		ws := make([]uint64, len(part))
		for n := range part {
			for j := range groups {
				x, err := encs[j].Index(rows[next+n][at[j]])
				if err != nil {
					t.Fatal(err)
				}
				vals[j] = int(x)
			}
			if err := md.Layout.Encode(vals, word); err != nil {
				t.Fatal(err)
			}
			ws[n] = word[0]
		}
		in := slices.Clone(ws)
		if _, err := mech.RandomizeKeyed(ws, keyed, rng.Tag("BFLP"), rowID(file, 0), nil); err != nil {
			t.Fatal(err)
		}
		for n := range ws {
			o := out{key: newBordKey(keyed, rowID(file, int64(n))), in: in[n], bits: ws[n]}
			want[o.key.hi%4] = append(want[o.key.hi%4], o)
		}
		next += len(part)
	}
	flips := make([]int64, md.Bits)
	for s := range want {
		slices.SortFunc(want[s], func(a, b out) int { return a.key.cmp(b.key) })
		if len(want[s]) != len(got[s]) {
			t.Fatalf("shard %d: %d rows, the construction %d", s, len(got[s]), len(want[s]))
		}
		for i, o := range want[s] {
			for b := range md.Bits {
				cell := strconv.FormatUint(o.bits>>uint(b)&1, 10)
				if got[s][i][b] != cell {
					t.Fatalf("shard %d row %d: bit %s is %s, the construction's %s", s, i, wantCols[b], got[s][i][b], cell)
				}
				flips[b] += int64((o.bits ^ o.in) >> uint(b) & 1)
			}
		}
	}
	N := float64(len(rows))
	sd := math.Sqrt(N * q * (1 - q))
	for b, c := range flips {
		if math.Abs(float64(c)-N*q) > 5.33*sd {
			t.Errorf("bit %s flipped %d times in %d rows, expected %.0f ± %.0f (q = %v)", wantCols[b], c, len(rows), N*q, sd, q)
		}
	}

	// Recomputable: the same key gives the same files.
	run.checkRerun(t)

	// estimate reads the shards as parts of one release.
	female := float64(countRows(rows, 4, "Female")) / N
	est := beamtest.Tool(estimatecmd.NewCmd)
	for what, in := range run.releases() {
		e, lo, hi := bitflipEstimate(t, beamtest.MustRun(t, est, in...), "sex,Female,")
		se := (hi - lo) / (2 * 1.959964)
		if math.Abs(e-female) > 5*se {
			t.Errorf("%s: estimate of sex=Female %v (CI %v–%v), the truth %v: more than 5 standard errors off", what, e, lo, hi, female)
		}
	}
}

// bitflipEstimate finds the row of estimate's bitflip table starting with
// prefix and returns its estimate and confidence interval.
func bitflipEstimate(t *testing.T, out, prefix string) (float64, float64, float64) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		fields := strings.Split(line, ",")
		var v [3]float64
		for i := range v {
			var err error
			if v[i], err = strconv.ParseFloat(fields[3+i], 64); err != nil {
				t.Fatalf("estimate printed %q", line)
			}
		}
		return v[0], v[1], v[2]
	}
	t.Fatalf("estimate printed no %q row: %s", prefix, out)
	return 0, 0, 0
}

// TestPerturbLocalRefuses: flags the pipeline does not take are usage
// errors, and a value outside the codebook fails naming file, row and
// column, leaving no output.
func TestPerturbLocalRefuses(t *testing.T) {
	dir, cb, _ := adultAnonTable(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	base := []string{"--mechanism", "bitflip", "--lie", "0.2", "--columns", "sex", "--codebook", cb}
	for _, extra := range [][]string{{"--keep-order"}, {"-o", f("x.csv")}, {f("adult.csv")}} {
		err := PerturbLocal(context.Background(), Config{Input: f("a-*.parquet"), Output: f("bad"), Runner: "prism", Args: append(slices.Clone(base), extra...), Streams: quiet()})
		var ue *cli.UsageError
		if !asUsage(err, &ue) {
			t.Errorf("%v: got %v, want a usage error", extra, err)
		}
	}
	for _, a := range [][]string{{"--epsilon", "1"}, {"--mechanism", "gamma-diagonal"}, {"--", "--mechanism", "bitflip"}} {
		if got := LocalMechanism(a); got != "" {
			t.Errorf("LocalMechanism(%q) = %q, want none", a, got)
		}
	}
	if got := LocalMechanism([]string{"--mechanism=ddps"}); got != release.MechanismDDPS {
		t.Errorf("LocalMechanism(--mechanism=ddps) = %q", got)
	}
	// ddps without its --column is perturb's usage error.
	err := PerturbLocal(context.Background(), Config{Input: f("a-*.parquet"), Output: f("bad"), Runner: "prism", Args: []string{"--mechanism", "ddps", "--codebook", cb, "--pi-s", "0.5"}, Streams: quiet()})
	var ue *cli.UsageError
	if !asUsage(err, &ue) || !strings.Contains(err.Error(), "--column") {
		t.Errorf("ddps without --column: got %v, want a usage error naming it", err)
	}
	// A category sex's codebook does not list: the tool's encoder refuses it.
	beamtest.WriteRows(t, f("odd.csv"), []string{"sex"}, nil, 0, [][]string{{"Male"}, {"Female"}, {"Other"}})
	err = PerturbLocal(context.Background(), Config{Input: f("odd.csv"), Output: f("odd-out"), Runner: "prism", Args: base, Streams: quiet()})
	if err == nil || !strings.Contains(err.Error(), "odd.csv") || !strings.Contains(err.Error(), "sex") {
		t.Errorf("a value outside the codebook: got %v, want an error naming the file and column", err)
	}
	if m, _ := filepath.Glob(f("odd-out*")); len(m) > 0 {
		t.Errorf("a failed run left %v", m)
	}
}
