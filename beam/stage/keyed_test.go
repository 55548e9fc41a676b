package stage

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/beam/internal/beamtest"
	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/cmd/decrypt"
	"github.com/pramkit/pramkit/pkg/cmd/encrypt"
	estimatecmd "github.com/pramkit/pramkit/pkg/cmd/estimate"
	"github.com/pramkit/pramkit/pkg/cmd/perturb"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// writeParts writes rows [cuts[i], cuts[i+1]) of the table in as names[i],
// each marked as that part of the sample (first_row, rows), as a sample
// or encrypted table split across a cluster's storage would be; Parquet
// parts get row groups of group rows.
func writeParts(t *testing.T, in string, cuts []int, group int, names ...string) {
	t.Helper()
	cols, rows, meta := cmdtest.ReadTable(t, in)
	m, err := meta.Int("m", "")
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range names {
		md := meta.Clone()
		release.Part{First: int64(cuts[i]), Rows: int64(cuts[i+1] - cuts[i])}.Encode(md, m)
		beamtest.WriteRows(t, name, cols, md, group, rows[cuts[i]:cuts[i+1]])
	}
}

// shardRows reads a stage's output shards (PREFIX-*-of-*.EXT) in order,
// checks that each is the part of the sample its metadata says — shard i
// starting where shard i−1 ended — and returns the rows by sample index
// and the first shard's metadata without its part.
func shardRows(t *testing.T, prefix, ext string) ([]string, [][]string, table.Meta) {
	t.Helper()
	files, _ := filepath.Glob(prefix + "-*-of-*" + ext)
	if len(files) == 0 {
		t.Fatalf("no shards %s-*%s", prefix, ext)
	}
	var all [][]string
	var cols []string
	var meta table.Meta
	for i, f := range files {
		c, rows, md := cmdtest.ReadTable(t, f)
		m, _ := md.Int("m", "")
		p, err := release.ReadPart(md, f, m)
		if err != nil {
			t.Fatal(err)
		}
		if p.First != int64(len(all)) || p.Rows != int64(len(rows)) {
			t.Fatalf("%s holds %d rows from row %d, its metadata says %s", f, len(rows), len(all), p)
		}
		if !strings.HasSuffix(f, fmt.Sprintf("-of-%05d%s", len(files), ext)) {
			t.Errorf("shard %d of %d is named %s", i, len(files), f)
		}
		all = append(all, rows...)
		if i == 0 {
			cols, meta = c, table.Meta(withoutPart(md))
		}
	}
	return cols, all, meta
}

// sameRows compares rows by sample index.
func sameRows(t *testing.T, what string, got, want [][]string) {
	t.Helper()
	if len(got) != len(want) || len(want) == 0 {
		t.Fatalf("%s: %d rows, the CLI %d", what, len(got), len(want))
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("%s: row %d is %v, the CLI's %v", what, i, got[i], want[i])
		}
	}
}

// sameMeta compares metadata item by item.
func sameMeta(t *testing.T, what string, got, want table.Meta) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: metadata %s = %.80q, the CLI's %.80q", what, k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: metadata %s is not in the CLI's", what, k)
		}
	}
}

// writeKey writes a 32-byte key file (mode 0600) from a fixed pattern.
func writeKey(t *testing.T, path string, b byte) {
	t.Helper()
	k := make([]byte, 32)
	for i := range k {
		k[i] = b + byte(i)
	}
	if err := os.WriteFile(path, k, 0o600); err != nil {
		t.Fatal(err)
	}
}

func quiet() *cli.Streams {
	var b strings.Builder
	return &cli.Streams{Out: &b, Err: &b}
}

