package decrypt_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/internal/releasetest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/cmd/decrypt"
	"github.com/pramkit/pramkit/pkg/cmd/encrypt"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

func encryptCmd(s *cli.Streams) *cobra.Command { return encrypt.NewCmd(s, nil) }
func perturbCmd(s *cli.Streams) *cobra.Command { return releasetest.NewPerturb(s, nil) }
func decryptCmd(s *cli.Streams) *cobra.Command { return decrypt.NewCmd(s, nil) }

func run(t testing.TB, build func(*cli.Streams) *cobra.Command, args ...string) releasetest.Result {
	t.Helper()
	return releasetest.Run(build, nil, args...)
}

func must(t testing.TB, res releasetest.Result) {
	t.Helper()
	if res.Code != 0 {
		t.Fatal(res.Stderr)
	}
}

func TestFlagsParse(t *testing.T) {
	var got *decrypt.Options
	var errb bytes.Buffer
	s := &cli.Streams{Out: &bytes.Buffer{}, Err: &errb}
	args := []string{"--key", "b.key", "--key", "a.key", "--unperturbed", "-o", "out.csv", "rel.parquet"}
	if code := cli.Run(decrypt.NewCmd(s, func(o *decrypt.Options) error { got = o; return nil }), args, s); code != 0 {
		t.Fatal(errb.String())
	}
	if got.Input != "rel.parquet" || !slices.Equal(got.Keys, []string{"b.key", "a.key"}) || !got.Unperturbed || got.Output.Path != "out.csv" {
		t.Errorf("options %+v", *got)
	}
	if code := cli.Run(decrypt.NewCmd(s, func(*decrypt.Options) error { return nil }), []string{"a", "b"}, s); code != cli.ExitUsage {
		t.Errorf("two releases: exit %d, want 2", code)
	}
}

// fixture is a two-curator release in dir: alice holds a (k = 3, CSV key),
// bob holds b (k = 2, PRF pads), and a second sampling's key for a.
type fixture struct {
	dir, rel, aKey, bKey, otherKey, rerunKey, aEnc string
	prfHex                                         string
	keyID, rerunKeyID                              string // column a's key_id in aKey and rerunKey
}

// keyID returns the key_id of column a in a key file.
func keyID(t *testing.T, path string) string {
	t.Helper()
	r, err := table.Open(path, table.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var k release.Key
	if err := k.Decode(r.Meta(), path); err != nil {
		t.Fatal(err)
	}
	return k.Columns[0].KeyID
}

// editSidecar rewrites a CSV file's metadata sidecar with f.
func editSidecar(t *testing.T, csvPath string, f func(string) string) {
	t.Helper()
	p := csvPath + ".meta.json"
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(f(string(b))), 0o600); err != nil {
		t.Fatal(err)
	}
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	f := fixture{dir: dir}
	cb := releasetest.WriteCodebook(t, dir,
		releasetest.Categorical{Name: "a", Categories: []string{"x", "y", "z"}},
		releasetest.Categorical{Name: "b", Categories: []string{"p", "q"}})
	var aRows, bRows [][]string
	for i := range 50 {
		aRows = append(aRows, []string{[]string{"x", "y", "z"}[i%3]})
		bRows = append(bRows, []string{[]string{"p", "q"}[i%2]})
	}
	aIn, bIn := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv")
	releasetest.WriteSample(t, aIn, []string{"a"}, aRows, 500)
	releasetest.WriteSample(t, bIn, []string{"b"}, bRows, 500)
	prf := filepath.Join(dir, "bob.prf")
	os.WriteFile(prf, bytes.Repeat([]byte{0xab}, 32), 0o600)
	f.aKey, f.bKey = filepath.Join(dir, "alice.key.csv"), filepath.Join(dir, "bob.key.csv")
	f.aEnc = filepath.Join(dir, "a.enc.csv")
	bEnc := filepath.Join(dir, "b.enc.parquet")
	must(t, run(t, encryptCmd, "--codebook", cb, "--key-out", f.aKey, "-o", f.aEnc, aIn))
	must(t, run(t, encryptCmd, "--codebook", cb, "--key-out", f.bKey, "--prf-key", prf, "-o", bEnc, bIn))
	f.rerunKey = filepath.Join(dir, "alice-rerun.key")
	must(t, run(t, encryptCmd, "--codebook", cb, "--key-out", f.rerunKey, "-o", filepath.Join(dir, "a2.enc.csv"), aIn))
	// The same column sampled with another secret.
	other := filepath.Join(dir, "other.csv")
	releasetest.WriteSample(t, other, []string{"a"}, aRows, 500)
	editSidecar(t, other, func(s string) string {
		return strings.Replace(s, releasetest.Fingerprint, "ffffffffffffffffffffffffffffffff", 1)
	})
	f.otherKey = filepath.Join(dir, "other.key")
	must(t, run(t, encryptCmd, "--codebook", cb, "--key-out", f.otherKey, "-o", filepath.Join(dir, "other.enc.csv"), other))
	f.rel = filepath.Join(dir, "release.csv")
	must(t, run(t, perturbCmd, "--epsilon", "1", f.aEnc, bEnc, "-o", f.rel))
	side, _ := os.ReadFile(f.bKey + ".meta.json")
	f.keyID, f.rerunKeyID = keyID(t, f.aKey), keyID(t, f.rerunKey)
	f.prfHex = regexp.MustCompile(`"prf_key":"([0-9a-f]+)"`).FindStringSubmatch(string(side))[1]
	return f
}

