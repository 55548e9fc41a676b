package sample

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/rng"
)

func secretFrom(r *rand.Rand) []byte {
	s := make([]byte, 32)
	for i := range s {
		s[i] = byte(r.Uint32())
	}
	return s
}

// sampleIDs runs bottom-m over ids (by string id) and returns the sampled
// ids in output order.
func sampleIDs(t testing.TB, secret []byte, ids []string, m int) []string {
	t.Helper()
	prf, err := NewPRF(secret)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBottomM(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		b.Offer(prf.ID(id), func() []string { return []string{id} })
	}
	items, err := collect(b.Sample)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Row[0]
	}
	return out
}

// TestBottomMIsUniformWithoutReplacement draws m = 2 of n = 6 rows under
// 30000 random secrets: each of the C(6,2) = 15 subsets must come up with
// probability 1/15 (chi-square, false-alarm probability 1e-6), and no
// sample may repeat a row.
func TestBottomMIsUniformWithoutReplacement(t *testing.T) {
	const n, m, runs = 6, 2, 30000
	r := rng.NewSeeded(11)
	for _, byPosition := range []bool{true, false} {
		counts := map[[2]int]int64{}
		for run := 0; run < runs; run++ {
			prf, _ := NewPRF(secretFrom(r))
			b, _ := NewBottomM(m)
			for i := 0; i < n; i++ {
				p := prf.Position(uint64(i))
				if !byPosition {
					p = prf.ID("row-" + strconv.Itoa(i))
				}
				b.Offer(p, func() []string { return []string{strconv.Itoa(i)} })
			}
			items, err := collect(b.Sample)
			if err != nil {
				t.Fatal(err)
			}
			x, _ := strconv.Atoi(items[0].Row[0])
			y, _ := strconv.Atoi(items[1].Row[0])
			if x == y {
				t.Fatalf("row %d sampled twice", x)
			}
			counts[[2]int{min(x, y), max(x, y)}]++
		}
		var obs []int64
		var probs []float64
		for x := 0; x < n; x++ {
			for y := x + 1; y < n; y++ {
				obs = append(obs, counts[[2]int{x, y}])
				probs = append(probs, 1.0/15)
			}
		}
		stattest.AssertChiSquare(t, fmt.Sprintf("subsets (by position %v)", byPosition), obs, probs, 1e-6)
	}
}

// TestCuratorsSampleTheSameRowsInTheSameOrder: two curators hold different
// columns of the same people, in different row orders; sampling by id under
// one secret yields the same ids in the same order.
func TestCuratorsSampleTheSameRowsInTheSameOrder(t *testing.T) {
	r := rng.NewSeeded(5)
	secret := secretFrom(r)
	ids := make([]string, 5000)
	for i := range ids {
		ids[i] = "person-" + strconv.Itoa(i)
	}
	alice := slices.Clone(ids)
	bob := slices.Clone(ids)
	r.Shuffle(len(bob), func(i, j int) { bob[i], bob[j] = bob[j], bob[i] })
	a := sampleIDs(t, secret, alice, 300)
	b := sampleIDs(t, secret, bob, 300)
	if !slices.Equal(a, b) {
		t.Fatalf("curators' samples differ:\n%v\n%v", a[:5], b[:5])
	}
	if c := sampleIDs(t, secretFrom(r), alice, 300); slices.Equal(a, c) {
		t.Fatal("another secret gave the same sample")
	}
}

// TestFractionEqualsBottomM: the streaming fraction sampler returns exactly
// the bottom-m rows, m = round(f·n), for several f and n.
func TestFractionEqualsBottomM(t *testing.T) {
	r := rng.NewSeeded(9)
	for _, tc := range []struct {
		n int
		f float64
	}{{1, 1}, {10, 0.5}, {1000, 0.01}, {100000, 0.063}, {5000, 0.999}} {
		prf, _ := NewPRF(secretFrom(r))
		m := max(int64(tc.f*float64(tc.n)+0.5), 1)
		fr, _ := NewFraction(tc.f)
		b, _ := NewBottomM(int(m))
		for i := 0; i < tc.n; i++ {
			p := prf.Position(uint64(i))
			row := func() []string { return []string{strconv.Itoa(i)} }
			fr.Offer(p, row)
			b.Offer(p, row)
		}
		got, err := collect(func(emit func(Item) error) error { return fr.Sample(m, emit) })
		if err != nil {
			t.Fatal(err)
		}
		want, _ := collect(b.Sample)
		if len(got) != len(want) {
			t.Fatalf("n=%d f=%v: %d rows, want %d", tc.n, tc.f, len(got), len(want))
		}
		for i := range got {
			if got[i].Row[0] != want[i].Row[0] {
				t.Fatalf("n=%d f=%v: row %d is %s, want %s", tc.n, tc.f, i, got[i].Row[0], want[i].Row[0])
			}
		}
		if fr.kept.rows() > 2*m+6000 {
			t.Errorf("n=%d f=%v: fraction sampler holds %d rows for m=%d", tc.n, tc.f, fr.kept.rows(), m)
		}
	}
}

