package anonymize

import (
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/shuffle"
	"github.com/pramkit/pramkit/pkg/table"
)

// shuffleBudget is the budget of each shuffle of a two-pass run
// (runDiverted, runAnatomy): the rows a shuffle holds in memory before it
// spills, and while emitting, the buckets it decodes. It is the floor
// that package shuffle's memory bound allows without shrinking the spill
// files' 32 KiB write buffers (M/B ≥ 32 KiB with B = 128); a bucket is
// scattered again only past 512 MiB of rows (M·B), twice past 64 GiB
// (M·B²).
//
// It was shuffle.DefaultBudget (16 MiB) less the per-value state past
// 16 MiB of it. Those 16 MiB of rows were most of the live heap (31–37
// MiB while emitting a 10M-row table), so the heap sat at
// divertedMemoryLimit and on 2 cores the runtime returned freed pages to
// the system and faulted them in again all the time: 150–185 MB
// scavenged eagerly per run (GODEBUG=scavtrace=1; 4 MB on 1 core), 65k
// page faults against 22k, 2 s of system time against 0.7. At 4 MiB the
// bench's 10M-row run takes 4.5–4.7 s on 2 cores instead of 5.4–5.5
// (30k page faults, 1.1 s system), the same 7.2 s on 1 core, at the same
// 80 MB peak RSS. Runs with more than about 128k distinct sensitive
// values were at this budget already.
//
// The budget changes only how much a shuffle holds before it spills and
// when it scatters a bucket again, never the law of its output: the
// uniformity argument of package shuffle holds for any budget (it uses
// only the uniform bucket draws and the in-memory Fisher–Yates). A
// seeded run's output differs from the 16 MiB budget's only when the
// rows' spilling or re-scattering does.
const shuffleBudget = 4 << 20

// shuffled is o.Order.Writer with the shuffle's budget given: w itself
// under --keep-order, else w behind a shuffle drawing from r.
func (o *Options) shuffled(w table.Writer, schema *arrow.Schema, r *rand.Rand, budget int64, relabel func(int, arrow.Array) (arrow.Array, []int32)) (table.Writer, error) {
	if o.Order.Keep {
		return w, nil
	}
	return shuffle.NewWriter(w, schema, r, shuffle.Options{Budget: budget, Relabel: relabel})
}
