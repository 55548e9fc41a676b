package encrypt_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/internal/releasetest"
	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/cmd/decrypt"
	"github.com/pramkit/pramkit/pkg/cmd/encrypt"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/release"
)

func runEncrypt(args ...string) releasetest.Result {
	return releasetest.Run(func(s *cli.Streams) *cobra.Command { return encrypt.NewCmd(s, nil) }, nil, args...)
}

func runDecrypt(args ...string) releasetest.Result {
	return releasetest.Run(func(s *cli.Streams) *cobra.Command { return decrypt.NewCmd(s, nil) }, nil, args...)
}

// prfKeyFile writes a long-term PRF key (64 hex digits) and returns its path.
func prfKeyFile(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "curator.prf")
	if err := os.WriteFile(p, []byte(strings.Repeat("5a", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFlagsParse(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want encrypt.Options
		code int
	}{
		{
			name: "all flags",
			args: []string{"--codebook", "cb.json", "--columns", "a,b", "--key-out", "k.parquet", "--force",
				"--prf-key", "p.key", "--unknown", "missing", "--missing", "fail", "-o", "out.arrow", "in.csv"},
			want: encrypt.Options{Input: "in.csv", Codebook: "cb.json", Columns: []string{"a", "b"}, KeyOut: "k.parquet", Force: true,
				PRFKey: "p.key", Unknown: codebook.UnknownMissing, Missing: codebook.MissingFail, Output: cli.Output{Path: "out.arrow"}},
		},
		{
			name: "defaults read stdin",
			args: []string{"--key-out", "k"},
			want: encrypt.Options{KeyOut: "k", Unknown: codebook.UnknownFail, Missing: codebook.MissingKeep},
		},
		{name: "bad unknown policy", args: []string{"--unknown", "ignore"}, code: cli.ExitUsage},
		{name: "two inputs", args: []string{"a.csv", "b.csv"}, code: cli.ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *encrypt.Options
			var errb bytes.Buffer
			s := &cli.Streams{Out: &bytes.Buffer{}, Err: &errb}
			code := cli.Run(encrypt.NewCmd(s, func(o *encrypt.Options) error { got = o; return nil }), tt.args, s)
			if code != tt.code {
				t.Fatalf("exit code %d, want %d (%s)", code, tt.code, errb.String())
			}
			if tt.code != 0 {
				return
			}
			w := tt.want
			if got.Input != w.Input || got.Codebook != w.Codebook || !slices.Equal(got.Columns, w.Columns) || got.KeyOut != w.KeyOut ||
				got.Force != w.Force || got.PRFKey != w.PRFKey || got.Unknown != w.Unknown || got.Missing != w.Missing || got.Output != w.Output {
				t.Errorf("got %+v, want %+v", *got, w)
			}
		})
	}
}

// TestRoundTrip checks decrypt(encrypt(x)) = x through both commands for
// codebook edge cases: k = 1, k = 2, a large k, missing and unknown
// values, several columns, both pad kinds and every format.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pick := func(labels []string, m int) [][]string {
		rows := make([][]string, m)
		for i := range rows {
			rows[i] = []string{labels[r.IntN(len(labels))]}
		}
		return rows
	}
	large := releasetest.Labels("c", 100_000)
	largeRows := pick(large, 3000)
	largeRows[0][0], largeRows[1][0] = large[0], large[len(large)-1]
	tests := []struct {
		name    string
		cols    []releasetest.Categorical
		rows    [][]string
		want    [][]string // nil: the rows themselves
		flags   []string
		format  string
		prf     bool
		keyName string
	}{
		{name: "k=1", cols: []releasetest.Categorical{{Name: "a", Categories: []string{"only"}}}, rows: pick([]string{"only"}, 500), format: "csv"},
		{name: "k=2", cols: []releasetest.Categorical{{Name: "a", Categories: []string{"no", "yes"}}}, rows: pick([]string{"no", "yes"}, 2000), format: "parquet"},
		{name: "large k", cols: []releasetest.Categorical{{Name: "a", Categories: large}}, rows: largeRows, format: "arrow", keyName: "k.arrow"},
		{name: "large k, PRF pads", cols: []releasetest.Categorical{{Name: "a", Categories: large}}, rows: largeRows, format: "parquet", prf: true},
		{name: "k=1 and k=3, PRF pads, CSV key", cols: []releasetest.Categorical{{Name: "a", Categories: []string{"x"}}, {Name: "b", Categories: []string{"p", "q", "r"}}},
			rows: [][]string{{"x", "p"}, {"x", "r"}, {"x", "q"}, {"x", "r"}}, format: "csv", prf: true, keyName: "k.csv"},
		{name: "missing values keep their category", cols: []releasetest.Categorical{{Name: "a", Categories: []string{"u", "v"}, Missing: "?"}},
			rows: [][]string{{"u"}, {"?"}, {""}, {"v"}}, want: [][]string{{"u"}, {"?"}, {"?"}, {"v"}}, format: "arrow"},
		{name: "unknown values as missing", cols: []releasetest.Categorical{{Name: "a", Categories: []string{"u", "v"}, Missing: "?"}},
			rows: [][]string{{"u"}, {"zzz"}, {"v"}}, want: [][]string{{"u"}, {"?"}, {"v"}}, flags: []string{"--unknown", "missing"}, format: "parquet"},
		// A CSV file's categorical columns are coded as they are parsed
		// (ReadOptions.Labels): cells that are no label, in a batch of their
		// own or among labels, still go through the codebook's rules.
		{name: "missing values keep their category, CSV", cols: []releasetest.Categorical{{Name: "a", Categories: []string{"u", "v"}, Missing: "?"}},
			rows: [][]string{{"u"}, {"?"}, {""}, {"v"}}, want: [][]string{{"u"}, {"?"}, {"?"}, {"v"}}, format: "csv"},
		{name: "unknown values as missing, CSV", cols: []releasetest.Categorical{{Name: "a", Categories: []string{"u", "v"}, Missing: "?"}, {Name: "b", Categories: []string{"p", "q"}}},
			rows: [][]string{{"u", "p"}, {"zzz", "q"}, {"v", "p"}, {"", "q"}}, want: [][]string{{"u", "p"}, {"?", "q"}, {"v", "p"}, {"?", "q"}}, flags: []string{"--unknown", "missing"}, format: "csv"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			names := make([]string, len(tt.cols))
			for j, c := range tt.cols {
				names[j] = c.Name
			}
			in := filepath.Join(dir, "in."+tt.format)
			releasetest.WriteSample(t, in, names, tt.rows, int64(len(tt.rows))*3)
			cb := releasetest.WriteCodebook(t, dir, tt.cols...)
			key := filepath.Join(dir, "k.parquet")
			if tt.keyName != "" {
				key = filepath.Join(dir, tt.keyName)
			}
			enc := filepath.Join(dir, "enc."+tt.format)
			args := append([]string{"--codebook", cb, "--key-out", key, "-o", enc, "--seed", "7", "--insecure-seed", in}, tt.flags...)
			if tt.prf {
				args = append(args, "--prf-key", prfKeyFile(t, dir))
			}
			if res := runEncrypt(args...); res.Code != 0 {
				t.Fatalf("encrypt: %s", res.Stderr)
			}
			out := filepath.Join(dir, "out.csv")
			if res := runDecrypt("--unperturbed", "--key", key, enc, "-o", out); res.Code != 0 {
				t.Fatalf("decrypt: %s", res.Stderr)
			}
			gotNames, got, _ := releasetest.ReadTable(t, out)
			want := tt.want
			if want == nil {
				want = tt.rows
			}
			if !slices.Equal(gotNames, names) {
				t.Fatalf("columns %v, want %v", gotNames, names)
			}
			if len(got) != len(want) {
				t.Fatalf("%d rows, want %d", len(got), len(want))
			}
			for i := range want {
				if !slices.Equal(got[i], want[i]) {
					t.Fatalf("row %d: %v, want %v", i+1, got[i], want[i])
				}
			}
		})
	}
}