func TestBadSizesAndSecretsAreRefused(t *testing.T) {
	if _, err := NewBottomM(0); err == nil {
		t.Error("m = 0 accepted")
	}
	if _, err := NewFraction(0); err == nil {
		t.Error("fraction 0 accepted")
	}
	if _, err := NewFraction(1.5); err == nil {
		t.Error("fraction 1.5 accepted")
	}
	b, _ := NewBottomM(5)
	b.Offer(Priority{1, 1}, func() []string { return nil })
	if err := b.Sample(discard); err == nil {
		t.Error("m > n accepted")
	}
	if _, err := ParseSecret([]byte("short")); err == nil {
		t.Error("5-byte secret accepted")
	}
	if _, err := NewPRF(make([]byte, 8)); err == nil {
		t.Error("8-byte PRF key accepted")
	}
}

func TestSecretFileRoundTrip(t *testing.T) {
	s := secretFrom(rng.NewSeeded(1))
	got, err := ParseSecret(FormatSecret(s))
	if err != nil || !slices.Equal(got, s) {
		t.Fatalf("got %x, %v", got, err)
	}
	// Both layouts through ParseSecretFile: the mark is reported and is not
	// part of the secret; a plain file is not marked.
	for _, tc := range []struct {
		content  []byte
		insecure bool
	}{{FormatSecret(s), false}, {FormatInsecureSecret(s), true}} {
		got, insecure, err := ParseSecretFile(tc.content)
		if err != nil || !slices.Equal(got, s) || insecure != tc.insecure {
			t.Errorf("%q: got %x, insecure %v, %v", tc.content, got, insecure, err)
		}
	}
	// Another second line is not the mark: the content is used as is.
	other := append(FormatSecret(s), "# a note\n"...)
	if got, insecure, err := ParseSecretFile(other); err != nil || insecure || !slices.Equal(got, other) {
		t.Errorf("note line: got %x, insecure %v, %v", got, insecure, err)
	}
}

// TestPRFSeparatesIDs: the id encoding is prefix-free, so ids that differ
// only by trailing zero bytes or by length get different priorities, and
// the position and id domains are distinct.
func TestPRFSeparatesIDs(t *testing.T) {
	prf, _ := NewPRF(make([]byte, 32))
	ids := []string{"", "a", "a\x00", "a\x00\x00", "0123456789abcdef", "0123456789abcdef\x00", "0"}
	seen := map[Priority]string{}
	for _, id := range ids {
		p := prf.ID(id)
		if prev, dup := seen[p]; dup {
			t.Errorf("ids %q and %q share a priority", prev, id)
		}
		seen[p] = id
	}
	if prf.Position(0) == prf.ID("\x00\x00\x00\x00\x00\x00\x00\x00") {
		t.Error("position and id domains collide")
	}
	if prf.ID("x") != prf.ID("x") {
		t.Error("PRF not deterministic")
	}
}

// TestPriorityTopBitsAreUniform: the high 64 bits of priorities, cut into
// 16 equal ranges, are uniform (chi-square, false-alarm 1e-6).
func TestPriorityTopBitsAreUniform(t *testing.T) {
	prf, _ := NewPRF(secretFrom(rng.NewSeeded(3)))
	counts := make([]int64, 16)
	probs := make([]float64, 16)
	for i := range probs {
		probs[i] = 1.0 / 16
	}
	for i := 0; i < 160000; i++ {
		counts[prf.Position(uint64(i)).Hi>>60]++
	}
	stattest.AssertChiSquare(t, "priorities", counts, probs, 1e-6)
}

func TestFingerprintDependsOnSecretNAndM(t *testing.T) {
	s1, s2 := []byte("0123456789abcdef0"), []byte("0123456789abcdef1")
	base := Fingerprint(s1, 100, 10)
	for _, other := range []string{Fingerprint(s2, 100, 10), Fingerprint(s1, 101, 10), Fingerprint(s1, 100, 11)} {
		if other == base {
			t.Error("fingerprint did not change")
		}
	}
	if Fingerprint(s1, 100, 10) != base || len(base) != 32 {
		t.Errorf("fingerprint %q", base)
	}
}

