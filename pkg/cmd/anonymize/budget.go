package anonymize

import (
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/shuffle"
	"github.com/pramkit/pramkit/pkg/table"
)

// The shuffles' budget of a two-pass run (runDiverted, runAnatomy) gives
// way to the per-value state. Pass 2 holds, besides a fixed ~45 MB (the
// shuffle's rows, its spill buffers, the batches in flight), state that
// grows with the sensitive columns' distinct values V: the codebook, the
// counts and the dealers, about 60 to 90 bytes a value since 2026-11-28
// (130 and 155 under --grouping anatomy before). Up to stateRoom of it fits under divertedMemoryLimit next to
// the shuffle's default 16 MiB; past it, every byte of state takes one
// byte off the shuffles' budgets, down to minShuffleBudget, so that the
// live heap, and with it the peak RSS, stays flat in V until then.
//
// The budget is a function of the codebook sizes alone, never of the
// heap's measured state, so a seeded run stays reproducible. It changes
// only how much the shuffle holds before it spills and when it scatters
// a bucket again, never the law of its output: the uniformity argument
// of package shuffle holds for any budget (it uses only the uniform
// bucket draws and the in-memory Fisher–Yates). A seeded run's output is
// unchanged below stateRoom; above it, it differs from the default
// budget's only when the rows' spilling or re-scattering does.
const (
	// bytesPerValue is the per-value state counted against stateRoom:
	// a round figure of the 130–155 bytes measured when it was set, kept
	// (above today's) so that seeded runs past stateRoom stay as they were.
	bytesPerValue = 128
	// stateRoom is the per-value state the default budget leaves room
	// for: 128k values.
	stateRoom = 16 << 20
	// minShuffleBudget is the floor. At 4 MiB the spill files keep their
	// full 32 KiB write buffers (M/B ≥ 32 KiB with B = 128) and a bucket
	// is scattered again only past 512 MiB of rows (M·B), twice past
	// 64 GiB (M·B²): the shuffle's memory bound, in the package doc, is
	// the same, with M = 4 MiB.
	minShuffleBudget = 4 << 20
)

// shuffleBudget is the budget of each of the run's n shuffles when the
// sensitive columns have values[k] distinct values each (their codebook
// sizes): the default, less an equal share of the state past stateRoom.
func shuffleBudget(values []int, n int) int64 {
	var state int64
	for _, v := range values {
		state += int64(v) * bytesPerValue
	}
	excess := max(0, state-stateRoom)
	return max(minShuffleBudget, shuffle.DefaultBudget-excess/int64(n))
}

// codebookSizes is the distinct values of each sensitive column of g.
func (g *globalRun) codebookSizes() []int {
	v := make([]int, len(g.sens))
	for k, sv := range g.sens {
		v[k] = sv.col.K()
	}
	return v
}

// shuffled is o.Order.Writer with the shuffle's budget given: w itself
// under --keep-order, else w behind a shuffle drawing from r.
func (o *Options) shuffled(w table.Writer, schema *arrow.Schema, r *rand.Rand, budget int64, relabel func(int, arrow.Array) (arrow.Array, []int32)) (table.Writer, error) {
	if o.Order.Keep {
		return w, nil
	}
	return shuffle.NewWriter(w, schema, r, shuffle.Options{Budget: budget, Relabel: relabel})
}
