package stattest

import (
	"fmt"
	"math"
	"testing"

	"github.com/pramkit/pramkit/pkg/rng"
)

type recorder struct{ failed bool }

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) String() string        { return fmt.Sprint(r.failed) }

func TestChiSquareKnownValue(t *testing.T) {
	// Hand-computed: observed (10, 20, 30) against uniform: E = 20 each,
	// stat = (100 + 0 + 100)/20 = 10, df = 2, p = exp(-10/2) = 0.006738.
	stat, p, err := ChiSquare([]int64{10, 20, 30}, []float64{1. / 3, 1. / 3, 1. / 3})
	if err != nil || math.Abs(stat-10) > 1e-9 || math.Abs(p-math.Exp(-5)) > 1e-9 {
		t.Fatalf("stat %v p %v err %v", stat, p, err)
	}
}

func TestChecksRejectWrongDistributions(t *testing.T) {
	r := &recorder{}
	AssertChiSquare(r, "skewed", []int64{600, 400}, []float64{0.5, 0.5}, 1e-6)
	if !r.failed {
		t.Error("chi-square accepted 600/400 as fair")
	}
	r = &recorder{}
	AssertBinomial(r, "skewed", 600, 1000, 0.5, 1e-6)
	if !r.failed {
		t.Error("binomial accepted 600/1000 as fair")
	}
}

func TestChecksAcceptCorrectDistributions(t *testing.T) {
	g := rng.NewSeeded(1)
	counts := make([]int64, 6)
	for i := 0; i < 60000; i++ {
		counts[g.IntN(6)]++
	}
	// False-alarm probability 1e-6 per check.
	AssertChiSquare(t, "die", counts, []float64{1. / 6, 1. / 6, 1. / 6, 1. / 6, 1. / 6, 1. / 6}, 1e-6)
	AssertBinomial(t, "six", counts[5], 60000, 1./6, 1e-6)
	lo, hi := BinomialInterval(1000, 0.5, 0.05)
	if lo < 465 || lo > 470 || hi < 530 || hi > 535 {
		t.Errorf("95%% interval for Bin(1000, .5) = [%d, %d], want about [469, 531]", lo, hi)
	}
}
