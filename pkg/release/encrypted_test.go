package release

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/table"
)

func TestEncryptedRoundTrip(t *testing.T) {
	cols := []Column{{Name: "a", K: 2, CodebookHash: "h1", KeyID: "k", Pad: PadOTP}, {Name: "b", K: 3, CodebookHash: "h2", KeyID: "k", Pad: PadOTP}}
	for _, want := range []Encrypted{
		{Sample: Sample{N: 100, M: 10, Fingerprint: "ab"}, SampleID: SampleIDPosition, Pad: PadOTP, Columns: cols, History: History{GammaProduct: 1}},
		{Sample: Sample{N: 100, M: 10, Fingerprint: "ab"}, Pad: PadOTP, Columns: cols, History: History{Releases: 1, GammaProduct: 3, Gammas: []float64{3}}},
		{Sample: Sample{N: 100, M: 10, Fingerprint: "ab"}, SampleID: SampleIDColumn, Pad: PadOTP, Columns: cols, History: History{Releases: 2, GammaProduct: 6, Gammas: []float64{2, 3}}},
	} {
		meta := table.Meta{}
		if err := want.Encode(meta); err != nil {
			t.Fatal(err)
		}
		if meta[KeyStage] != StageEncrypt {
			t.Errorf("stage %q", meta[KeyStage])
		}
		var got Encrypted
		if err := got.Decode(meta, "e.csv"); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v, %v; want %+v (meta %v)", got, err, want, meta)
		}
	}
	meta := table.Meta{}
	if err := (Encrypted{Sample: Sample{N: 100, M: 10, Fingerprint: "ab"}, Pad: PadOTP, Columns: cols, History: History{GammaProduct: 1}}).Encode(meta); err != nil {
		t.Fatal(err)
	}
	checkEdits(t, meta, func() decoder { return decodeEncrypted{} }, []edit{
		{"pad against columns", set(KeyPad, PadPRF), `^r\.csv: metadata "pad" = "prf" does not match the pad kind "otp" of the columns; the file was edited or damaged — re-create it with encrypt$`},
		{"m above n", set(KeyM, "101"), `n = 100, m = 101`},
		{"no columns", del(KeyColumns), `no "columns" in the metadata`},
		{"no pad item", del(KeyPad), ""},
	})
}

// decodeEncrypted adapts Encrypted to checkEdits.
type decodeEncrypted struct{}

func (decodeEncrypted) Decode(meta table.Meta, file string) error {
	var e Encrypted
	return e.Decode(meta, file)
}

func TestDecryptedRoundTrip(t *testing.T) {
	cb, err := codebook.Parse([]byte(`{"columns":[{"name":"a","categories":["x","y"]},{"name":"b","categories":["p","q","r"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gammaHonest(t, 2)
	for _, want := range []Decrypted{
		{Sample: g.Sample, Release: &g, Codebook: cb},
		{Sample: Sample{N: 5, M: 5, Fingerprint: "cd"}, Codebook: cb}, // --unperturbed
	} {
		meta := table.Meta{KeyColumns: `[{"name":"a","k":2},{"name":"b","k":3}]`}
		if err := want.Encode(meta); err != nil {
			t.Fatal(err)
		}
		var got Decrypted
		if err := got.Decode(meta, "d.csv"); err != nil {
			t.Fatalf("%v (meta %v)", err, meta)
		}
		gc, _ := json.Marshal(got.Codebook)
		wc, _ := json.Marshal(want.Codebook)
		if want.Release != nil {
			w := *want.Release
			w.Stage = StageDecrypt
			want.Release = &w
		}
		got.Codebook, want.Codebook = nil, nil
		if string(gc) != string(wc) || !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v (%+v), want %+v (%+v)", got, got.Release, want, want.Release)
		}
	}
	meta := table.Meta{KeyStage: StagePerturb, KeyCodebook: "{}"}
	var d Decrypted
	if err := d.Decode(meta, "d.csv"); err == nil {
		t.Error("a perturb-stage file decoded as decrypt's output")
	}
}

// TestGammaDiagonalSampleReleasesRoundTrip: the ledger's count of the
// sample's releases survives Encode and Decode.
func TestGammaDiagonalSampleReleasesRoundTrip(t *testing.T) {
	want, _ := gammaHonest(t, 1)
	want.SampleReleases = 3
	want.EpsilonComposed = 2 * want.Epsilon // other copies' releases count too
	meta := table.Meta{}
	want.Encode(meta)
	var got GammaDiagonal
	if err := got.Decode(meta, "r.csv"); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
}
