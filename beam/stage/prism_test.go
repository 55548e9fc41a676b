package stage

import (
	"cmp"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/beam/internal/beamtest"
	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/cli"
	anonymizecmd "github.com/pramkit/pramkit/pkg/cmd/anonymize"
	perturbcmd "github.com/pramkit/pramkit/pkg/cmd/perturb"
	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/table"
)

// The set-ups the Prism tests of the mechanisms share: a local mechanism
// (bitflip, ddps) run by PerturbLocal next to the perturb tool, and an
// anonymize mechanism (A′, global, Anatomy) run by Anonymize next to the
// anonymize tool, both on adultAnonTable.

// localPrism is a local mechanism's release on Prism next to the perturb
// tool's.
type localPrism struct {
	dir      string
	args     []string // perturb's flags
	wantCols []string // the tool's release, want.csv
	wantMeta table.Meta
	shards   []string     // the Beam release, beam-*.parquet
	got      [][][]string // each shard's rows
}

func (l *localPrism) f(name string) string { return filepath.Join(l.dir, name) }

// perturbLocalOnPrism runs the perturb tool with args on dir's adult.csv
// (want.csv) and PerturbLocal with the same args on its Parquet shards
// a-*.parquet at --shard-rows 10000 on Prism (beam-*.parquet), and checks
// what every local mechanism's release owes: LocalMechanism(args) is mech;
// the Beam release is 4 shards (32561 rows at 10000 a shard), each with
// the tool's columns and metadata, key for key, holding nrows rows in all.
func perturbLocalOnPrism(t *testing.T, dir string, nrows int, mech string, args []string) *localPrism {
	t.Helper()
	l := &localPrism{dir: dir, args: args}
	beamtest.MustRun(t, beamtest.Tool(perturbcmd.NewCmd), append(slices.Clone(args), l.f("adult.csv"), "-o", l.f("want.csv"))...)
	if got := LocalMechanism(args); got != mech {
		t.Fatalf("LocalMechanism(%q) = %q, want %q", args, got, mech)
	}
	l.run(t, "beam")
	var rows [][]string
	l.wantCols, rows, l.wantMeta = cmdtest.ReadTable(t, l.f("want.csv"))
	if len(rows) != nrows {
		t.Fatalf("the tool's release has %d rows, the input %d", len(rows), nrows)
	}
	l.shards, _ = filepath.Glob(l.f("beam-*.parquet"))
	if len(l.shards) != 4 {
		t.Fatalf("shards %v, want 4 (32561 rows at --shard-rows 10000)", l.shards)
	}
	total := 0
	for _, s := range l.shards {
		cols, r, meta := cmdtest.ReadTable(t, s)
		if !slices.Equal(cols, l.wantCols) {
			t.Fatalf("%s: columns %v, the tool's %v", s, cols, l.wantCols)
		}
		sameMeta(t, s, meta, l.wantMeta)
		l.got = append(l.got, r)
		total += len(r)
	}
	if total != nrows {
		t.Fatalf("%d rows, the input %d", total, nrows)
	}
	return l
}

// run runs PerturbLocal with the args into prefix-*.parquet.
func (l *localPrism) run(t *testing.T, prefix string) {
	t.Helper()
	if err := PerturbLocal(context.Background(), Config{Input: l.f("a-*.parquet"), Output: l.f(prefix), Runner: "prism", Args: l.args, Streams: quiet(), ShardRows: 10000}); err != nil {
		t.Fatal(err)
	}
}

// checkRerun runs the pipeline again: the same key gives the same files,
// byte for byte.
func (l *localPrism) checkRerun(t *testing.T) {
	t.Helper()
	l.run(t, "again")
	for i, s := range l.shards {
		a, _ := os.ReadFile(s)
		b, _ := os.ReadFile(l.f(shardName("again", i, ".parquet")))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s and its rerun differ", s)
		}
	}
}

// releases are the tool's release and the Beam shards, each as the files
// estimate reads as one release.
func (l *localPrism) releases() map[string][]string {
	return map[string][]string{"the tool's release": {l.f("want.csv")}, "the Beam shards": l.shards}
}

// bordKey is a row's order key PRF_K("BORD", row) under the run's key,
// recomputed as the local stages document it: the row goes to shard
// hi mod S, at its rank by (hi, lo).
type bordKey struct{ hi, lo uint64 }

func newBordKey(keyed *rng.Keyed, id uint64) bordKey {
	var blk [16]byte
	keyed.Block(&blk, rng.Tag("BORD"), 0, id)
	return bordKey{binary.BigEndian.Uint64(blk[:8]), binary.BigEndian.Uint64(blk[8:])}
}

func (k bordKey) cmp(o bordKey) int { return cmp.Or(cmp.Compare(k.hi, o.hi), cmp.Compare(k.lo, o.lo)) }

