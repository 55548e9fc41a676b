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