// TestBadKeysAndReleases checks that every mistake gives a one-line error
// naming the file and the fix, exit 1, no output, and no key material.
func TestBadKeysAndReleases(t *testing.T) {
	f := newFixture(t)
	cp := func(name string, edit func([]byte) []byte) string {
		b, err := os.ReadFile(f.rel)
		if err != nil {
			t.Fatal(err)
		}
		side, _ := os.ReadFile(f.rel + ".meta.json")
		p := filepath.Join(f.dir, name)
		os.WriteFile(p, edit(b), 0o644)
		os.WriteFile(p+".meta.json", side, 0o644)
		cmdtest.BindSidecar(t, p) // edited by hand, on purpose: reach the checks behind the pair check
		return p
	}
	truncated := cp("truncated.csv", func(b []byte) []byte { return b[:bytes.LastIndexByte(b[:len(b)-1], '\n')+1] })
	noGamma := cp("nogamma.csv", func(b []byte) []byte { return b })
	editSidecar(t, noGamma, func(s string) string { return regexp.MustCompile(`"gamma":"[^"]*",`).ReplaceAllString(s, "") })
	// Releases whose privacy metadata was edited.
	same := func(b []byte) []byte { return b }
	editMeta := func(name, from, to string) string {
		p := cp(name, same)
		editSidecar(t, p, func(s string) string {
			if !strings.Contains(s, from) {
				t.Fatalf("%s: no %s in %s", name, from, s)
			}
			return strings.Replace(s, from, to, 1)
		})
		return p
	}
	banana := editMeta("banana.csv", `"epsilon":"1"`, `"epsilon":"banana"`)
	gamma := regexp.MustCompile(`"gamma":"[^"]+"`).FindString(func() string { b, _ := os.ReadFile(f.rel + ".meta.json"); return string(b) }())
	edited := editMeta("gamma.csv", gamma, `"gamma":"1.5"`)
	bigM := editMeta("bigm.csv", `"m":"50"`, `"m":"501"`)

	// A key whose pads were damaged: a pad of 99 in a column with k = 3.
	damaged := filepath.Join(f.dir, "damaged.key.csv")
	kb, _ := os.ReadFile(f.aKey)
	lines := strings.Split(string(kb), "\n")
	short := strings.Join(lines[:20], "\n") + "\n"
	lines[5] = "99"
	os.WriteFile(damaged, []byte(strings.Join(lines, "\n")), 0o600)
	ks, _ := os.ReadFile(f.aKey + ".meta.json")
	os.WriteFile(damaged+".meta.json", ks, 0o600)
	cmdtest.BindSidecar(t, damaged)
	shortKey := filepath.Join(f.dir, "short.key.csv")
	os.WriteFile(shortKey, []byte(short), 0o600)
	os.WriteFile(shortKey+".meta.json", ks, 0o600)
	cmdtest.BindSidecar(t, shortKey)
	badPRF := filepath.Join(f.dir, "badprf.key.csv")
	bk, _ := os.ReadFile(f.bKey)
	os.WriteFile(badPRF, bk, 0o600)
	bs, _ := os.ReadFile(f.bKey + ".meta.json")
	os.WriteFile(badPRF+".meta.json", []byte(strings.Replace(string(bs), f.prfHex, f.prfHex[:60]+"zz", 1)), 0o600)

	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"key for another release", []string{"--key", f.otherKey, "--key", f.bKey, f.rel}, 1, `other.key: metadata "fingerprint" = "ffffffffffffffffffffffffffffffff" does not match ` + f.rel + `'s "` + releasetest.Fingerprint + `": the key was made for another sampling`},
		{"key for another column", []string{"--key", f.aKey, f.bEnc(), "--unperturbed"}, 1, `alice.key.csv holds the pads of column "a", which`},
		{"key of another encrypt run", []string{"--key", f.rerunKey, "--key", f.bKey, f.rel}, 1, `alice-rerun.key: metadata "key_id" of column "a" = "` + f.rerunKeyID + `" does not match ` + f.rel + `'s "` + f.keyID + `": it is the key of another encrypt run`},
		{"epsilon not a number", []string{"--key", f.aKey, "--key", f.bKey, banana}, 1, `banana.csv: metadata "epsilon" = "banana" is not a number; the file was edited or damaged — re-run perturb`},
		{"gamma edited", []string{"--key", f.aKey, "--key", f.bKey, edited}, 1, `gamma.csv: metadata "epsilon" = 1 does not match γ = 1.5, n = 500, m = 50 (ε = ln((n + m(γ−1))/n) = 0.04879016416943`},
		{"m above n", []string{"--key", f.aKey, "--key", f.bKey, bigM}, 1, `bigm.csv: metadata "m" = 501 is out of range: a sample needs 1 ≤ m ≤ n = 500`},
		{"missing key", []string{"--key", f.aKey, f.rel}, 1, `no key for column b of ` + f.rel + `: pass --key`},
		{"key twice", []string{"--key", f.aKey, "--key", f.aKey, "--key", f.bKey, f.rel}, 1, `column "a" is in two keys`},
		{"truncated release", []string{"--key", f.aKey, "--key", f.bKey, truncated}, 1, "truncated.csv ended after 49 rows but its metadata says m = 50: the release is truncated"},
		{"release missing gamma", []string{"--key", f.aKey, "--key", f.bKey, noGamma}, 1, `nogamma.csv: no "gamma" in the metadata`},
		{"never perturbed", []string{"--key", f.aKey, f.aEnc}, 1, "a.enc.csv was never perturbed"},
		{"damaged pad", []string{"--key", damaged, "--key", f.bKey, f.rel}, 1, `damaged.key.csv: row 5, column "a": the pad is not an integer in 0..2 (value not shown: it is key material)`},
		{"truncated key", []string{"--key", shortKey, "--key", f.bKey, f.rel}, 1, "short.key.csv ended after 19 rows of pads but the release has m = 50 rows"},
		{"damaged PRF key", []string{"--key", f.aKey, "--key", badPRF, f.rel}, 1, "the PRF pad key in the metadata is damaged (value not shown)"},
		{"release as key", []string{"--key", f.rel, f.rel}, 1, "is not a key file (stage: perturb)"},
		{"key as release", []string{"--key", f.aKey, f.aKey}, 1, "alice.key.csv is a key file: give the release as the argument"},
		{"no key", []string{f.rel}, 2, "--key FILE is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(f.dir, "out.csv")
			res := run(t, decryptCmd, append(tt.args, "-o", out)...)
			if res.Code != tt.code || !strings.Contains(res.Stderr, tt.want) {
				t.Errorf("code %d, stderr %q\nwant code %d and %q", res.Code, res.Stderr, tt.code, tt.want)
			}
			if tt.code == 1 && strings.Count(res.Stderr, "\n") != 1 {
				t.Errorf("not one line: %q", res.Stderr)
			}
			// File names come from t.TempDir and may contain any digits:
			// look for key material only in the rest of the message.
			// Sample fingerprints and key ids are not secret.
			msg := strings.NewReplacer(f.dir, "", releasetest.Fingerprint, "", f.keyID, "", f.rerunKeyID, "").Replace(res.Stderr)
			for _, secret := range []string{"99", f.prfHex, f.prfHex[:16]} {
				if strings.Contains(msg, secret) {
					t.Errorf("stderr quotes key material %q: %s", secret, res.Stderr)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("failed run left an output")
			}
		})
	}
}

