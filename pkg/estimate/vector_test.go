package estimate

import (
	"math"
	"testing"

	"github.com/pramkit/pramkit/pkg/pram"
	"github.com/pramkit/pramkit/pkg/rng"
)

func TestL2HandValueAndSparseForms(t *testing.T) {
	// est = (0.5, 0.5, 0, 0), truth = (0.25, 0.25, 0.25, 0.25):
	// ‖·‖₂ = sqrt(2·0.0625 + 2·0.0625) = 0.5. The same vectors in sparse
	// form (listed cells differ, unlisted cells share Rest) give the same.
	dense, err := L2(FromDense([]float64{0.5, 0.5, 0, 0}), FromDense([]float64{0.25, 0.25, 0.25, 0.25}))
	if err != nil || math.Abs(dense-0.5) > 1e-15 {
		t.Fatalf("L2 = %v, %v; want 0.5", dense, err)
	}
	est := Vector{K: 4, Index: []uint64{0, 1}, Value: []float64{0.5, 0.5}}
	truth := Vector{K: 4, Index: []uint64{3}, Value: []float64{0.25}, Rest: 0.25}
	if d, err := L2(est, truth); err != nil || math.Abs(d-0.5) > 1e-15 {
		t.Fatalf("sparse L2 = %v, %v; want 0.5", d, err)
	}
	// K = 2^40: est puts 1 on cell 7, truth is uniform (Rest = 2^-40):
	// ‖·‖² = (1 − 2^-40)² + (2^40 − 1)·2^-80.
	K := uint64(1) << 40
	d, err := L2(Vector{K: K, Index: []uint64{7}, Value: []float64{1}}, Vector{K: K, Rest: 1 / float64(K)})
	want := math.Sqrt(math.Pow(1-1/float64(K), 2) + float64(K-1)/float64(K)/float64(K))
	if err != nil || math.Abs(d-want) > 1e-15 {
		t.Fatalf("L2 at K = 2^40 = %v, %v; want %v", d, err, want)
	}
	if _, err := L2(FromDense([]float64{1}), FromDense([]float64{0.5, 0.5})); err == nil {
		t.Error("L2 accepted different K")
	}
	if _, err := L2(Vector{K: 2, Index: []uint64{1, 0}, Value: []float64{0, 1}}, FromDense([]float64{0.5, 0.5})); err == nil {
		t.Error("L2 accepted unsorted indexes")
	}
}

func TestMarginalHandValue(t *testing.T) {
	// G = Z_2 × Z_3, joint (row-major) = [[0.1, 0.2, 0.3], [0.05, 0.15, 0.2]]:
	// first component (0.6, 0.4); second (0.15, 0.35, 0.5).
	d, _ := pram.NewDomain([]uint32{2, 3})
	joint := FromDense([]float64{0.1, 0.2, 0.3, 0.05, 0.15, 0.2})
	for _, tt := range []struct {
		keep []int
		want []float64
	}{{[]int{0}, []float64{0.6, 0.4}}, {[]int{1}, []float64{0.15, 0.35, 0.5}}, {[]int{0, 1}, joint.Value}} {
		mv, md, err := Marginal(joint, d, tt.keep)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := mv.Dense()
		assertClose(t, "marginal", got, tt.want, 1e-15)
		if md.Size() != uint64(len(tt.want)) {
			t.Errorf("keep %v: sub-domain size %d", tt.keep, md.Size())
		}
	}
	for _, keep := range [][]int{nil, {2}, {-1}, {1, 0}, {0, 0}} {
		if _, _, err := Marginal(joint, d, keep); err == nil {
			t.Errorf("keep %v accepted", keep)
		}
	}
	other, _ := pram.NewDomain([]uint32{3, 3})
	if _, _, err := Marginal(joint, other, []int{0}); err == nil {
		t.Error("domain of another size accepted")
	}
}

func TestSparseMarginalMatchesDenseSum(t *testing.T) {
	// K = 10·20·30 = 6000 with 50 listed cells and a non-zero Rest: every
	// marginal of the sparse vector equals the marginal summed cell by cell
	// over the dense expansion.
	ks := []uint32{10, 20, 30}
	d, _ := pram.NewDomain(ks)
	r := rng.NewSeeded(46)
	v := Vector{K: d.Size(), Rest: 1e-5}
	for g := uint64(0); g < d.Size(); g += 1 + r.Uint64N(200) {
		v.Index = append(v.Index, g)
		v.Value = append(v.Value, r.Float64()/50)
	}
	dense, _ := v.Dense()
	x := make([]uint32, 3)
	for _, keep := range [][]int{{0}, {1}, {2}, {0, 2}, {1, 2}} {
		sub := make([]uint32, len(keep))
		for i, j := range keep {
			sub[i] = ks[j]
		}
		sd, _ := pram.NewDomain(sub)
		want := make([]float64, sd.Size())
		y := make([]uint32, len(keep))
		for g, val := range dense {
			_ = d.Decode(uint64(g), x)
			for i, j := range keep {
				y[i] = x[j]
			}
			h, _ := sd.Encode(y)
			want[h] += val
		}
		mv, _, err := Marginal(v, d, keep)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := mv.Dense()
		assertClose(t, "sparse marginal", got, want, 1e-13)
	}
}

func TestSumAndAt(t *testing.T) {
	v := Vector{K: 1 << 50, Index: []uint64{3, 9}, Value: []float64{0.25, 0.25}, Rest: 0.5 / float64(uint64(1)<<50-2)}
	if math.Abs(v.Sum()-1) > 1e-12 {
		t.Errorf("Sum = %.17g, want 1", v.Sum())
	}
	if v.At(9) != 0.25 || v.At(4) != v.Rest {
		t.Errorf("At(9) = %v, At(4) = %v", v.At(9), v.At(4))
	}
	if _, err := v.Dense(); err == nil {
		t.Error("Dense expanded 2^50 cells")
	}
}
