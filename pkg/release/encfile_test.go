package release

import (
	"bytes"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/pkg/table"
)

func TestReadColumnsValidates(t *testing.T) {
	tests := []struct {
		name, json, want string
	}{
		{"ok", `[{"name":"a","k":3,"codebook_hash":"h","key_id":"i","pad":"otp"}]`, ""},
		{"missing", "", `no "columns" in the metadata: FIX`},
		{"not JSON", `[{`, "the file was damaged"},
		{"empty", `[]`, "lists no columns"},
		{"k zero", `[{"name":"a","k":0,"pad":"otp"}]`, "alphabet size k = 0"},
		{"k too large", `[{"name":"a","k":2147483649,"pad":"otp"}]`, "alphabet size k = 2147483649"},
		{"duplicate", `[{"name":"a","k":2,"pad":"otp"},{"name":"a","k":2,"pad":"otp"}]`, `column "a" twice`},
		{"no name", `[{"name":"","k":2,"pad":"otp"}]`, "without a name"},
		{"bad pad", `[{"name":"a","k":2,"pad":"xor"}]`, `pad kind "xor"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meta := table.Meta{}
			if tt.json != "" {
				meta["columns"] = tt.json
			}
			cols, err := ReadColumns(meta, "f.csv", "FIX")
			if tt.want == "" {
				if err != nil || len(cols) != 1 || cols[0].K != 3 {
					t.Errorf("%v, %v", cols, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "f.csv") {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestReadSampleValidates(t *testing.T) {
	for _, tt := range []struct {
		meta table.Meta
		want string
	}{
		{table.Meta{"n": "10", "m": "3", "fingerprint": "f"}, ""},
		{table.Meta{"n": "10", "m": "3"}, `no sample "fingerprint" in the metadata: FIX`},
		{table.Meta{"n": "2", "m": "3", "fingerprint": "f"}, "n ≥ m ≥ 1"},
		{table.Meta{"n": "2", "m": "0", "fingerprint": "f"}, "n ≥ m ≥ 1"},
		{table.Meta{"n": "x", "m": "1", "fingerprint": "f"}, "not an integer"},
	} {
		s, err := ReadSample(tt.meta, "f.csv", "FIX")
		if tt.want == "" {
			if err != nil || s != (Sample{N: 10, M: 3, Fingerprint: "f"}) {
				t.Errorf("%v: %+v, %v", tt.meta, s, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.meta, err, tt.want)
		}
	}
}

func TestHistoryRoundTrip(t *testing.T) {
	for _, h := range []History{
		{Releases: 0, GammaProduct: 1},
		{Releases: 1, GammaProduct: 11},
		{Releases: 3, GammaProduct: 1331},
		{Releases: 1, GammaProduct: 11, Gammas: []float64{11}},
		{Releases: 3, GammaProduct: 2 * 3.5 * 7, Gammas: []float64{2, 3.5, 7}},
	} {
		meta := table.Meta{}
		if h.Releases == 1 {
			meta.SetFloat("gamma", h.GammaProduct)
		}
		h.Set(meta)
		got, err := ReadHistory(meta, "f")
		if err != nil || got.Releases != h.Releases || got.GammaProduct != h.GammaProduct || !slices.Equal(got.Gammas, h.Gammas) {
			t.Errorf("%+v: read back %+v, %v", h, got, err)
		}
	}
	if _, err := ReadHistory(table.Meta{"releases": "2", "gamma": "3"}, "f"); err == nil || !strings.Contains(err.Error(), `no valid "gamma_composed"`) {
		t.Errorf("error %v", err)
	}
	for _, tt := range []struct{ gammas, want string }{
		{`[2,3]`, "lists 2 γ's for 3 releases"},
		{`[2,3,"x"]`, "not a JSON list"},
		{`[2,3,0.5]`, "not a finite number > 1"},
		{`[2,3,4]`, "multiplies to 24"},
	} {
		meta := table.Meta{"releases": "3", "gamma_composed": "30", "gammas": tt.gammas}
		if _, err := ReadHistory(meta, "f"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("gammas %s: error %v, want %q", tt.gammas, err, tt.want)
		}
	}
}

func TestHistoryThen(t *testing.T) {
	h := History{GammaProduct: 1}.Then(2).Then(5)
	if h.Releases != 2 || h.GammaProduct != 10 || !slices.Equal(h.Gammas, []float64{2, 5}) {
		t.Errorf("two releases: %+v", h)
	}
	// An older file that kept only Γ: the list stays unknown.
	old := History{Releases: 2, GammaProduct: 10}.Then(3)
	if old.Releases != 3 || old.GammaProduct != 30 || old.Gammas != nil {
		t.Errorf("after an unknown list: %+v", old)
	}
}

func TestPRFKeys(t *testing.T) {
	raw := bytes.Repeat([]byte{7}, 32)
	hexKey := []byte(strings.Repeat("07", 32) + "\n")
	a, err1 := ParsePRFKey(raw)
	b, err2 := ParsePRFKey(hexKey)
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		t.Fatalf("raw and hex keys differ: %v %v", err1, err2)
	}
	if _, err := ParsePRFKey([]byte("SECRET-SHORT")); err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("error %v", err)
	}
	k1, k2 := DeriveRunKey(raw, "run1"), DeriveRunKey(raw, "run2")
	if k1 == k2 || k1 != DeriveRunKey(raw, "run1") {
		t.Error("run keys must be deterministic per run id and differ between runs")
	}
	meta := table.Meta{KeyPRFKey: "zz" + strings.Repeat("0", 62)}
	if _, err := RunKeyFromMeta(meta, "k"); err == nil || strings.Contains(err.Error(), "zz") {
		t.Errorf("error %v", err)
	}
}

func TestDeriveNoiseKeyDependsOnEveryInput(t *testing.T) {
	master := []byte(strings.Repeat("k", 32))
	base := DeriveNoiseKey(master, "fp", 3, []string{"ab", "c"})
	if again := DeriveNoiseKey(master, "fp", 3, []string{"ab", "c"}); again != base {
		t.Fatal("not a function of its inputs")
	}
	for name, k := range map[string][32]byte{
		"master":             DeriveNoiseKey([]byte(strings.Repeat("K", 32)), "fp", 3, []string{"ab", "c"}),
		"fingerprint":        DeriveNoiseKey(master, "fq", 3, []string{"ab", "c"}),
		"gamma":              DeriveNoiseKey(master, "fp", 3.5, []string{"ab", "c"}),
		"key ids":            DeriveNoiseKey(master, "fp", 3, []string{"ab", "d"}),
		"key id boundaries":  DeriveNoiseKey(master, "fp", 3, []string{"a", "bc"}),
		"fingerprint/gamma":  DeriveNoiseKey(master, "fp3", 0, []string{"ab", "c"}),
		"pad key derivation": DeriveRunKey(master, "fp"),
	} {
		if k == base {
			t.Errorf("changing the %s keeps the key", name)
		}
	}
	id := NoiseID(base)
	if len(id) != 32 || id == NoiseID(DeriveNoiseKey(master, "fp", 4, nil)) || strings.Contains(id, hex.EncodeToString(base[:4])) {
		t.Errorf("NoiseID %q", id)
	}
}
