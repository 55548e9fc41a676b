package codebook

import (
	"fmt"
	"math"
	"strings"
)

// labelList holds a column's labels in one string: label i is
// text[offs[i]:offs[i+1]], the layout of an Arrow string array, which
// can therefore share it (Column.Dictionary). A []string costs 16 bytes
// a label for its header plus a string allocated on its own (a size
// class, 16 bytes for most short labels), which the JSON decoder
// allocates one by one; here a label costs 4 bytes plus its bytes. At
// 300k labels of 7 bytes: 3.3 MB instead of 9.6, kept for the whole run
// by every tool that holds the codebook (issue 11: anonymize's peak RSS
// at high cardinality). Label returns a substring of text, so reading a
// label never allocates.
type labelList struct {
	text string
	offs []int32 // n+1 offsets, from 0
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
	if n > math.MaxInt32 {
		return labelList{}, fmt.Errorf("labels of %d bytes in all, more than the limit of 2 GiB; bucket the column or leave it out", n)
	}
	var b strings.Builder
	b.Grow(n)
	offs := make([]int32, 1, 1+len(labels)+len(extra))
	for _, set := range [][]string{labels, extra} {
		for _, l := range set {
			b.WriteString(l)
			offs = append(offs, int32(b.Len()))
		}
	}
	return labelList{text: b.String(), offs: offs}, nil
}

// len is the number of labels.
func (l *labelList) len() int { return len(l.offs) - 1 }

// at returns label i.
func (l *labelList) at(i int) string { return l.text[l.offs[i]:l.offs[i+1]] }

// strings returns the labels as a slice (its strings share l's text).
func (l *labelList) strings() []string {
	ss := make([]string, l.len())
	for i := range ss {
		ss[i] = l.at(i)
	}
	return ss
}