// TestCiphertextOfAConstantColumnIsUniform encrypts a column holding one
// value and checks that the ciphertexts are uniform on Z_k: the ciphertext
// does not depend on the plaintext.
func TestCiphertextOfAConstantColumnIsUniform(t *testing.T) {
	const (
		k     = 16
		m     = 48_000 // 3000 expected per cell
		alpha = 1e-6   // false-alarm probability of each chi-square test
	)
	labels := releasetest.Labels("v", k)
	for _, tt := range []struct {
		value string
		prf   bool
	}{{"v0", false}, {"v13", false}, {"v0", true}, {"v13", true}} {
		t.Run(fmt.Sprintf("%s prf=%v", tt.value, tt.prf), func(t *testing.T) {
			dir := t.TempDir()
			rows := make([][]string, m)
			for i := range rows {
				rows[i] = []string{tt.value}
			}
			in := filepath.Join(dir, "in.arrow")
			releasetest.WriteSample(t, in, []string{"a"}, rows, m)
			cb := releasetest.WriteCodebook(t, dir, releasetest.Categorical{Name: "a", Categories: labels})
			enc := filepath.Join(dir, "enc.arrow")
			args := []string{"--codebook", cb, "--key-out", filepath.Join(dir, "k"), "-o", enc, "--seed", "11", "--insecure-seed", in}
			if tt.prf {
				args = append(args, "--prf-key", prfKeyFile(t, dir))
			}
			if res := runEncrypt(args...); res.Code != 0 {
				t.Fatal(res.Stderr)
			}
			_, ct, meta := releasetest.ReadTable(t, enc)
			counts := make([]int64, k)
			for _, row := range ct {
				c, err := strconv.Atoi(row[0])
				if err != nil || c < 0 || c >= k {
					t.Fatalf("ciphertext %q outside Z_%d", row[0], k)
				}
				counts[c]++
			}
			probs := make([]float64, k)
			for i := range probs {
				probs[i] = 1.0 / k
			}
			stattest.AssertChiSquare(t, "ciphertext of a constant column", counts, probs, alpha)
			if meta["stage"] != "encrypt" || meta["m"] != strconv.Itoa(m) {
				t.Errorf("metadata %v", meta)
			}
		})
	}
}

