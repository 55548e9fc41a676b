package codebook

import (
	"fmt"
	"math"
	"strings"
)

// labelList holds a column's labels in one string: label i is
// text[ends[i−1]:ends[i]] (ends[−1] = 0). A []string costs 16 bytes a
// label for its header plus a string allocated on its own (a size class,
// 16 bytes for most short labels), which the JSON decoder allocates one
// by one; here a label costs 4 bytes plus its bytes. At 300k labels of 7
// bytes: 3.3 MB instead of 9.6, kept for the whole run by every tool that
// holds the codebook (issue 11: anonymize's peak RSS at high cardinality).
// Label returns a substring of text, so reading a label never allocates.
type labelList struct {
	text string
	ends []uint32
}

// newLabelList stores labels, then extra, in order.
func newLabelList(labels []string, extra ...string) (labelList, error) {
	n := 0
	for _, l := range labels {
		n += len(l)
	}
	for _, l := range extra {
		n += len(l)
	}
	if n > math.MaxUint32 {
		return labelList{}, fmt.Errorf("labels of %d bytes in all, more than the limit of 4 GiB; bucket the column or leave it out", n)
	}
	var b strings.Builder
	b.Grow(n)
	ends := make([]uint32, 0, len(labels)+len(extra))
	for _, set := range [][]string{labels, extra} {
		for _, l := range set {
			b.WriteString(l)
			ends = append(ends, uint32(b.Len()))
		}
	}
	return labelList{text: b.String(), ends: ends}, nil
}

// len is the number of labels.
func (l *labelList) len() int { return len(l.ends) }

// at returns label i.
func (l *labelList) at(i int) string {
	lo := uint32(0)
	if i > 0 {
		lo = l.ends[i-1]
	}
	return l.text[lo:l.ends[i]]
}

// strings returns the labels as a slice (its strings share l's text).
func (l *labelList) strings() []string {
	ss := make([]string, l.len())
	for i := range ss {
		ss[i] = l.at(i)
	}
	return ss
}
