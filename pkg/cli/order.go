package cli

import (
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/shuffle"
	"github.com/pramkit/pramkit/pkg/table"
)

// Order holds --keep-order of the commands that publish rows. A published
// table is shuffled by default: rows randomized one by one but published in
// the input's order leak their true values through their neighbours when
// the input is sorted or grouped by a sensitive column (see package
// shuffle).
type Order struct {
	Keep bool
	// Budget is the shuffle's memory budget (shuffle.Options.Budget), 0
	// for its default: a stage that holds a large codebook gives the
	// shuffle less.
	Budget int64
}

// AddOrderFlag registers --keep-order with help that says when it is safe.
func AddOrderFlag(cmd *cobra.Command, o *Order) {
	cmd.Flags().BoolVar(&o.Keep, "keep-order", false, "keep the input's row order: safe only when the input's order carries no information about the sensitive values, e.g. it was already shuffled or is ordered by a random id; otherwise neighbours reveal values")
}

// Record writes the order into a publication's metadata: order "shuffled"
// or "input".
func (o Order) Record(meta table.Meta) {
	meta[release.KeyOrder] = release.OrderShuffled
	if o.Keep {
		meta[release.KeyOrder] = release.OrderInput
	}
}

// Writer returns w itself under --keep-order, else w behind a shuffle in
// bounded memory that draws from r (the run's source, so that --seed
// reproduces the order).
func (o Order) Writer(w table.Writer, schema *arrow.Schema, r *rand.Rand) (table.Writer, error) {
	if o.Keep {
		return w, nil
	}
	return shuffle.NewWriter(w, schema, r, shuffle.Options{Budget: o.Budget})
}

// BitsWriter is Writer for a table whose columns are all int32 0/1
// (bitflip's reports): the shuffle then holds and spills each row as
// packed bits (shuffle.Options.Bits), several times cheaper.
func (o Order) BitsWriter(w table.Writer, schema *arrow.Schema, r *rand.Rand) (table.Writer, error) {
	if o.Keep {
		return w, nil
	}
	return shuffle.NewWriter(w, schema, r, shuffle.Options{Bits: true})
}