// TestEncryptedFileHoldsNoLabel checks that no codebook label reaches the
// encrypted file, in any format (for CSV the sidecar included). The key
// file carries the codebook, which shows the check can see labels.
func TestEncryptedFileHoldsNoLabel(t *testing.T) {
	root, err := filepath.Abs("../../../testdata/adult/codebook.json")
	if err != nil {
		t.Fatal(err)
	}
	cb, err := codebook.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	edu, _ := cb.Column("education")
	sex, _ := cb.Column("sex")
	labels := append(edu.Labels(), sex.Labels()...)
	r := rand.New(rand.NewPCG(3, 4))
	rows := make([][]string, 5000)
	for i := range rows {
		rows[i] = []string{edu.Label(r.IntN(edu.K())), sex.Label(r.IntN(sex.K()))}
	}
	for _, format := range []string{"csv", "parquet", "arrow"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "in.csv")
			releasetest.WriteSample(t, in, []string{"education", "sex"}, rows, 32561)
			enc := filepath.Join(dir, "enc."+format)
			key := filepath.Join(dir, "k.csv")
			if res := runEncrypt("--codebook", root, "--key-out", key, "-o", enc, in); res.Code != 0 {
				t.Fatal(res.Stderr)
			}
			files, _ := filepath.Glob(enc + "*")
			var content []byte
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				content = append(content, b...)
			}
			for _, l := range labels {
				// In binary formats a 3- or 4-byte label ("9th") could
				// occur by chance in compressed bytes; CSV is plain text.
				if format != "csv" && len(l) < 5 {
					continue
				}
				if bytes.Contains(content, []byte(l)) {
					t.Errorf("the encrypted file contains the label %q", l)
				}
			}
			side, err := os.ReadFile(key + ".meta.json")
			if err != nil || !bytes.Contains(side, []byte("Bachelors")) {
				t.Errorf("the key file's metadata should carry the codebook (err %v)", err)
			}
		})
	}
}

// TestKeyFileIsOwnerOnlyAndNeverReplaced checks the key file's mode and
// that a second run neither replaces it nor writes an output, unless
// --force.
func TestKeyFileIsOwnerOnlyAndNeverReplaced(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	releasetest.WriteSample(t, in, []string{"a"}, [][]string{{"x"}, {"y"}}, 10)
	cb := releasetest.WriteCodebook(t, dir, releasetest.Categorical{Name: "a", Categories: []string{"x", "y", "z"}})
	key := filepath.Join(dir, "a.key")
	if res := runEncrypt("--codebook", cb, "--key-out", key, "-o", filepath.Join(dir, "e1.csv"), in); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	st, err := os.Stat(key)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v, want 0600", st.Mode().Perm())
	}
	before, _ := os.ReadFile(key)
	res := runEncrypt("--codebook", cb, "--key-out", key, "-o", filepath.Join(dir, "e2.csv"), in)
	if res.Code != cli.ExitFailure || !strings.Contains(res.Stderr, "already exists; remove it or pass --force") {
		t.Errorf("second run: code %d, %q", res.Code, res.Stderr)
	}
	if after, _ := os.ReadFile(key); !bytes.Equal(before, after) {
		t.Error("the key file was replaced")
	}
	if _, err := os.Stat(filepath.Join(dir, "e2.csv")); err == nil {
		t.Error("a failed run left an output file")
	}
	if res := runEncrypt("--codebook", cb, "--key-out", key, "--force", "-o", filepath.Join(dir, "e2.csv"), in); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	if after, _ := os.ReadFile(key); bytes.Equal(before, after) {
		t.Error("--force did not replace the key (new pads expected)")
	}
	if st, _ := os.Stat(key); st.Mode().Perm() != 0o600 {
		t.Errorf("replaced key mode %v, want 0600", st.Mode().Perm())
	}
}

