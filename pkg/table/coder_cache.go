package table

// labelCache remembers the codes of the text cells a Coder has coded, so
// that a CSV column (utf8, one string per cell) costs a cheap hash and one
// comparison per cell instead of a call to lookup — a Go map keyed by the
// label, whose string hashing was a fifth of encrypt's CPU on a CSV sample.
//
// It is an open-addressed table of labelSlots slots, probed linearly from
// a cheap hash of the label (slot). Only successful
// lookups are kept (lookup is pure, so a kept code is the code), at most
// maxCachedLabels of them: a column of many distinct values (an id read by
// mistake) falls back to lookup for the labels beyond, and errors are
// looked up afresh every time, as before.
type labelCache struct {
	slots [labelSlots]labelSlot
	n     int
}

// labelSlot is one slot: a label and its code, in one cache line.
type labelSlot struct {
	label string
	code  uint32
	used  bool
}

const (
	labelBits       = 10
	labelSlots      = 1 << labelBits
	maxCachedLabels = labelSlots / 2
	labelProbes     = 8
)

// slot is the first slot to probe for s: a multiply-xor mix of s's
// 8-byte words (of its first and last 4 bytes when shorter), cheaper than
// a general string hash on labels of a few bytes. A poor mix would only
// cost probes: get compares the label itself.
func (c *labelCache) slot(s string) uint32 {
	n := len(s)
	h := uint64(n) * 0x9e3779b97f4a7c15
	switch {
	case n >= 8:
		for i := 0; i+8 < n; i += 8 {
			h = (h ^ le64(s[i:])) * 0xbf58476d1ce4e5b9
		}
		h = (h ^ le64(s[n-8:])) * 0x94d049bb133111eb
	case n >= 4:
		h = (h ^ (uint64(le32(s))<<32 | uint64(le32(s[n-4:])))) * 0x94d049bb133111eb
	case n > 0:
		h = (h ^ (uint64(s[0])<<16 | uint64(s[n>>1])<<8 | uint64(s[n-1]))) * 0x94d049bb133111eb
	}
	return uint32(h >> (64 - labelBits)) // a product's top bits depend on all of its input
}

func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func le32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// get returns the code kept for s.
func (c *labelCache) get(s string) (uint32, bool) {
	h := c.slot(s)
	for p := range uint32(labelProbes) {
		e := &c.slots[(h+p)&(labelSlots-1)]
		if e.label == s && e.used {
			return e.code, true
		}
		if !e.used {
			return 0, false
		}
	}
	return 0, false
}

// put keeps s's code, if there is room. s is copied: it points into a
// batch's buffer, which is reused or freed after the batch.
func (c *labelCache) put(s string, code uint32) {
	if c.n >= maxCachedLabels {
		return
	}
	h := c.slot(s)
	for p := range uint32(labelProbes) {
		e := &c.slots[(h+p)&(labelSlots-1)]
		if !e.used {
			*e = labelSlot{label: string([]byte(s)), code: code, used: true}
			c.n++
			return
		}
	}
}

// text codes s through the cache, looking it up (and keeping its code)
// when it is not there yet.
func (c *Coder) text(s string) (uint32, error) {
	if c.cache == nil {
		c.cache = new(labelCache)
	}
	if code, ok := c.cache.get(s); ok {
		return code, nil
	}
	code, err := c.lookup(s)
	if err == nil {
		c.cache.put(s, code)
	}
	return code, err
}