// anonPrism is an anonymize mechanism's run on Prism next to the
// anonymize tool's, on adultAnonTable's folder.
type anonPrism struct {
	dir, cb string
	rows    [][]string // the input's
	flags   []string   // the flags of both runs
	stderr  *strings.Builder
	streams *cli.Streams
}

// newAnonPrism writes adultAnonTable and the flags that publish its
// occupation at ℓ′ = l with mechanism mech ("" for the default A′),
// seeded by --seed 7.
func newAnonPrism(t *testing.T, mech string, l int) *anonPrism {
	t.Helper()
	dir, cb, rows := adultAnonTable(t)
	var flags []string
	if mech != "" {
		flags = []string{"--mechanism", mech}
	}
	flags = append(flags, "--sensitive", "occupation", "--l", strconv.Itoa(l), "--codebook", cb, "--seed", "7", "--insecure-seed")
	var stderr strings.Builder
	return &anonPrism{dir: dir, cb: cb, rows: rows, flags: flags, stderr: &stderr, streams: &cli.Streams{Out: &stderr, Err: &stderr}}
}

func (a *anonPrism) f(name string) string { return filepath.Join(a.dir, name) }

// tool runs the anonymize tool with the flags and extra on adult.csv into
// want.csv.
func (a *anonPrism) tool(t *testing.T, extra ...string) {
	t.Helper()
	args := append(slices.Clone(a.flags), a.f("adult.csv"), "-o", a.f("want.csv"))
	beamtest.MustRun(t, beamtest.Tool(anonymizecmd.NewCmd), append(args, extra...)...)
}

// beam runs Anonymize with the flags and extra on the shards a-*.parquet
// into prefix-*.parquet, shardRows rows a shard (0: one shard).
func (a *anonPrism) beam(t *testing.T, prefix string, shardRows int64, extra ...string) {
	t.Helper()
	cfg := Config{Input: a.f("a-*.parquet"), Output: a.f(prefix), Runner: "prism", Args: append(slices.Clone(a.flags), extra...), Streams: a.streams, ShardRows: shardRows}
	if err := Anonymize(context.Background(), cfg); err != nil {
		t.Fatalf("%v: %s", err, a.stderr.String())
	}
}

// checkDroppedOne checks that the runs said they left out one row at
// random to make N = 32560 a multiple of ℓ′ = 5.
func (a *anonPrism) checkDroppedOne(t *testing.T) {
	t.Helper()
	if !strings.Contains(a.stderr.String(), "left out 1 row chosen at random so that N = 32560 is a multiple of ℓ′ = 5") {
		t.Errorf("stderr %q", a.stderr.String())
	}
}

// inputIDs returns the input row (its id, column 0) of each published
// row, checking that no id is unknown or repeated and that the rows are
// shuffled: at most 20 at their input position, where a uniform shuffle
// puts about 1.
func (a *anonPrism) inputIDs(t *testing.T, got [][]string) []int {
	t.Helper()
	seen := make([]bool, len(a.rows))
	ids := make([]int, len(got))
	inPlace := 0
	for i, r := range got {
		id, err := strconv.Atoi(r[0])
		if err != nil || id < 0 || id >= len(a.rows) || seen[id] {
			t.Fatalf("row %d: id %q unknown or repeated", i, r[0])
		}
		seen[id] = true
		ids[i] = id
		if id == i {
			inPlace++
		}
	}
	if inPlace > 20 {
		t.Errorf("%d rows at their input position: not shuffled", inPlace)
	}
	return ids
}

// checkOthersUnchanged checks that every published row's cells but column
// sens are its input row's.
func (a *anonPrism) checkOthersUnchanged(t *testing.T, cols []string, got [][]string, ids []int, sens int) {
	t.Helper()
	for i, r := range got {
		in := a.rows[ids[i]]
		for j := range r {
			if j != sens && r[j] != in[j] {
				t.Fatalf("row id %d: column %s is %q, the input's %q", ids[i], cols[j], r[j], in[j])
			}
		}
	}
}

// shards checks the release prefix-*.parquet: 4 shards, each with
// metadata meta, holding n distinct rows in all; it returns the shards.
func (a *anonPrism) shards(t *testing.T, prefix string, meta table.Meta, n int) []string {
	t.Helper()
	shards, _ := filepath.Glob(a.f(prefix + "-*.parquet"))
	if len(shards) != 4 {
		t.Fatalf("shards %v, want 4", shards)
	}
	ids := map[string]bool{}
	for _, s := range shards {
		_, part, m := cmdtest.ReadTable(t, s)
		sameMetaExcept(t, s, m, meta)
		for _, r := range part {
			ids[r[0]] = true
		}
	}
	if len(ids) != n {
		t.Errorf("the shards hold %d distinct rows, want %d", len(ids), n)
	}
	return shards
}

// countRows counts the rows whose column col is v.
func countRows(rows [][]string, col int, v string) int64 {
	var n int64
	for _, r := range rows {
		if r[col] == v {
			n++
		}
	}
	return n
}