// TestBadInput checks that each mistake gives one line naming the file and
// the fix, a non-zero exit, no output and no key file, and never quotes
// key material.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	cb := releasetest.WriteCodebook(t, dir,
		releasetest.Categorical{Name: "a", Categories: []string{"x", "y"}},
		releasetest.Categorical{Name: "b", Categories: []string{"p", "q"}, Missing: "?"})
	good := filepath.Join(dir, "good.csv")
	releasetest.WriteSample(t, good, []string{"a", "b"}, [][]string{{"x", "p"}, {"y", "?"}}, 5)
	unknown := filepath.Join(dir, "unknown.csv")
	releasetest.WriteSample(t, unknown, []string{"a", "b"}, [][]string{{"x", "p"}, {"x", "p"}, {"w", "q"}}, 5)
	empty := filepath.Join(dir, "empty.csv")
	releasetest.WriteSample(t, empty, []string{"a", "b"}, [][]string{{"x", "p"}, {"", "q"}}, 5)
	plain := filepath.Join(dir, "plain.csv")
	os.WriteFile(plain, []byte("a,b\nx,p\n"), 0o644)
	short := filepath.Join(dir, "short.csv")
	releasetest.WriteSample(t, short, []string{"a", "b"}, [][]string{{"x", "p"}, {"y", "q"}, {"x", "q"}}, 5)
	b, _ := os.ReadFile(short)
	os.WriteFile(short, b[:len(b)-4], 0o644) // drop the last row, keep m = 3 in the sidecar
	cmdtest.BindSidecar(t, short)            // as a careful hand edit would: reach the m check
	encrypted := filepath.Join(dir, "encrypted.csv")
	if res := runEncrypt("--codebook", cb, "--key-out", filepath.Join(dir, "e.key"), "-o", encrypted, good); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	badKey := filepath.Join(dir, "bad.prf")
	os.WriteFile(badKey, []byte("SECRETSECRET"), 0o600)

	tests := []struct {
		name  string
		args  []string
		code  int
		want  string
		never string
	}{
		{"unknown value", []string{unknown}, 1, `unknown.csv: row 3, column "a": value "w" is not in the codebook for column "a" (known: x, y); add it to the codebook, or give the column a "missing" token`, ""},
		{"empty value without missing category", []string{"--missing", "fail", empty}, 1, `empty.csv: row 2, column "a": empty value in column "a"`, ""},
		{"missing drop refused", []string{"--missing", "drop", good}, 2, "--missing drop is refused: dropping rows at one curator misaligns", ""},
		{"not a sample", []string{plain}, 1, "plain.csv: no sample \"n\" in the metadata: encrypt works on the output of sample", ""},
		{"already encrypted", []string{encrypted}, 1, "encrypted.csv is already encrypted (stage encrypt): encrypt reads a curator's sample", ""},
		{"truncated sample", []string{short}, 1, "short.csv has 2 rows but its metadata says m = 3", ""},
		{"no such column", []string{"--columns", "a,c", good}, 1, `good.csv has no column "c" (columns: a, b); check --columns`, ""},
		{"bad PRF key", []string{"--prf-key", badKey, good}, 1, "bad.prf: a PRF key must be 32 bytes or 64 hex digits", "SECRET"},
		{"missing PRF key", []string{"--prf-key", filepath.Join(dir, "none.prf"), good}, 1, "cannot read the PRF key", ""},
		{"no codebook", []string{"--codebook", "", good}, 2, "no codebook: pass --codebook FILE", ""},
		{"key to stdout", []string{"--key-out", "-", good}, 2, "--key-out must be a file", ""},
		{"key and output the same", []string{"--key-out", filepath.Join(dir, "out.csv"), good}, 2, "-o and --key-out name the same file", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, "out.csv")
			key := filepath.Join(dir, "out.key")
			args := append([]string{"--codebook", cb, "--key-out", key, "-o", out}, tt.args...)
			res := runEncrypt(args...)
			if res.Code != tt.code {
				t.Errorf("exit code %d, want %d", res.Code, tt.code)
			}
			if !strings.Contains(res.Stderr, tt.want) {
				t.Errorf("stderr %q\nwant it to contain %q", res.Stderr, tt.want)
			}
			if lines := strings.Count(strings.TrimSuffix(res.Stderr, "\n"), "\n"); lines > 1 || (lines == 1 && tt.code != 2) {
				t.Errorf("error is not one line: %q", res.Stderr)
			}
			if tt.never != "" && strings.Contains(res.Stderr, tt.never) {
				t.Errorf("stderr quotes key material: %q", res.Stderr)
			}
			for _, p := range []string{out, out + ".meta.json", key} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("failed run left %s", p)
				}
			}
		})
	}
}

