package stage

import (
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/table"
)

// DDPS (Lin–Wang–Rane's data-dependent privacy sampling, pkg/ddps) on Beam:
// "pramkit-beam perturb -- --mechanism ddps …", the bitflip pipeline
// (bitflip.go) with a row's two reports in place of its bits. Row r =
// (file, row number) draws them with the tool's ddps.Mechanism.Report from
// its own stream (tag "DDPS", r) of the run key, so a retried bundle
// redraws them; the rows are shuffled into shards by the order key
// PRF("BORD", r). The metadata is the tool's (DDPSRelease); a ddps release
// records no row count either, so estimate reads the shards as parts.

var tagDDPS = rng.Tag("DDPS") // the tool's tag for the reports

// ddpsSplit draws one split's reports: a row's two outputs packed in a
// word (round one in the high half).
func ddpsSplit(key []byte, meta map[string]string, shards int, sp anonSplit, emit func(int, bitBatch)) error {
	var md release.DDPS
	if err := md.Decode(table.Meta(meta), "the release metadata"); err != nil {
		return err
	}
	mech, err := md.Mechanism()
	if err != nil {
		return err
	}
	enc, err := md.Col.Encoder(codebook.Policy{})
	if err != nil {
		return err
	}
	// value[i] is codebook category i's true value: 0 for the
	// non-participant category, else its output 1..V.
	value := make([]int, md.Col.K())
	for i := range value {
		value[i] = md.Output(i)
	}
	keyed := rng.NewKeyed(rng.Key(key))
	var st rng.Stream
	r := rand.New(&st)
	keys := newRowKeys(keyed)
	batches := make([]bitBatch, shards)
	err = eachSplitBatch(sp, []string{md.Column}, func(vals []table.Values, m int, n int64) error {
		v := vals[0]
		for i := range m {
			x, err := enc.Index(v.String(i))
			if err != nil {
				return &table.DataError{File: sp.Split.Path, Row: n + 1, Column: md.Column, Err: err}
			}
			id := rowID(sp.File, n)
			keyed.Reset(&st, tagDDPS, id)
			one, two, err := mech.Report(r, value[x])
			if err != nil {
				return err
			}
			hi, lo, shard := keys.order(tagBitflipOrder, id, shards)
			b := &batches[shard]
			b.Hi, b.Lo, b.Bits = append(b.Hi, hi), append(b.Lo, lo), append(b.Bits, uint64(one)<<32|uint64(two))
			handFull(batches, shard, emit)
			n++
		}
		return nil
	})
	if err != nil {
		return err
	}
	handRest(batches, emit)
	return nil
}

// writeDDPSShard writes rows (sorted by order key) as shard i under dir:
// the two report columns over the labels ⊥0 (the none token), ⊥1..⊥V, as
// the tool writes them.
func writeDDPSShard(dir, ext string, i int, rows []bitRow, meta map[string]string, names []string) error {
	var md release.DDPS
	if err := md.Decode(table.Meta(meta), "the release metadata"); err != nil {
		return err
	}
	labs := make([]string, md.V+1)
	for o := range labs {
		labs[o] = md.Label(o)
	}
	labels := table.NewLabels(labs)
	schema := arrow.NewSchema([]arrow.Field{table.DictField(names[0]), table.DictField(names[1])}, nil)
	return writeBitRows(dir, ext, i, rows, schema, meta, func(part []bitRow) arrow.RecordBatch {
		one, two := make([]uint32, len(part)), make([]uint32, len(part))
		for r, row := range part {
			one[r], two[r] = uint32(row.Bits>>32), uint32(row.Bits)
		}
		return table.CodesBatch(schema, [][]uint32{one, two}, []*table.Labels{labels, labels}, len(part))
	})
}
