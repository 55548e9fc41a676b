package stage

import (
	"encoding/binary"

	"github.com/pramkit/pramkit/pkg/rng"
)

// rowKeys computes rows' 128-bit keys PRF_K(tag, row) under the run's key
// K: the keys by which the per-row stages order, drop and number rows. It
// keeps one scratch block, since Keyed.Block's destination escapes to the
// heap (an interface call to AES): one allocation a split, not one a row.
type rowKeys struct {
	keyed *rng.Keyed
	blk   [16]byte
}

func newRowKeys(keyed *rng.Keyed) *rowKeys { return &rowKeys{keyed: keyed} }

// block is PRF_K(tag, id) as its big-endian halves (hi, lo).
func (k *rowKeys) block(tag uint32, id uint64) (hi, lo uint64) {
	k.keyed.Block(&k.blk, tag, 0, id)
	return binary.BigEndian.Uint64(k.blk[:8]), binary.BigEndian.Uint64(k.blk[8:])
}

// order is row id's order key (hi, lo) = PRF_K(tag, id) and the output
// shard it goes to, shardOf(hi): the per-row stages (A′, global, bitflip,
// ddps) send each row there and write it at its rank by (hi, lo), so the
// published order is a keyed shuffle (bitflip.go).
func (k *rowKeys) order(tag uint32, id uint64, shards int) (hi, lo uint64, shard int) {
	hi, lo = k.block(tag, id)
	return hi, lo, shardOf(hi, shards)
}

// shardOf is the output shard of the row whose order key starts with hi:
// hi mod shards. The keys are i.i.d. uniform, so every shard receives a
// uniform share of the rows, in a uniformly random order of its own.
func shardOf(hi uint64, shards int) int { return int(hi % uint64(shards)) }