func (f fixture) bEnc() string { return filepath.Join(f.dir, "b.enc.parquet") }

// TestOutputKeepsWhatEstimateNeeds checks the decrypted release's metadata.
func TestOutputKeepsWhatEstimateNeeds(t *testing.T) {
	f := newFixture(t)
	out := filepath.Join(f.dir, "out.parquet")
	must(t, run(t, decryptCmd, "--key", f.bKey, "--key", f.aKey, f.rel, "-o", out))
	names, rows, meta := releasetest.ReadTable(t, out)
	_, _, relMeta := releasetest.ReadTable(t, f.rel)
	if !slices.Equal(names, []string{"a", "b"}) || len(rows) != 50 {
		t.Fatalf("columns %v, %d rows", names, len(rows))
	}
	for _, k := range []string{"mechanism", "gamma", "epsilon", "K", "n", "m", "fingerprint", "columns", "releases"} {
		if meta[k] == "" || meta[k] != relMeta[k] {
			t.Errorf("metadata %s = %q, release has %q", k, meta[k], relMeta[k])
		}
	}
	if meta["stage"] != "decrypt" || !strings.Contains(meta["codebook"], `"categories": ["x", "y", "z"]`) {
		t.Errorf("stage %q, codebook %q", meta["stage"], meta["codebook"])
	}
	for i, r := range rows {
		if !slices.Contains([]string{"x", "y", "z"}, r[0]) || !slices.Contains([]string{"p", "q"}, r[1]) {
			t.Fatalf("row %d: %v is not a pair of labels", i+1, r)
		}
	}
}

func BenchmarkDecryptTwoKeys(b *testing.B) {
	const m = 200_000
	dir := b.TempDir()
	var encs, keys []string
	for _, c := range releasetest.BenchCurators(b, dir, m) {
		cb, in := c.Codebook, c.Sample
		enc, key := filepath.Join(dir, c.Name+".enc.arrow"), filepath.Join(dir, c.Name+".key.arrow")
		must(b, run(b, encryptCmd, "--codebook", cb, "--key-out", key, "-o", enc, in))
		encs, keys = append(encs, enc), append(keys, "--key", key)
	}
	rel := filepath.Join(dir, "rel.arrow")
	must(b, run(b, perturbCmd, append([]string{"--epsilon", "1", "-o", rel}, encs...)...))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		must(b, run(b, decryptCmd, append(keys, rel, "-o", filepath.Join(dir, "out.arrow"))...))
	}
	b.ReportMetric(float64(m)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
