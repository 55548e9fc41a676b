package release

import (
	"math"
	"testing"

	"github.com/pramkit/pramkit/pkg/pram"
	"github.com/pramkit/pramkit/pkg/table"
)

// FuzzGammaDiagonalDecode feeds Decode arbitrary item values: it must not
// panic, and whatever it accepts must satisfy its rules and survive an
// Encode/Decode round trip.
func FuzzGammaDiagonalDecode(f *testing.F) {
	f.Add("1000", "100", "6", "1.5", "0.048790164169432", "1", "", "")
	f.Add("32561", "200", "32", "280.74487308227486", "1", "2", "78815.69", "3.5")
	f.Add("10", "10", "1", "NaN", "banana", "0", "-1", "1e400")
	f.Fuzz(func(t *testing.T, n, m, K, gamma, eps, releases, gc, ec string) {
		meta := table.Meta{"stage": StagePerturb, "mechanism": MechanismGamma, "fingerprint": "f",
			"n": n, "m": m, "K": K, "gamma": gamma, "epsilon": eps, "releases": releases}
		if gc != "" {
			meta["gamma_composed"] = gc
		}
		if ec != "" {
			meta["epsilon_composed"] = ec
		}
		var g GammaDiagonal
		err := g.Decode(meta, "f.csv")
		if cerr := CheckGammaDiagonal(meta, "f.csv"); err == nil && cerr != nil {
			t.Fatalf("Decode accepts what CheckGammaDiagonal refuses: %v", cerr)
		}
		if err != nil {
			return
		}
		want, _ := pram.EpsilonFromGamma(int(g.N), int(g.M), g.Gamma)
		if g.M < 1 || g.M > g.N || !(g.Gamma > 1) || math.IsInf(g.Gamma, 0) || !agree(g.Epsilon, want) || g.Releases < 1 {
			t.Fatalf("accepted %+v", g)
		}
		out := table.Meta{}
		g.Encode(out)
		var h GammaDiagonal
		if err := h.Decode(out, "f.csv"); err != nil || h != g {
			t.Fatalf("round trip: %+v, %v; want %+v", h, err, g)
		}
	})
}

// FuzzAnonymizedDecode feeds Anonymized.Decode arbitrary item values: it
// must not panic, whatever it accepts must satisfy its rules, and an
// accepted release must survive an Encode/Decode round trip.
func FuzzAnonymizedDecode(f *testing.F) {
	cb := `{"columns":[{"name":"disease","categories":["flu","cold","cancer"]}]}`
	f.Add("anatomy", `["disease"]`, cb, "3", "12", "4", "1", "gid", "r1")
	f.Add("diverted", `["disease"]`, cb, "2", "5", "", "0", "", "")
	f.Add("global", `["disease"]`, cb, "", "", "", "", "", "")
	f.Add("anatomy", `["disease"]`, cb, "3", "12", "5", "-1", "gid", "")
	f.Fuzz(func(t *testing.T, mech, sens, cbs, l, n, groups, dropped, gcol, rid string) {
		meta := table.Meta{KeyMechanism: mech, KeySensitive: sens, KeyCodebook: cbs}
		for k, v := range map[string]string{KeyL: l, KeyRows: n, KeyGroups: groups, KeyDropped: dropped, KeyGroupColumn: gcol, KeyReleaseID: rid} {
			if v != "" {
				meta[k] = v
			}
		}
		var a Anonymized
		if err := a.Decode(meta, "a.csv"); err != nil {
			return
		}
		switch {
		case len(a.Sensitive) == 0 || a.Codebook == nil || a.Rows < 0 || a.Dropped < 0:
			t.Fatalf("accepted %+v", a)
		case a.Mechanism != MechanismGlobal && a.L < 2:
			t.Fatalf("accepted ℓ′ = %d", a.L)
		case a.Mechanism == MechanismAnatomy && (a.Groups < 1 || int64(a.Groups)*int64(a.L) > a.Rows || a.ReleaseID == "" || a.GroupColumn == ""):
			t.Fatalf("accepted anatomy %+v", a)
		}
		out := table.Meta{}
		if err := a.Encode(out); err != nil {
			t.Fatal(err)
		}
		var b Anonymized
		if err := b.Decode(out, "a.csv"); err != nil {
			t.Fatalf("round trip: %v (meta %v)", err, out)
		}
		if b.Mechanism != a.Mechanism || b.L != a.L || b.Rows != a.Rows || b.Groups != a.Groups || b.ReleaseID != a.ReleaseID || b.Policy != a.Policy {
			t.Fatalf("round trip: %+v, want %+v", b, a)
		}
	})
}