func BenchmarkPRF(b *testing.B) {
	prf, _ := NewPRF(make([]byte, 32))
	b.Run("position", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			prf.Position(uint64(i))
		}
	})
	b.Run("positions", func(b *testing.B) {
		// A chunk's priorities as one keystream (PRF.Positions), per row.
		const rows = 16 * 1024
		dst := make([]Priority, rows)
		for i := 0; b.Loop(); i++ {
			prf.Positions(dst, uint64(i)*rows)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
	})
	b.Run("id-12-bytes", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			prf.ID("person-12345")
		}
	})
	b.Run("id-40-bytes", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			prf.ID("0123456789012345678901234567890123456789")
		}
	})
}

// TestRepeatedIDsAreRefused: a repeated id gets one priority, so its rows
// would be kept together (the bug: 100 of 100 sampled rows were one id).
// The samplers refuse when the repeated id is among the kept rows, or ties
// with the m-th best at the heap's boundary, and name both rows.
//
// It runs with the rows in memory and with a 256-byte budget, under which
// the copies of the repeated id lie in different run files.
func TestRepeatedIDsAreRefused(t *testing.T) {
	for _, budget := range []int64{Budget, 256} {
		t.Run(strconv.FormatInt(budget, 10), func(t *testing.T) {
			withBudget(t, budget)
			repeatedIDsAreRefused(t)
		})
	}
}

func repeatedIDsAreRefused(t *testing.T) {
	prf, _ := NewPRF(secretFrom(rng.NewSeeded(5)))
	// ids 0..999, then the sampled id "x" 100 times: the bug's table.
	ids := make([]string, 0, 1100)
	for i := range 1000 {
		ids = append(ids, strconv.Itoa(i))
	}
	for range 100 {
		ids = append(ids, "x")
	}
	offer := func(k interface {
		Offer(Priority, func() []string) error
	}, ids []string) {
		for _, id := range ids {
			if err := k.Offer(prf.ID(id), func() []string { return []string{id} }); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(name string, err error, kept string, a, b int64) {
		t.Helper()
		var d *DuplicateError
		if !errors.As(err, &d) {
			t.Fatalf("%s: err = %v, want a *DuplicateError", name, err)
		}
		lo, hi := min(d.Kept.Index, d.Row), max(d.Kept.Index, d.Row)
		if d.Kept.Row[0] != kept || a > 0 && (lo != a || hi != b) {
			t.Errorf("%s: duplicate %q rows %d and %d, want %q rows %d and %d", name, d.Kept.Row[0], lo, hi, kept, a, b)
		}
	}

	// "x" has a small priority with high probability only if it is among
	// the 100 best of the 1001 distinct ids; find an m that keeps it.
	px := prf.ID("x")
	rank := 0
	for i := range 1000 {
		if prf.ID(strconv.Itoa(i)).Less(px) {
			rank++
		}
	}
	t.Logf("x has rank %d of 1001", rank)
	b, _ := NewBottomM(rank + 100) // room for every copy of "x"
	offer(b, ids)
	err := b.Sample(discard)
	check("kept", err, "x", 1001, 1002)

	// m = rank+1: "x" is the m-th best, so every later copy ties with the
	// heap's maximum.
	b, _ = NewBottomM(rank + 1)
	offer(b, ids)
	err = b.Sample(discard)
	check("boundary tie", err, "x", 1001, 1002)
	// The same when the caller offers only the rows Wants.
	b, _ = NewBottomM(rank + 1)
	for _, id := range ids {
		if p := prf.ID(id); b.Wants(p) {
			b.Offer(p, func() []string { return []string{id} })
		}
	}
	err = b.Sample(discard)
	check("boundary tie after Wants", err, "x", 0, 0) // rows counted among those offered

	// Fraction 0.6: x's priority (rank 410 of 1001, below 2^127) is well
	// below the bound, so all its copies are kept.
	if px.Hi >= 1<<63 {
		t.Fatalf("the seed must give x a priority below 1/2, got rank %d", rank)
	}
	f, _ := NewFraction(0.6)
	offer(f, ids)
	err = f.Sample(600, discard)
	check("fraction", err, "x", 1001, 1002)

	// Not sampled: m smaller than x's rank, nothing noticed (documented).
	if rank > 1 {
		b, _ = NewBottomM(rank - 1)
		offer(b, ids)
		if err := b.Sample(discard); err != nil {
			t.Errorf("a repeated id that is not sampled: %v", err)
		}
	}
}

// collect gathers the rows a sampler's Sample emits.
func collect(sample func(emit func(Item) error) error) ([]Item, error) {
	var items []Item
	err := sample(func(it Item) error { items = append(items, it); return nil })
	return items, err
}

// discard is an emit that keeps nothing.
func discard(Item) error { return nil }
