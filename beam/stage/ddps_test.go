package stage

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/beam/internal/beamtest"
	"github.com/pramkit/pramkit/internal/cmdtest"
	estimatecmd "github.com/pramkit/pramkit/pkg/cmd/estimate"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/rng"
)

// TestDDPSOnPrism draws DDPS reports of Adult's occupation (V = 15,
// π_s = 0.5, uniform π_⊥) on Prism from Parquet shards read by row group,
// next to the perturb tool on the whole table, and checks:
//   - every shard has the tool's columns and metadata, key for key, and
//     the shards hold the input's 32561 rows;
//   - the release is exactly the documented construction: row (file f,
//     row n) reports ddps.Mechanism.Report drawn from stream ("DDPS",
//     f·2^40 + n) of the run key of --seed 7, in shard key mod 4 at its
//     rank by the order key PRF("BORD", row); a rerun gives the same files;
//   - round two keeps the true value with probability π_s + π_⊥ and round
//     one reports ⊥0 with probability π_s + π_⊥0: each count within 5.33
//     binomial standard deviations (false alarm 1e-7 each);
//   - estimate reads the 4 shards as parts of one release: its count of
//     Tech-support is within 5 of its standard deviations of the truth
//     (false alarm 6e-7), as the tool's release's is.
func TestDDPSOnPrism(t *testing.T) {
	dir, cb, rows := adultAnonTable(t)
	const piS = 0.5
	args := []string{"--mechanism", "ddps", "--column", "occupation", "--pi-s", "0.5", "--codebook", cb, "--seed", "7", "--insecure-seed"}
	run := perturbLocalOnPrism(t, dir, len(rows), release.MechanismDDPS, args)
	f, wantMeta, got := run.f, run.wantMeta, run.got

	var md release.DDPS
	if err := md.Decode(wantMeta, "want.csv"); err != nil {
		t.Fatal(err)
	}
	mech, err := md.Mechanism()
	if err != nil {
		t.Fatal(err)
	}
	labels := make([]string, md.V+1)
	for o := range labels {
		labels[o] = md.Label(o)
	}
	book, err := codebook.Load(cb)
	if err != nil {
		t.Fatal(err)
	}
	col, _ := book.Column("occupation")
	enc, _ := col.Encoder(codebook.Policy{})
	keyed := rng.NewKeyed(rng.RunKey(7, true, "pramkit-beam/perturb-ddps"))
	type out struct {
		key             bordKey
		truth, one, two int
	}
	want := make([][]out, 4)
	var st rng.Stream
	r := rand.New(&st)
	next := 0
	for file, name := range []string{"a-0.parquet", "a-1.parquet", "a-2.parquet"} {
		_, part, _ := cmdtest.ReadTable(t, f(name))
		for n := range part {
			x, err := enc.Index(rows[next+n][3])
			if err != nil {
				t.Fatal(err)
			}
			v := slices.Index(labels, col.Label(int(x)))
			id := rowID(file, int64(n))
			keyed.Reset(&st, rng.Tag("DDPS"), id)
			one, two, err := mech.Report(r, v)
			if err != nil {
				t.Fatal(err)
			}
			o := out{key: newBordKey(keyed, id), truth: v, one: one, two: two}
			want[o.key.hi%4] = append(want[o.key.hi%4], o)
		}
		next += len(part)
	}
	var kept, none int64
	for s := range want {
		slices.SortFunc(want[s], func(a, b out) int { return a.key.cmp(b.key) })
		if len(want[s]) != len(got[s]) {
			t.Fatalf("shard %d: %d rows, the construction %d", s, len(got[s]), len(want[s]))
		}
		for i, o := range want[s] {
			if g := got[s][i]; g[0] != labels[o.one] || g[1] != labels[o.two] {
				t.Fatalf("shard %d row %d: %v, the construction's [%s %s]", s, i, g, labels[o.one], labels[o.two])
			}
			if o.two == o.truth {
				kept++
			}
			if o.one == 0 {
				none++
			}
		}
	}
	N := float64(len(rows))
	pb := (1 - piS) / float64(len(labels))
	for _, c := range []struct {
		what string
		n    int64
		p    float64
	}{{"round two keeps the true value", kept, piS + pb}, {"round one reports ⊥0", none, piS + pb}} {
		if sd := math.Sqrt(N * c.p * (1 - c.p)); math.Abs(float64(c.n)-N*c.p) > 5.33*sd {
			t.Errorf("%s in %d of %d rows, expected %.0f ± %.0f", c.what, c.n, len(rows), N*c.p, sd)
		}
	}

	run.checkRerun(t)

	truth := float64(countRows(rows, 3, "Tech-support"))
	est := beamtest.Tool(estimatecmd.NewCmd)
	for what, in := range run.releases() {
		out := beamtest.MustRun(t, est, in...)
		var e, sd float64
		for _, line := range strings.Split(out, "\n") {
			if fs := strings.Split(line, ","); len(fs) == 3 && fs[0] == "Tech-support" {
				e, _ = strconv.ParseFloat(fs[1], 64)
				sd, _ = strconv.ParseFloat(fs[2], 64)
			}
		}
		if sd == 0 || math.Abs(e-truth) > 5*sd {
			t.Errorf("%s: estimate of Tech-support %v (sd %v), the truth %v: more than 5 sd off\n%s", what, e, sd, truth, out)
		}
	}
}
