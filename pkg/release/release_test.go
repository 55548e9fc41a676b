package release

import (
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/pkg/bitflip"
	"github.com/pramkit/pramkit/pkg/ddps"
	"github.com/pramkit/pramkit/pkg/pram"
	"github.com/pramkit/pramkit/pkg/table"
)

// decoder is any of the package's structs, for the shared checks.
type decoder interface {
	Decode(meta table.Meta, file string) error
}

// edit is one change to an honest metadata map and the error it must give
// (a regexp), or "" when the edit is harmless.
type edit struct {
	name string
	do   func(table.Meta)
	want string
}

func set(kv ...string) func(table.Meta) {
	return func(m table.Meta) {
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
	}
}

func del(keys ...string) func(table.Meta) {
	return func(m table.Meta) {
		for _, k := range keys {
			delete(m, k)
		}
	}
}

// checkEdits applies each edit to a copy of honest and checks Decode's
// error: the wanted message, on one line, starting with the file name.
func checkEdits(t *testing.T, honest table.Meta, fresh func() decoder, edits []edit) {
	t.Helper()
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			m := honest.Clone()
			e.do(m)
			err := fresh().Decode(m, "r.csv")
			if e.want == "" {
				if err != nil {
					t.Fatalf("harmless edit refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("edit accepted, want %q", e.want)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "r.csv: ") {
				t.Errorf("not one line naming the file: %q", msg)
			}
			if !regexp.MustCompile(e.want).MatchString(msg) {
				t.Errorf("error %q\nwant match %q", msg, e.want)
			}
		})
	}
}

func gammaHonest(t *testing.T, releases int) (GammaDiagonal, table.Meta) {
	t.Helper()
	n, m, gamma := 1000, 100, 1.5
	eps, err := pram.EpsilonFromGamma(n, m, gamma)
	if err != nil {
		t.Fatal(err)
	}
	g := GammaDiagonal{Stage: StageDecrypt, Sample: Sample{N: 1000, M: 100, Fingerprint: "ab12"}, K: 6, Gamma: gamma, Epsilon: eps, Releases: releases}
	if releases > 1 {
		g.GammaComposed = 4.5
		g.EpsilonComposed, err = pram.ComposedEpsilon(n, m, math.Exp(math.Log(4.5)/float64(releases)), releases)
		if err != nil {
			t.Fatal(err)
		}
	}
	meta := table.Meta{"columns": `[{"name":"a","k":2},{"name":"b","k":3}]`}
	g.Encode(meta)
	return g, meta
}