// TestEncryptOnPrismMatchesTheCLI: a sample stored as one Parquet file of
// many row groups, or as CSV parts, encrypted on Prism with the same
// --prf-key and --seed --insecure-seed as the encrypt tool, gives the
// tool's ciphertext row for row (each row padded by its index in the
// sample, carried by the parts' first_row and the row groups' offsets),
// its metadata (but for the key id, drawn at random), and a key file with
// the same run key and nonce, which the decrypt tool accepts for the
// shards.
func TestEncryptOnPrismMatchesTheCLI(t *testing.T) {
	_, dir := beamtest.AdultRelease(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	cb := filepath.Join(beamtest.MainRoot(t), "testdata", "adult", "codebook.json")
	writeKey(t, f("alice.prf"), 1)
	beamtest.MustRun(t, beamtest.Tool(encrypt.NewCmd), "--codebook", cb, "--prf-key", f("alice.prf"), "--key-out", f("cli.key"),
		"--seed", "7", "--insecure-seed", f("education.arrow"), "-o", f("cli.enc.csv"))
	_, want, wantMeta := cmdtest.ReadTable(t, f("cli.enc.csv"))
	_, _, wantKey := cmdtest.ReadTable(t, f("cli.key"))
	beamtest.Split(t, f("education.arrow"), f("smp.parquet")) // row groups of 1000 rows
	writeParts(t, f("education.arrow"), []int{0, 1234, 1235, 5000}, 1000, f("part-0.csv"), f("part-1.csv"), f("part-2.csv"))
	for _, tc := range []struct{ glob, ext string }{{"smp.parquet", ".parquet"}, {"part-*.csv", ".csv"}} {
		t.Run(tc.glob, func(t *testing.T) {
			out := t.TempDir()
			err := Encrypt(context.Background(), Config{Input: f(tc.glob), Output: filepath.Join(out, "enc"), Runner: "prism", Streams: quiet(),
				Args: []string{"--codebook", cb, "--prf-key", f("alice.prf"), "--key-out", filepath.Join(out, "beam.key"), "--seed", "7", "--insecure-seed", "--shard-rows", "1300"}})
			if err != nil {
				t.Fatal(err)
			}
			cols, got, meta := shardRows(t, filepath.Join(out, "enc"), tc.ext)
			if !slices.Equal(cols, []string{"education"}) {
				t.Errorf("columns %v", cols)
			}
			sameRows(t, "ciphertext", got, want)
			var c []release.Column
			json.Unmarshal([]byte(meta[release.KeyColumns]), &c)
			var wc []release.Column
			json.Unmarshal([]byte(wantMeta[release.KeyColumns]), &wc)
			if len(c) != 1 || len(wc) != 1 || c[0].KeyID == wc[0].KeyID {
				t.Fatalf("columns %v, the CLI's %v: want one column, another key id", c, wc)
			}
			c[0].KeyID = wc[0].KeyID
			b, _ := json.Marshal(c)
			meta[release.KeyColumns] = string(b)
			sameMeta(t, "ciphertext", meta, wantMeta)
			_, _, key := cmdtest.ReadTable(t, filepath.Join(out, "beam.key"))
			for _, k := range []string{release.KeyPRFKey, release.KeyPRFNonce, release.KeyCodebook, release.KeyPad, "fingerprint", "m", "n"} {
				if key[k] != wantKey[k] || key[k] == "" {
					t.Errorf("key file %s = %.40q, the CLI's %.40q", k, key[k], wantKey[k])
				}
			}
			// The tool decrypts a shard (a part) with the Beam key.
			shard := filepath.Join(out, "enc-00001-of-00004"+tc.ext)
			beamtest.MustRun(t, beamtest.Tool(decrypt.NewCmd), "--unperturbed", "--key", filepath.Join(out, "beam.key"), shard, "-o", filepath.Join(out, "check.csv"))
			_, plain, _ := cmdtest.ReadTable(t, filepath.Join(out, "check.csv"))
			_, sample, _ := cmdtest.ReadTable(t, f("education.arrow"))
			sameRows(t, "decrypted shard 1", plain, sample[1300:2600])
		})
	}
}

// TestPerturbDecryptEstimateOnPrismMatchTheCLI: the curators' ciphertexts
// (encrypt --prf-key), sharded differently per curator — Alice's in three
// Parquet parts, Bob's one Parquet file of many row groups — are joined by
// row index on Prism and perturbed into the tool's release row for row
// (with --noise-key, and with --seed --insecure-seed); decrypt on Prism
// gives the tool's decrypted release; estimate on Prism over those shards
// gives the tool's estimate of the tool's release, and the estimate tool
// reads the Beam shards as parts with the same result.
func TestPerturbDecryptEstimateOnPrismMatchTheCLI(t *testing.T) {
	_, dir := beamtest.AdultRelease(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	cb := filepath.Join(beamtest.MainRoot(t), "testdata", "adult", "codebook.json")
	writeKey(t, f("server.noise"), 9)
	os.MkdirAll(f("enc"), 0o755)
	for i, c := range []string{"education", "income"} {
		writeKey(t, f(c+".prf"), byte(1+i))
		beamtest.MustRun(t, beamtest.Tool(encrypt.NewCmd), "--codebook", cb, "--prf-key", f(c+".prf"), "--key-out", f(c+".prf.key"),
			"--seed", "7", "--insecure-seed", f(c+".arrow"), "-o", f(c+".prf.enc.parquet"))
	}
	writeParts(t, f("education.prf.enc.parquet"), []int{0, 2000, 2001, 5000}, 700, f("enc/a-0.parquet"), f("enc/a-1.parquet"), f("enc/a-2.parquet"))
	beamtest.Split(t, f("income.prf.enc.parquet"), f("enc/b.parquet"))
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"noise-key", []string{"--epsilon", "1", "--noise-key", f("server.noise"), "--no-ledger"}},
		{"seed", []string{"--gamma", "20", "--seed", "7", "--insecure-seed", "--no-ledger"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			o := func(name string) string { return filepath.Join(out, name) }
			beamtest.MustRun(t, beamtest.Tool(perturb.NewCmd), append(slices.Clone(tc.args), f("education.prf.enc.parquet"), f("income.prf.enc.parquet"), "-o", o("cli.rel.parquet"))...)
			if err := Perturb(context.Background(), Config{Input: f("enc/*.parquet"), Output: o("rel"), Runner: "prism", Streams: quiet(),
				Args: append(slices.Clone(tc.args), "--shard-rows", "1300")}); err != nil {
				t.Fatal(err)
			}
			wantCols, want, wantMeta := cmdtest.ReadTable(t, o("cli.rel.parquet"))
			cols, got, meta := shardRows(t, o("rel"), ".parquet")
			if !slices.Equal(cols, wantCols) {
				t.Errorf("columns %v, the CLI's %v", cols, wantCols)
			}
			sameRows(t, "release", got, want)
			sameMeta(t, "release", meta, wantMeta)

			keys := []string{"--key", f("income.prf.key"), "--key", f("education.prf.key")}
			beamtest.MustRun(t, beamtest.Tool(decrypt.NewCmd), append(slices.Clone(keys), o("cli.rel.parquet"), "-o", o("cli.dec.csv"))...)
			if err := Decrypt(context.Background(), Config{Input: o("rel-*.parquet"), Output: o("dec"), Runner: "prism", Streams: quiet(),
				Args: append(slices.Clone(keys), "--shard-rows", "2048")}); err != nil {
				t.Fatal(err)
			}
			_, want, wantMeta = cmdtest.ReadTable(t, o("cli.dec.csv"))
			_, got, meta = shardRows(t, o("dec"), ".parquet")
			sameRows(t, "decrypted release", got, want)
			sameMeta(t, "decrypted release", meta, wantMeta)

			est := beamtest.Tool(estimatecmd.NewCmd)
			beamtest.MustRun(t, est, o("cli.dec.csv"), "-o", o("want.csv"))
			if err := Estimate(context.Background(), Config{Input: o("dec-*.parquet"), Output: o("beam-est"), Runner: "prism", Streams: quiet()}); err != nil {
				t.Fatal(err)
			}
			parts, _ := filepath.Glob(o("dec-*.parquet"))
			beamtest.MustRun(t, est, append(parts, "-o", o("cli-parts.csv"))...)
			_, wantEst, wantEstMeta := cmdtest.ReadTable(t, o("want.csv"))
			for _, name := range []string{"beam-est.csv", "cli-parts.csv"} {
				_, gotEst, gotEstMeta := cmdtest.ReadTable(t, o(name))
				sameRows(t, name, gotEst, wantEst)
				if fmt.Sprint(gotEstMeta) != fmt.Sprint(wantEstMeta) {
					t.Errorf("%s: metadata %v, the CLI's %v", name, gotEstMeta, wantEstMeta)
				}
			}
		})
	}
}

