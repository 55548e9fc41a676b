package encrypt_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/releasetest"
)

// TestReencryptingAnEditedSampleNeverReusesPads is the nonce-reuse attack
// on PRF pads. A curator encrypts a sample, edits it (same fingerprint: the
// fingerprint is of the secret, n and m, not of the rows) and encrypts it
// again with the same --prf-key. Were the pads a function of (key,
// fingerprint, columns) only, anyone holding both ciphertexts would learn
// x1 − x2 = c1 − c2 mod k for every row. The attack statistic counts the
// rows where c1 − c2 ≡ x1 − x2: with fresh pads each row matches with
// probability 1/k, so with m = 4000 and k = 1000 the count is
// Binomial(4000, 0.001), mean 4, and P(count ≥ 40) < 1e-25 is the test's
// false-alarm rate; with reused pads every row matches. The control (a
// retried part, --nonce-from on the same sample) reuses the pads by design
// and shows that the statistic detects reuse; --nonce-from on the edited
// sample is refused.
func TestReencryptingAnEditedSampleNeverReusesPads(t *testing.T) {
	const (
		k = 1000
		m = 4000
	)
	dir := t.TempDir()
	labels := releasetest.Labels("v", k)
	cb := releasetest.WriteCodebook(t, dir, releasetest.Categorical{Name: "a", Categories: labels})
	r := rand.New(rand.NewPCG(5, 6))
	x1, x2 := make([]int, m), make([]int, m)
	rows1, rows2 := make([][]string, m), make([][]string, m)
	for i := range m {
		x1[i] = r.IntN(k)
		x2[i] = (x1[i] + 1 + r.IntN(k-1)) % k // every row edited
		rows1[i], rows2[i] = []string{labels[x1[i]]}, []string{labels[x2[i]]}
	}
	s1, s2 := filepath.Join(dir, "s1.csv"), filepath.Join(dir, "s2.csv")
	releasetest.WriteSample(t, s1, []string{"a"}, rows1, 3*m)
	releasetest.WriteSample(t, s2, []string{"a"}, rows2, 3*m)
	prf := prfKeyFile(t, dir)
	enc := func(in, name string, extra ...string) []int {
		t.Helper()
		out := filepath.Join(dir, name+".csv")
		args := append([]string{"--codebook", cb, "--prf-key", prf, "--key-out", filepath.Join(dir, name+".key"), "-o", out, in}, extra...)
		if res := runEncrypt(args...); res.Code != 0 {
			t.Fatalf("encrypt %s: %s", name, res.Stderr)
		}
		return readCodes(t, out)
	}
	matches := func(c1, c2, a, b []int) int {
		n := 0
		for i := range c1 {
			if ((c1[i]-c2[i])%k+k)%k == ((a[i]-b[i])%k+k)%k {
				n++
			}
		}
		return n
	}
	const threshold = 40

	c1 := enc(s1, "e1")
	c2 := enc(s2, "e2") // the edited sample, a new run: a fresh nonce
	if n := matches(c1, c2, x1, x2); n >= threshold {
		t.Fatalf("re-encrypting the edited sample reused pads: c1 − c2 = x1 − x2 in %d of %d rows (fresh pads: about %d)", n, m, m/k)
	}
	// Control: the retried parts of the same sample share the pads.
	p1 := enc(s1, "p1", "--nonce-from", filepath.Join(dir, "e1.key"), "--first-row", "0", "--rows", "1500")
	p2 := enc(s1, "p2", "--nonce-from", filepath.Join(dir, "e1.key"), "--first-row", "1500")
	parts := append(p1, p2...)
	if !slices.Equal(parts, c1) {
		t.Fatal("the parts of the sample do not concatenate to the whole run's ciphertext")
	}
	if n := matches(c1, parts, x1, x1); n != m {
		t.Fatalf("control: pads shared by design matched in %d of %d rows", n, m)
	}
	// The CLI refuses to reuse the nonce on the edited sample.
	res := runEncrypt("--codebook", cb, "--prf-key", prf, "--nonce-from", filepath.Join(dir, "e1.key"), "--first-row", "0", "--rows", "10",
		"--key-out", filepath.Join(dir, "bad.key"), "-o", filepath.Join(dir, "bad.csv"), s2)
	if res.Code != 1 || !strings.Contains(res.Stderr, "is not the sample whose nonce") {
		t.Fatalf("--nonce-from on an edited sample: exit %d, %s", res.Code, res.Stderr)
	}
	for _, f := range []string{"bad.key", "bad.csv", "bad.csv.meta.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s was written", f)
		}
	}
}

// readCodes reads the one integer column of an encrypted CSV table.
func readCodes(t *testing.T, path string) []int {
	t.Helper()
	_, rows, _ := releasetest.ReadTable(t, path)
	out := make([]int, len(rows))
	for i, r := range rows {
		v, err := strconv.Atoi(r[0])
		if err != nil {
			t.Fatal(err)
		}
		out[i] = v
	}
	return out
}