func TestGammaDiagonalRoundTrip(t *testing.T) {
	for _, r := range []int{1, 2, 5} {
		want, meta := gammaHonest(t, r)
		var got GammaDiagonal
		if err := got.Decode(meta, "r.csv"); err != nil {
			t.Fatalf("releases = %d: %v", r, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("releases = %d: got %+v, want %+v", r, got, want)
		}
	}
}

func TestGammaDiagonalRefusesEdits(t *testing.T) {
	fresh := func() decoder { return new(GammaDiagonal) }
	_, one := gammaHonest(t, 1)
	checkEdits(t, one, fresh, []edit{
		{"epsilon not a number", set("epsilon", "banana"), `^r\.csv: metadata "epsilon" = "banana" is not a number; the file was edited or damaged — re-run perturb$`},
		{"gamma edited", set("gamma", "1.01"), `^r\.csv: metadata "epsilon" = 0\.04879016416943\d* does not match γ = 1\.01, n = 1000, m = 100 \(ε = ln\(\(n \+ m\(γ−1\)\)/n\) = 0\.0009995\d*\); the file was edited or damaged — re-run perturb$`},
		{"epsilon edited", set("epsilon", "1"), `metadata "epsilon" = 1 does not match γ = 1\.5`},
		{"n edited", set("n", "2000"), `metadata "epsilon" = .* does not match γ = 1\.5, n = 2000, m = 100`},
		{"m edited", set("m", "10"), `metadata "epsilon" = .* does not match γ = 1\.5, n = 1000, m = 10 `},
		{"last digit rounded", set("epsilon", "0.048790164169432"), ""},
		{"gamma 1", set("gamma", "1"), `metadata "gamma" = 1 is out of range: γ-diagonal PRAM needs a finite γ > 1`},
		{"gamma NaN", set("gamma", "NaN"), `metadata "gamma" = NaN is out of range`},
		{"gamma Inf", set("gamma", "+Inf"), `metadata "gamma" = \+Inf is out of range`},
		{"gamma huge", set("gamma", "1e400"), `metadata "gamma" = \+Inf is out of range`},
		{"epsilon 0", set("epsilon", "0"), `metadata "epsilon" = 0 is out of range`},
		{"epsilon negative", set("epsilon", "-1"), `metadata "epsilon" = -1 is out of range`},
		{"m above n", set("m", "1001"), `metadata "m" = 1001 is out of range: a sample needs 1 ≤ m ≤ n = 1000`},
		{"m zero", set("m", "0"), `metadata "m" = 0 is out of range`},
		{"n zero", set("n", "0"), `metadata "n" = 0 is out of range`},
		{"n not an integer", set("n", "1e3"), `metadata "n" = "1e3" is not an integer`},
		{"no epsilon", del("epsilon"), `^r\.csv: no "epsilon" in the metadata; the file was edited or damaged — re-run perturb$`},
		{"no fingerprint", del("fingerprint"), `no "fingerprint" in the metadata`},
		{"empty fingerprint", set("fingerprint", ""), `metadata "fingerprint" is empty`},
		{"no releases", del("releases"), `no "releases" in the metadata`},
		{"releases 0", set("releases", "0"), `metadata "releases" = 0 is out of range`},
		{"K edited", set("K", "8"), `metadata "K" = 8 does not match the product of the columns' alphabets k_1·…·k_d = 6`},
		{"K zero", set("K", "0"), `metadata "K" = 0 is out of range`},
		{"K huge", set("K", "9223372036854775807"), `metadata "K" = 9223372036854775807 is out of range`},
		{"stage", set("stage", "encrypt"), `metadata "stage" = "encrypt" is not a γ-diagonal release`},
		{"mechanism", set("mechanism", "bitflip"), `metadata "mechanism" = "bitflip" is not a γ-diagonal release`},
		{"stray gamma_composed", set("gamma_composed", "9"), `metadata "gamma_composed" = 9 does not match γ = 1\.5 of the only release`},
		{"stray epsilon_composed", set("epsilon_composed", "9"), `metadata "epsilon_composed" = 9 does not match ε = `},
		{"releases 2 without composition", set("releases", "2"), `no "gamma_composed" in the metadata`},
	})
	_, two := gammaHonest(t, 2)
	checkEdits(t, two, fresh, []edit{
		{"gamma_composed edited", set("gamma_composed", "3"), `metadata "epsilon_composed" = .* does not match Γ = 3, r = 2, n = 1000, m = 100 \(ε_r = ln\(\(n \+ m\(Γ−1\)\)/n\) = 0\.18232\d*\)`},
		{"gamma_composed below gamma", set("gamma_composed", "1.2"), `metadata "gamma_composed" = 1\.2 is out of range: the product Γ of the γ of 2 releases is finite and > the last γ = 1\.5`},
		{"epsilon_composed edited", set("epsilon_composed", "0.1"), `metadata "epsilon_composed" = 0\.1 does not match`},
		{"epsilon_composed missing", del("epsilon_composed"), `no "epsilon_composed"`},
	})
	// perturb's ledger knew of releases of the sample from other copies of
	// the files: ε_composed covers them, so it is bounded below by what the
	// file's own chain implies, and equal to it when the ledger knew no more.
	ledger := func(sr, ec string) func(table.Meta) {
		return func(m table.Meta) { m["sample_releases"] = sr; m["epsilon_composed"] = ec }
	}
	checkEdits(t, one, fresh, []edit{
		{"ledger: composed above the file's ε", ledger("3", "0.5"), ""},
		{"ledger: composed below the file's ε", ledger("3", "0.01"), `metadata "epsilon_composed" = 0\.01 does not match Γ = 1\.5 over this file's 1 release\(s\) of 3 of the sample`},
		{"ledger: fewer sample releases than the file's", ledger("0", "0.5"), `metadata "sample_releases" = 0 is out of range`},
		{"ledger: same count, other ε", ledger("1", "0.5"), `metadata "epsilon_composed" = 0\.5 does not match Γ = 1\.5, r = 1`},
	})
	checkEdits(t, two, fresh, []edit{
		{"ledger: composed above the chain's", ledger("4", "5"), ""},
		{"ledger: composed below the chain's", ledger("4", "0.1"), `metadata "epsilon_composed" = 0\.1 does not match Γ = 4\.5 over this file's 2 release\(s\) of 4`},
	})
}

func TestSampleDecode(t *testing.T) {
	want := Sample{N: 10, M: 10, Fingerprint: "f"}
	meta := table.Meta{}
	want.Encode(meta)
	var got Sample
	if err := got.Decode(meta, "s.csv"); err != nil || got != want {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	checkEdits(t, meta, func() decoder { return new(Sample) }, []edit{
		{"m above n", set("m", "11"), `^r\.csv: metadata "m" = 11 is out of range: a sample needs 1 ≤ m ≤ n = 10; the file was edited or damaged — re-create it with sample$`},
		{"n missing", del("n"), `no "n" in the metadata`},
	})
}

func keyHonest() (Key, table.Meta) {
	k := Key{Sample: Sample{N: 100, M: 10, Fingerprint: "f1"}, Columns: []Column{
		{Name: "a", K: 2, CodebookHash: "h1", KeyID: "id1", Pad: "otp"},
		{Name: "b", K: 3, CodebookHash: "h2", KeyID: "id1", Pad: "otp"},
	}}
	meta := table.Meta{}
	if err := k.Encode(meta); err != nil {
		panic(err)
	}
	return k, meta
}

func TestKeyRoundTrip(t *testing.T) {
	want, meta := keyHonest()
	var got Key
	if err := got.Decode(meta, "k.key"); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	checkEdits(t, meta, func() decoder { return new(Key) }, []edit{
		{"not a key", set("stage", "encrypt"), `metadata "stage" = "encrypt": not a key file \(want "key"\); the file was edited or damaged — use the key file encrypt wrote with --key-out$`},
		{"no columns", set("columns", "[]"), `the metadata lists no columns`},
		{"no key id", set("columns", `[{"name":"a","k":2}]`), `lists a column without a name or key_id`},
		{"m above n", set("m", "101"), `metadata "m" = 101 is out of range`},
	})
}

func TestKeyMatch(t *testing.T) {
	k, _ := keyHonest()
	rel := k.Sample
	cols := append([]Column(nil), k.Columns...)
	cols = append(cols, Column{Name: "c", K: 5, KeyID: "id9", Pad: "prf"})
	if err := k.Match(rel, cols, "k.key", "r.csv"); err != nil {
		t.Fatalf("the right key refused: %v", err)
	}
	other := func(edit func(*Sample, []Column)) (Sample, []Column) {
		s, c := rel, append([]Column(nil), cols...)
		edit(&s, c)
		return s, c
	}
	tests := []struct {
		name string
		s    Sample
		cols []Column
		want string
	}{
		{"another sampling", func() Sample { s, _ := other(func(s *Sample, _ []Column) { s.Fingerprint = "f2" }); return s }(), cols,
			`^k\.key: metadata "fingerprint" = "f1" does not match r\.csv's "f2": the key was made for another sampling; pass the key`},
		{"another m", func() Sample { s, _ := other(func(s *Sample, _ []Column) { s.M = 11 }); return s }(), cols,
			`^k\.key: metadata "m" = 10 does not match r\.csv's 11`},
		{"another run", rel, func() []Column { _, c := other(func(_ *Sample, c []Column) { c[1].KeyID = "id2" }); return c }(),
			`^k\.key: metadata "key_id" of column "b" = "id1" does not match r\.csv's "id2": it is the key of another encrypt run`},
		{"another codebook", rel, func() []Column { _, c := other(func(_ *Sample, c []Column) { c[0].CodebookHash = "h9" }); return c }(),
			`"codebook_hash" of column "a" = "h1" does not match r\.csv's "h9": the key was made with another codebook`},
		{"another alphabet", rel, func() []Column { _, c := other(func(_ *Sample, c []Column) { c[0].K = 4 }); return c }(),
			`"k" of column "a" = 2 does not match r\.csv's 4`},
	}
	for _, tt := range tests {
		err := k.Match(tt.s, tt.cols, "k.key", "r.csv")
		if err == nil || !regexp.MustCompile(tt.want).MatchString(err.Error()) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}

func bitflipHonest(t *testing.T) (Bitflip, table.Meta) {
	t.Helper()
	l, err := bitflip.NewLayout([]bitflip.Group{
		{Name: "sex", Kind: bitflip.Binary, Labels: []string{"F", "M"}},
		{Name: "color", Kind: bitflip.OneHot, Labels: []string{"r", "g", "b"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	mech, err := bitflip.New(bitflip.Options{LieProbability: 0.2, Bits: l.Width()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBitflip(mech, l)
	if err != nil {
		t.Fatal(err)
	}
	meta := table.Meta{}
	if err := b.Encode(meta); err != nil {
		t.Fatal(err)
	}
	return b, meta
}

func TestBitflipRoundTrip(t *testing.T) {
	want, meta := bitflipHonest(t)
	var got Bitflip
	if err := got.Decode(meta, "r.csv"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	// Values from the bitflip script: q = 0.2, ln 4 per bit.
	if got.EpsilonPerBit != math.Log(4) || got.EpsilonPerRecord != 4*math.Log(4) || got.EpsilonEncoded != 3*math.Log(4) {
		t.Errorf("ε = %v, %v, %v", got.EpsilonPerBit, got.EpsilonPerRecord, got.EpsilonEncoded)
	}
	checkEdits(t, meta, func() decoder { return new(Bitflip) }, []edit{
		{"lie edited", set("lie", "0.3"), `^r\.csv: metadata "epsilon_per_bit" = 1\.386\d* does not match q = 0\.3 \(ε = ln\(\(1−q\)/q\) = 0\.847\d*\); the file was edited or damaged — randomize the original table again with perturb --mechanism bitflip$`},
		{"lie zero", set("lie", "0"), `metadata "lie" = 0 is out of range: .*q = 0 publishes the bits unchanged`},
		{"lie half", set("lie", "0.5"), `metadata "lie" = 0\.5 is out of range`},
		{"lie NaN", set("lie", "nan"), `metadata "lie" = NaN is out of range`},
		{"lie text", set("lie", "x"), `metadata "lie" = "x" is not a number`},
		{"bits edited", set("bits", "5"), `metadata "bits" = 5 does not match the 4 bits of the layout`},
		{"bits zero", set("bits", "0"), `metadata "bits" = 0 is out of range`},
		{"per record edited", set("epsilon_per_record", "1"), `metadata "epsilon_per_record" = 1 does not match q = 0\.2, L = 4`},
		{"encoded edited", set("epsilon_encoded", "1"), `metadata "epsilon_encoded" = 1 does not match q = 0\.2 and the layout's largest distance D = 3`},
		{"layout damaged", set("layout", "{"), `metadata "layout" is not valid: `},
		{"mechanism", set("mechanism", "ddps"), `metadata "mechanism" = "ddps" is not a bitflip release`},
	})
}

// ddpsCodebook is the codebook item of ddpsHonest's releases: job's
// categories a, b, c and the non-participant category ?.
const ddpsCodebook = `{"columns":[{"name":"job","categories":["a","?","b","c"]}]}`

// ddpsHonest is a release of job with π_s = 0.2 and masses masses (nil:
// uniform, (1 − π_s)/(V + 1) = 0.2 each), as perturb writes it: the
// mechanism's masses, normalized if they had to be.
func ddpsHonest(t *testing.T, nonPart string, masses []float64) (DDPS, table.Meta) {
	t.Helper()
	cb := ddpsCodebook
	if nonPart == "" {
		cb = strings.Replace(cb, `"?",`, "", 1)
	}
	mech, err := ddps.New(ddps.Options{Values: 3, PiS: 0.2, PiBottom: masses, NonParticipants: nonPart != ""})
	if err != nil {
		t.Fatal(err)
	}
	d := DDPS{Column: "job", NoneToken: "(none)", NonParticipant: nonPart, PiS: mech.PiS(), Epsilon: mech.Epsilon()}
	if masses == nil {
		d.PiBottomEach = mech.PiBottom()[0]
	} else {
		d.PiBottom = mech.PiBottom()
	}
	meta := table.Meta{KeyCodebook: cb}
	if err := d.Encode(meta); err != nil {
		t.Fatal(err)
	}
	return d, meta
}

// handMasses are ddpsHonest's own (non-uniform) masses.
var handMasses = []float64{0.1, 0.3, 0.2, 0.2}

// offMasses are uniform but sum with π_s to 1 + 4e-12: ddps.New divides
// them and π_s by the sum, so they are not (1 − π_s)/(V + 1) bit for bit.
var offMasses = []float64{0.2 + 1e-12, 0.2 + 1e-12, 0.2 + 1e-12, 0.2 + 1e-12}

func TestDDPSRoundTrip(t *testing.T) {
	for _, np := range []string{"", "?"} {
		for _, masses := range [][]float64{nil, handMasses, {0.2, 0.2, 0.2, 0.2}, offMasses} {
			want, meta := ddpsHonest(t, np, masses)
			var got DDPS
			if err := got.Decode(meta, "r.csv"); err != nil {
				t.Fatalf("%q, %v: %v", np, masses, err)
			}
			if got.Column != want.Column || got.NoneToken != want.NoneToken || got.NonParticipant != np || got.PiS != want.PiS || got.Epsilon != want.Epsilon || got.V != 3 {
				t.Errorf("%q, %v: got %+v, want %+v", np, masses, got, want)
			}
			for o := range 4 {
				if got.Mass(o) != want.Mass(o) {
					t.Errorf("%q, %v: π_⊥%d = %v, want %v", np, masses, o, got.Mass(o), want.Mass(o))
				}
			}
			if labels := []string{got.Label(0), got.Label(1), got.Label(2), got.Label(3)}; !slices.Equal(labels, []string{"(none)", "a", "b", "c"}) {
				t.Errorf("%q: labels %q", np, labels)
			}
			var outputs []int
			for x := range got.Col.K() {
				outputs = append(outputs, got.Output(x))
			}
			if want := map[string][]int{"": {1, 2, 3}, "?": {1, 0, 2, 3}}[np]; !slices.Equal(outputs, want) {
				t.Errorf("%q: outputs of the categories %v, want %v", np, outputs, want)
			}
			gm, err := got.Mechanism()
			if err != nil {
				t.Fatal(err)
			}
			wm, _ := ddps.New(ddps.Options{Values: 3, PiS: 0.2, PiBottom: masses, NonParticipants: np != ""})
			if gm.PiS() != wm.PiS() || !slices.Equal(gm.PiBottom(), wm.PiBottom()) || gm.NonParticipants() != wm.NonParticipants() {
				t.Errorf("%q, %v: mechanism π_s %v π_⊥ %v, want %v %v", np, masses, gm.PiS(), gm.PiBottom(), wm.PiS(), wm.PiBottom())
			}
		}
	}
}

// TestDDPSUniformMassesAreOneNumber: equal masses (the default, --epsilon,
// or given) are stored as one number, not V + 1 copies, and other masses
// as the list; neither form lists the values, which the codebook holds.
func TestDDPSUniformMassesAreOneNumber(t *testing.T) {
	for _, c := range []struct {
		masses []float64
		want   string
	}{{nil, "0.2"}, {[]float64{0.2, 0.2, 0.2, 0.2}, "0.2"}, {offMasses, "0.20000000000019996"}, {handMasses, "[0.1,0.3,0.2,0.2]"}} {
		_, meta := ddpsHonest(t, "", c.masses)
		if meta[KeyDDPSPiBottom] != c.want {
			t.Errorf("%v: pi_bot %q, want %q", c.masses, meta[KeyDDPSPiBottom], c.want)
		}
		if _, ok := meta[KeyDDPSValues]; ok {
			t.Errorf("%v: the values are listed: %q", c.masses, meta[KeyDDPSValues])
		}
	}
}

// TestDDPSReadsOlderReleases: a release of contract version 3 listed the
// values and every mass; it is read as before, its values checked against
// the codebook.
func TestDDPSReadsOlderReleases(t *testing.T) {
	old := func(np, values, masses string) table.Meta {
		_, meta := ddpsHonest(t, np, nil)
		meta[KeyDDPSValues], meta[KeyDDPSPiBottom] = values, masses
		return meta
	}
	for _, np := range []string{"", "?"} {
		var d DDPS
		if err := d.Decode(old(np, `["a","b","c"]`, "[0.2,0.2,0.2,0.2]"), "r.csv"); err != nil {
			t.Fatal(err)
		}
		if d.V != 3 || d.PiBottom == nil || d.Mass(3) != 0.2 || d.Label(2) != "b" {
			t.Errorf("%q: got %+v", np, d)
		}
	}
	checkEdits(t, old("?", `["a","b","c"]`, "[0.2,0.2,0.2,0.2]"), func() decoder { return new(DDPS) }, []edit{
		{"values reordered", set("values", `["a","c","b"]`), `^r\.csv: metadata "values" disagrees with the codebook's column "job": value 2 is "c", not "b"; the file was edited`},
		{"value added", set("values", `["a","b","c","d"]`), `metadata "values" lists 4 values, the codebook's column "job" 3`},
		{"non-participant listed", set("values", `["a","?","b"]`), `value 2 is "\?", not "b"`},
		{"value dropped", set("values", `["a","b"]`), `metadata "values" lists 2 values, the codebook's column "job" 3`},
		{"no values", set("values", "[]"), `metadata "values" lists no values`},
		{"values damaged", set("values", `["a"`), `metadata "values" is not valid`},
	})
}

func TestDDPSRefusesEdits(t *testing.T) {
	_, meta := ddpsHonest(t, "", handMasses)
	checkEdits(t, meta, func() decoder { return new(DDPS) }, []edit{
		{"epsilon edited", set("epsilon", "0.1"), `^r\.csv: metadata "epsilon" = 0\.1 does not match π_s = 0\.2, π_⊥ = \[0\.1 0\.3 0\.2 0\.2\] \(ε = max_v ln\(\(π_⊥v \+ π_s\)/π_⊥v\) = 0\.6931\d*\); the file was edited or damaged — randomize the original table again with perturb --mechanism ddps$`},
		{"pi_s edited", set("pi_s", "0.25", "pi_bot", "[0.1,0.25,0.2,0.2]"), `metadata "epsilon" = 0\.6931\d* does not match π_s = 0\.25, π_⊥ = \[0\.1 0\.25 0\.2 0\.2\] \(ε = .* = 0\.8109\d*\)`},
		{"masses do not sum to 1", set("pi_s", "0.3"), `metadata "pi_bot" = \[0\.1 0\.3 0\.2 0\.2\] is out of range: ddps\.New: .* must be 1`},
		{"pi_s one", set("pi_s", "1"), `metadata "pi_s" = 1 is out of range`},
		{"pi_s text", set("pi_s", "banana"), `metadata "pi_s" = "banana" is not a number`},
		{"zero mass", set("pi_bot", "[0.1,0,0.4,0.3]"), `is out of range: ddps\.New: π_⊥1 = 0`},
		{"wrong count", set("pi_bot", "[0.4,0.4]"), `needs V \+ 1 = 4 masses`},
		{"masses damaged", set("pi_bot", "[0.1,0.3"), `metadata "pi_bot" is not valid`},
		{"masses made uniform", set("pi_bot", "0.25"), `metadata "pi_bot" = 0\.25 each is out of range: ddps\.New: .* must be 1, got 1\.2;`},
		{"epsilon NaN", set("epsilon", "NaN"), `metadata "epsilon" = NaN is out of range`},
		{"no column", del("column"), `no "column" in the metadata`},
		{"column not in the codebook", set("column", "role"), `the codebook in the metadata has no column "role"`},
		{"no codebook", del("codebook"), `no "codebook" in the metadata`},
		{"none token a category", set("none_token", "b"), `the codebook's column "job" has a category "b", the none token`},
		{"non-participant not a category", set("non_participant", "x"), `metadata "non_participant" = "x" is not a category of the codebook's column "job"`},
		{"only the non-participant", set("non_participant", "a", "codebook", `{"columns":[{"name":"job","categories":["a"]}]}`), `has no value besides the non-participant one`},
	})
	_, uni := ddpsHonest(t, "", nil)
	checkEdits(t, uni, func() decoder { return new(DDPS) }, []edit{
		{"harmless respelling", set("pi_bot", "2e-1"), ""},
		{"uniform mass edited", set("pi_bot", "0.15"), `^r\.csv: metadata "pi_bot" = 0\.15 each is out of range: ddps\.New: .* must be 1, got 0\.8; the file was edited`},
		{"uniform mass text", set("pi_bot", "most"), `metadata "pi_bot" = "most" is not a number`},
		{"uniform mass NaN", set("pi_bot", "NaN"), `metadata "pi_bot" = NaN each is out of range: ddps\.New: π_⊥0 must be finite`},
		{"uniform mass and pi_s edited", set("pi_s", "0.4", "pi_bot", "0.15"), `metadata "epsilon" = 0\.6931\d* does not match π_s = 0\.4, π_⊥ = 0\.15 each \(ε = .* = 1\.2992\d*\)`},
		{"epsilon edited", set("epsilon", "0.5"), `metadata "epsilon" = 0\.5 does not match π_s = 0\.2, π_⊥ = 0\.2 each \(ε = .* = 0\.6931\d*\)`},
		{"a value added", set("codebook", `{"columns":[{"name":"job","categories":["a","b","c","d"]}]}`), `metadata "pi_bot" = 0\.2 each is out of range: ddps\.New: .* must be 1, got 1\.2`},
		{"masses listed", set("pi_bot", "[0.2,0.2,0.2,0.2]"), ""},
		{"empty", set("pi_bot", ""), `metadata "pi_bot" = "" is not a number`},
	})
}

func globalHonest(t *testing.T, l int) (Global, table.Meta) {
	t.Helper()
	meta := table.Meta{"codebook": `{"columns":[{"name":"occ","categories":["a","b","c","d","e","f"]},{"name":"sex","categories":["F","M"]}]}`}
	g := Global{Sensitive: []string{"occ"}, P: []float64{0.3}}
	if l > 0 {
		g = Global{Sensitive: []string{"occ", "sex"}, L: l, P: []float64{KeepForRetention(6, l), KeepForRetention(2, l)}}
	}
	if err := g.Encode(meta); err != nil {
		t.Fatal(err)
	}
	return g, meta
}

func TestGlobalRoundTrip(t *testing.T) {
	for _, l := range []int{0, 2} {
		want, meta := globalHonest(t, l)
		var got Global
		if err := got.Decode(meta, "r.csv"); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("ℓ′ = %d: got %+v, %v; want %+v (meta %v)", l, got, err, want, meta)
		}
	}
	_, meta := globalHonest(t, 0)
	fresh := func() decoder { return new(Global) }
	checkEdits(t, meta, fresh, []edit{
		{"p one", set("p", "1"), `^r\.csv: metadata "p" = 1 is out of range: p = 1 keeps every value: mechanism A would publish the sensitive column unchanged, with no privacy; choose p < 1; the file was edited or damaged — publish the original table again with anonymize$`},
		{"p above one", set("p", "1.5"), `metadata "p" = 1\.5 is out of range`},
		{"p NaN", set("p", "NaN"), `metadata "p" = NaN is out of range`},
		{"p negative", set("p", "-0.1"), `metadata "p" = -0\.1 is out of range`},
		{"p zero", set("p", "0"), ""},
		{"p text", set("p", "most"), `metadata "p" = "most" is not a number`},
		{"no sensitive", set("sensitive", "[]"), `names no sensitive column`},
		{"per column one", set("p_per_column", "[0.3]", "sensitive", `["occ"]`), ""},
		{"per column edited to 1", set("p_per_column", "[0.3,1]", "sensitive", `["occ","sex"]`), `metadata "p_per_column" = 1 is out of range: column "sex": p = 1 keeps every value`},
		{"per column count", set("p_per_column", "[0.3,0.3]"), `"p_per_column" has 2 entries for 1 sensitive columns`},
		{"per column first", set("p_per_column", "[0.4]"), `metadata "p_per_column" = 0\.4 does not match "p" = 0\.3`},
	})
	_, withL := globalHonest(t, 2)
	checkEdits(t, withL, fresh, []edit{
		{"p edited against l", set("p_per_column", "[0.5,0]", "p", "0.5"), `metadata "p_per_column" = 0\.5 does not match ℓ′ = 2, V = 6 for "occ" \(p = max\(0, \(V/ℓ′ − 1\)/\(V − 1\)\) = 0\.4\)`},
		{"l edited", set("l", "3"), `metadata "p_per_column" = 0\.4 does not match ℓ′ = 3, V = 6`},
		{"l above V", set("l", "7"), `metadata "l" = 7 is out of range: ℓ′ ≤ V = 6, the values of "occ"`},
		{"l one", set("l", "1"), `metadata "l" = 1 is out of range`},
	})
}

func TestCheckKeep(t *testing.T) {
	for p, ok := range map[float64]bool{0: true, 0.5: true, math.Nextafter(1, 0): true, 1: false, -0.1: false, math.NaN(): false, math.Inf(1): false} {
		if err := CheckKeep(p); (err == nil) != ok {
			t.Errorf("CheckKeep(%v) = %v", p, err)
		}
	}
}

// checker adapts CheckGammaDiagonal to checkEdits.
type checker struct{}

func (checker) Decode(meta table.Meta, file string) error { return CheckGammaDiagonal(meta, file) }

func TestCheckGammaDiagonalChecksWhatIsPresent(t *testing.T) {
	_, one := gammaHonest(t, 1)
	fresh := func() decoder { return checker{} }
	checkEdits(t, one, fresh, []edit{
		// Items a flag can supply may be missing.
		{"no gamma", del("gamma"), ""},
		{"no n", del("n"), ""},
		{"no epsilon", del("epsilon"), ""},
		{"no stage, fingerprint or releases", del("stage", "fingerprint", "releases"), ""},
		// Present items are still checked, alone and together.
		{"gamma edited", set("gamma", "1.01"), `^r\.csv: metadata "epsilon" = 0\.0487\d* does not match γ = 1\.01, n = 1000, m = 100 `},
		{"gamma edited, stage gone", func(m table.Meta) { m["gamma"] = "1.01"; delete(m, "stage") }, `metadata "epsilon" = 0\.0487\d* does not match γ = 1\.01`},
		{"epsilon not a number", set("epsilon", "banana"), `metadata "epsilon" = "banana" is not a number`},
		{"gamma 1", set("gamma", "1"), `metadata "gamma" = 1 is out of range`},
		{"m above n", set("m", "1001"), `metadata "m" = 1001 is out of range: a sample needs 1 ≤ m ≤ n = 1000`},
		{"m alone zero", func(m table.Meta) { m["m"] = "0"; delete(m, "n") }, `metadata "m" = 0 is out of range`},
		{"mechanism", set("mechanism", "ddps"), `metadata "mechanism" = "ddps" is not a γ-diagonal release`},
		{"K not an integer", set("K", "six"), `metadata "K" = "six" is not an integer`},
		{"releases 0", set("releases", "0"), `metadata "releases" = 0 is out of range`},
		// The K = Π k_j rule is the caller's (estimate checks K against
		// the codebook).
		{"K edited", set("K", "8"), ""},
	})
	_, two := gammaHonest(t, 2)
	checkEdits(t, two, fresh, []edit{
		{"epsilon_composed edited", set("epsilon_composed", "0.5"), `metadata "epsilon_composed" = 0\.5 does not match Γ = 4\.5, r = 2`},
		{"no epsilon_composed", del("epsilon_composed"), ""},
		{"gamma_composed 1", set("gamma_composed", "1"), `metadata "gamma_composed" = 1 is out of range`},
	})
}