// TestDecryptJoinsOneTimePadKeysOnPrism: a release of one-time-pad
// ciphertexts (the key files hold the pads as rows) is decrypted on Prism
// by joining the release's shards with the keys' rows by row index: the
// decrypt tool's output.
func TestDecryptJoinsOneTimePadKeysOnPrism(t *testing.T) {
	rel, dir := beamtest.AdultRelease(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	writeParts(t, f("release.arrow"), []int{0, 999, 4000, 5000}, 500, f("r-0.parquet"), f("r-1.parquet"), f("r-2.parquet"))
	writeParts(t, f("income.key.arrow"), []int{0, 2500, 5000}, 500, f("ik-0.csv"), f("ik-1.csv"))
	out := t.TempDir()
	err := Decrypt(context.Background(), Config{Input: f("r-*.parquet"), Output: filepath.Join(out, "dec"), Runner: "prism", Streams: quiet(),
		Args: []string{"--key", f("education.key.arrow"), "--key", f("ik-*.csv"), "--shard-rows", "1500"}})
	if err != nil {
		t.Fatal(err)
	}
	_, want, wantMeta := cmdtest.ReadTable(t, rel)
	_, got, meta := shardRows(t, filepath.Join(out, "dec"), ".parquet")
	sameRows(t, "decrypted release", got, want)
	sameMeta(t, "decrypted release", meta, wantMeta)
}

// TestKeyedStagesRefuseMissingAndRepeatedRows: curators' shards of
// different rows, a part without --noise-key, a curator's gap, or rows
// given twice fail the run naming the files or rows, and leave no output.
func TestKeyedStagesRefuseMissingAndRepeatedRows(t *testing.T) {
	_, dir := beamtest.AdultRelease(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	os.MkdirAll(f("enc"), 0o755)
	writeParts(t, f("education.enc.arrow"), []int{0, 2000, 5000}, 700, f("enc/a-0.parquet"), f("enc/a-1.parquet"))
	writeParts(t, f("income.enc.arrow"), []int{0, 3000, 5000}, 700, f("enc/b-0.parquet"), f("enc/b-1.parquet"))
	writeParts(t, f("income.enc.arrow"), []int{2500, 3500}, 700, f("extra.parquet"))
	args := []string{"--gamma", "20", "--seed", "7", "--insecure-seed", "--no-ledger", "--shard-rows", "1000"}
	run := func(glob string) error {
		return Perturb(context.Background(), Config{Input: glob, Output: f("out/rel"), Runner: "prism", Streams: quiet(), Args: args})
	}
	os.MkdirAll(f("out"), 0o755)
	if err := run(f("enc/*.parquet")); err != nil {
		t.Fatalf("all shards: %v", err)
	}
	if m, _ := filepath.Glob(f("out/rel-*-of-00005.parquet")); len(m) != 5 {
		t.Fatalf("shards %v, want 5", m)
	}
	os.RemoveAll(f("out"))
	os.MkdirAll(f("out"), 0o755)
	if err := run(f("enc/[ab]-0.parquet")); err == nil || !strings.Contains(err.Error(), "holds rows [0, 2000)") || !strings.Contains(err.Error(), "holds rows [0, 3000)") {
		t.Errorf("curators' shards of different rows: %v", err)
	}
	if err := run(f("enc/a-1.parquet")); err == nil || !strings.Contains(err.Error(), "is a part: perturb it with --noise-key") {
		t.Errorf("a part without --noise-key: %v", err)
	}
	writeParts(t, f("income.enc.arrow"), []int{4000, 5000}, 700, f("gap.parquet"))
	os.Rename(f("enc/b-1.parquet"), f("b-1.parquet"))
	os.Rename(f("gap.parquet"), f("enc/b-1.parquet"))
	if err := run(f("enc/*.parquet")); err == nil || !strings.Contains(err.Error(), "leave a gap in rows [0, 5000)") {
		t.Errorf("a gap: %v", err)
	}
	os.Rename(f("b-1.parquet"), f("enc/b-1.parquet"))
	os.Rename(f("extra.parquet"), f("enc/b-2.parquet"))
	if err := run(f("enc/*.parquet")); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("repeated rows: %v", err)
	}
	if m, _ := filepath.Glob(f("out/*")); len(m) > 0 {
		t.Errorf("output left: %v", m)
	}
}

// TestEncryptRefusesValueOutsideTheCodebook: a label the codebook lacks
// fails the run naming the shard, its row and the column, and leaves
// neither shards nor a key file.
func TestEncryptRefusesValueOutsideTheCodebook(t *testing.T) {
	_, dir := beamtest.AdultRelease(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	cb := filepath.Join(beamtest.MainRoot(t), "testdata", "adult", "codebook.json")
	writeKey(t, f("alice.prf"), 1)
	cols, rows, meta := cmdtest.ReadTable(t, f("education.arrow"))
	rows[3001][0] = "Nonsense"
	beamtest.WriteRows(t, f("bad.arrow"), cols, meta, 0, rows)
	writeParts(t, f("bad.arrow"), []int{0, 3000, 5000}, 0, f("p-0.csv"), f("p-1.csv"))
	os.MkdirAll(f("out"), 0o755)
	err := Encrypt(context.Background(), Config{Input: f("p-*.csv"), Output: f("out/enc"), Runner: "prism", Streams: quiet(),
		Args: []string{"--codebook", cb, "--prf-key", f("alice.prf"), "--key-out", f("out/k.key")}})
	if err == nil || !strings.Contains(err.Error(), "p-1.csv") || !strings.Contains(err.Error(), "row 2") || !strings.Contains(err.Error(), "Nonsense") || !strings.Contains(err.Error(), "education") {
		t.Fatalf("got %v", err)
	}
	if m, _ := filepath.Glob(f("out/*")); len(m) > 0 {
		t.Errorf("output left: %v", m)
	}
}

// TestPerturbOnPrismKeepsTheToolsLedger: a Beam release is recorded in the
// perturb tool's ledger (--ledger), so that a second release of the sample
// is refused by pramkit-beam and by the tool alike; a rerun with the same
// --noise-key (a retry: the same rows) is accepted and not recorded again.
func TestPerturbOnPrismKeepsTheToolsLedger(t *testing.T) {
	_, dir := beamtest.AdultRelease(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	writeKey(t, f("server.noise"), 9)
	os.MkdirAll(f("enc"), 0o755)
	os.MkdirAll(f("out"), 0o755)
	beamtest.Split(t, f("education.enc.arrow"), f("enc/a.parquet"))
	beamtest.Split(t, f("income.enc.arrow"), f("enc/b.parquet"))
	led := f("releases.jsonl")
	lines := func() int {
		b, _ := os.ReadFile(led)
		return strings.Count(string(b), "\n")
	}
	run := func(args ...string) error {
		return Perturb(context.Background(), Config{Input: f("enc/*.parquet"), Output: f("out/rel"), Runner: "prism", Streams: quiet(), Args: append(args, "--ledger", led)})
	}
	if err := run("--epsilon", "1", "--noise-key", f("server.noise")); err != nil {
		t.Fatal(err)
	}
	if n := lines(); n != 1 {
		t.Fatalf("%d ledger lines after a release, want 1", n)
	}
	b, _ := os.ReadFile(led)
	if !strings.Contains(string(b), "out/rel-*-of-00001.parquet") {
		t.Errorf("the ledger does not name the shards: %s", b)
	}
	if err := run("--epsilon", "1", "--noise-key", f("server.noise")); err != nil {
		t.Fatalf("a retry with the same noise key: %v", err)
	}
	if n := lines(); n != 1 {
		t.Errorf("%d ledger lines after a retry, want 1", n)
	}
	if err := run("--epsilon", "2", "--seed", "3", "--insecure-seed"); err == nil || !strings.Contains(err.Error(), "already released") {
		t.Errorf("a second release: %v", err)
	}
	r := cmdtest.Run(beamtest.Tool(perturb.NewCmd), nil, "--epsilon", "1", "--ledger", led, f("education.enc.arrow"), f("income.enc.arrow"), "-o", f("cli.parquet"))
	if r.Code == 0 || !strings.Contains(r.Stderr, "already released") {
		t.Errorf("the tool after a Beam release: exit %d, %s", r.Code, r.Stderr)
	}
	if n := lines(); n != 1 {
		t.Errorf("%d ledger lines after refusals, want 1", n)
	}
}