// TestMetadataSaysWhatTheServerNeeds checks the encrypted file's and key
// file's metadata items.
func TestMetadataSaysWhatTheServerNeeds(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.parquet")
	releasetest.WriteSample(t, in, []string{"b", "a"}, [][]string{{"q", "x"}, {"p", "y"}}, 9)
	cols := []releasetest.Categorical{{Name: "a", Categories: []string{"x", "y", "z"}}, {Name: "b", Categories: []string{"p", "q"}}}
	cbPath := releasetest.WriteCodebook(t, dir, cols...)
	enc, key := filepath.Join(dir, "enc.parquet"), filepath.Join(dir, "k.parquet")
	if res := runEncrypt("--codebook", cbPath, "--key-out", key, "--columns", "a,b", "-o", enc, in); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	cb, _ := codebook.Load(cbPath)
	hash := func(name string) string { s, _ := cb.Select([]string{name}); return s.Hash() }
	names, _, meta := releasetest.ReadTable(t, enc)
	if !slices.Equal(names, []string{"a", "b"}) {
		t.Errorf("columns %v, want [a b] (the --columns order)", names)
	}
	got, err := release.ReadColumns(meta, "enc", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "a" || got[0].K != 3 || got[0].CodebookHash != hash("a") || got[1].K != 2 || got[1].CodebookHash != hash("b") ||
		got[0].Pad != "otp" || got[0].KeyID == "" || got[0].KeyID != got[1].KeyID {
		t.Errorf("columns %+v", got)
	}
	for k, want := range map[string]string{"stage": "encrypt", "n": "9", "m": "2", "fingerprint": releasetest.Fingerprint, "pad": "otp"} {
		if meta[k] != want {
			t.Errorf("metadata %s = %q, want %q", k, meta[k], want)
		}
	}
	if _, ok := meta["codebook"]; ok {
		t.Error("the encrypted file carries the codebook")
	}
	_, pads, kmeta := releasetest.ReadTable(t, key)
	if kmeta["stage"] != "key" || kmeta["fingerprint"] != releasetest.Fingerprint || kmeta["columns"] != meta["columns"] || len(pads) != 2 {
		t.Errorf("key metadata %v, %d pad rows", kmeta, len(pads))
	}
	kcb, err := codebook.Parse([]byte(kmeta["codebook"]))
	if err != nil || !slices.Equal(kcb.Names(), []string{"a", "b"}) {
		t.Errorf("key codebook %v, %v", kcb, err)
	}
}

func BenchmarkEncrypt(b *testing.B) {
	const m = 200_000
	dir := b.TempDir()
	labels := releasetest.Labels("v", 16)
	r := rand.New(rand.NewPCG(1, 1))
	rows := make([][]string, m)
	for i := range rows {
		rows[i] = []string{labels[r.IntN(16)], labels[r.IntN(2)]}
	}
	in := filepath.Join(dir, "in.arrow")
	releasetest.WriteSample(b, in, []string{"a", "b"}, rows, m)
	cb := releasetest.WriteCodebook(b, dir, releasetest.Categorical{Name: "a", Categories: labels}, releasetest.Categorical{Name: "b", Categories: labels[:2]})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res := runEncrypt("--codebook", cb, "--key-out", filepath.Join(dir, "k.arrow"), "--force", "-o", filepath.Join(dir, "enc.arrow"), in)
		if res.Code != 0 {
			b.Fatal(res.Stderr)
		}
	}
	b.ReportMetric(float64(m)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
