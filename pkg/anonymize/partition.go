package anonymize

import (
	"errors"
	"fmt"
	"slices"
)

// Partition is a set of decoy groups (A′ step 2, §4.1): groups of exactly ℓ′
// rows holding ℓ′ distinct sensitive values, covering every kept row once.
type Partition struct {
	// L is ℓ′, the group size.
	L int
	// N is the number of input rows, dropped ones included.
	N int
	// Members holds the input rows of every group: group g is
	// Members[g·L : (g+1)·L], one row per distinct value.
	Members []uint32
	// Dropped lists the N mod ℓ′ input rows left out, ascending: the rows
	// with the largest ids, hence a uniformly random choice when the ids are.
	Dropped []uint32
}

// Groups returns the number of decoy groups, (N − N mod ℓ′)/ℓ′.
func (p *Partition) Groups() int { return len(p.Members) / p.L }

// Group returns the input rows of decoy group g (a view, not a copy).
func (p *Partition) Group(g int) []uint32 { return p.Members[g*p.L : (g+1)*p.L] }

// NewPartition splits the rows of sensitive column s (value indexes < v)
// into decoy groups of ℓ′ = l rows with l distinct values, deterministically
// given the (id, S) projection: the same (ids[row], s[row]) pairs in any row
// order give the same groups of ids. ids must be a permutation of 0..N−1
// (see AssignIDs).
//
// The N mod ℓ′ rows with the largest ids are dropped first. The column must
// be eligible (CheckEligible, checked on all N rows; the drop cannot break
// it). The rest is grouped by Anatomy's group creation (Xiao and Tao 2006, as
// adopted in the paper's §9): rows are hashed into one bucket per value, each
// bucket in increasing id order; while rows remain, the ℓ′ currently largest
// buckets (ties: smaller value index first) each give their smallest-id row
// to a new group. Eligibility makes this always succeed without leftovers:
// with n groups still to form, every bucket holds ≤ n rows and the buckets
// holding exactly n (at most ℓ′ of them, since the total is nℓ′) are all
// among the ℓ′ taken, so after the step every bucket holds ≤ n−1 and at
// least ℓ′ buckets are non-empty while rows remain.
//
// Cost: O(N + V log V + (N/ℓ′)·V) time, that is O(N(1 + V/ℓ′)): the buckets
// are kept sorted by size, and after each group the ℓ′ decremented buckets
// are merged back into the untouched sorted rest in O(V), a step skipped
// when the order still holds. Memory: 8 bytes per row beyond the caller's
// ids (4 bytes/row for the id → row table, later reused as Members, and 4
// bytes/row for the buckets, released on return), plus O(V).
func NewPartition(ids, s []uint32, v, l int) (*Partition, error) {
	n := len(s)
	if len(ids) != n {
		return nil, fmt.Errorf("anonymize.NewPartition: %d ids for %d rows", len(ids), n)
	}
	if int64(n) > MaxRows {
		return nil, fmt.Errorf("anonymize.NewPartition: %d rows, more than %d", n, int64(MaxRows))
	}
	counts, err := countValues(s, v)
	if err != nil {
		return nil, fmt.Errorf("anonymize.NewPartition: %w", err)
	}
	if err := eligible(counts, l); err != nil {
		return nil, fmt.Errorf("anonymize.NewPartition: %w", err)
	}
	rowOfID := make([]uint32, n)
	for i := range rowOfID {
		rowOfID[i] = NotPublished
	}
	for row, id := range ids {
		if int64(id) >= int64(n) || rowOfID[id] != NotPublished {
			return nil, fmt.Errorf("anonymize.NewPartition: ids are not a permutation of 0..%d (id %d at row %d)", n-1, id, row)
		}
		rowOfID[id] = uint32(row)
	}
	keep := n - DropCount(n, l)
	dropped := slices.Clone(rowOfID[keep:])
	slices.Sort(dropped)
	members, err := groupRows(rowOfID[:keep], s, v, l)
	if err != nil {
		return nil, fmt.Errorf("anonymize.NewPartition: %w", err)
	}
	return &Partition{L: l, N: n, Members: members, Dropped: dropped}, nil
}

// errGrouping reports a broken invariant of the group creation; eligibility
// rules it out (see NewPartition), so it signals a bug.
var errGrouping = errors.New("internal error: fewer than ℓ′ non-empty buckets left")

// groupRows runs Anatomy's group creation on the rows listed in id order
// (byID[i] = row holding the i-th smallest id; len(byID) a multiple of l,
// the column eligible). It overwrites byID with the group members and
// returns it.
func groupRows(byID []uint32, s []uint32, v, l int) ([]uint32, error) {
	// Bucket rows by value (a counting sort: stable, so each bucket stays in
	// id order and "smallest id" is simply the bucket's next row).
	cnt := make([]int64, v)
	for _, row := range byID {
		cnt[s[row]]++
	}
	head := make([]int, v) // next unused position of each bucket
	for val, pos := 1, 0; val < v; val++ {
		pos += int(cnt[val-1])
		head[val] = pos
	}
	bucket := make([]uint32, len(byID))
	fill := slices.Clone(head)
	for _, row := range byID {
		x := s[row]
		bucket[fill[x]] = row
		fill[x]++
	}
	fill = nil

	less := func(a, b uint32) bool { // bucket a ranks before bucket b
		return cnt[a] > cnt[b] || (cnt[a] == cnt[b] && a < b)
	}
	order := make([]uint32, 0, v) // non-empty buckets, largest first
	for val, c := range cnt {
		if c > 0 {
			order = append(order, uint32(val))
		}
	}
	slices.SortFunc(order, func(a, b uint32) int {
		if less(a, b) {
			return -1
		}
		if less(b, a) {
			return 1
		}
		return 0
	})
	tmp := make([]uint32, len(order))

	members := byID // reused: group creation reads only the buckets now
	for base := 0; base < len(members); base += l {
		if len(order) < l {
			return nil, errGrouping
		}
		for i, val := range order[:l] {
			members[base+i] = bucket[head[val]]
			head[val]++
			cnt[val]--
		}
		// order[:l] went down by one each and stays sorted within itself;
		// order[l:] is untouched. Merge the two runs if they now overlap.
		if len(order) > l && less(order[l], order[l-1]) {
			a, b, k := 0, l, 0
			for a < l && b < len(order) {
				if less(order[b], order[a]) {
					tmp[k] = order[b]
					b++
				} else {
					tmp[k] = order[a]
					a++
				}
				k++
			}
			k += copy(tmp[k:], order[a:l])
			copy(tmp[k:], order[b:])
			copy(order, tmp[:len(order)])
		}
		for len(order) > 0 && cnt[order[len(order)-1]] == 0 {
			order = order[:len(order)-1]
		}
	}
	return members, nil
}
