package codebook

import (
	"fmt"
	"math"
	"slices"
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
	var b labelBuilder
	b.grow(len(labels)+len(extra), n)
	for _, set := range [][]string{labels, extra} {
		for _, l := range set {
			b.add(l)
		}
	}
	return b.list()
}

// labelBuilder appends labels to a labelList one at a time: the parser
// stores a file's categories in it as it decodes them, so that a list of
// 1M categories is never a []string (16 bytes a label plus each decoded
// string, 30 MB at 1M labels, live together with the codebook's text
// while decrypt opens a key file: issue 11, peak RSS ≤ 100 MB).
type labelBuilder struct {
	text  strings.Builder
	offs  []int32 // offsets of the labels stored, from 0
	n     int     // labels added
	bytes int     // their bytes in all, even past the limit (list refuses them)
}

// grow makes room for n more labels of size bytes in all.
func (b *labelBuilder) grow(n, size int) {
	if b.offs == nil {
		b.offs = make([]int32, 1, 1+n)
	} else {
		b.offs = slices.Grow(b.offs, n)
	}
	if size <= math.MaxInt32 {
		b.text.Grow(size)
	}
}

// add appends label l.
func (b *labelBuilder) add(l string) {
	if b.offs == nil {
		b.offs = []int32{0}
	}
	b.n++
	b.bytes += len(l)
	if b.bytes > math.MaxInt32 {
		return // list reports it; at sees the labels stored before
	}
	b.text.WriteString(l)
	b.offs = append(b.offs, int32(b.bytes))
}

// len is the number of labels added.
func (b *labelBuilder) len() int { return b.n }

// stored is the number of labels at can return: all of them unless they
// passed the 2 GiB limit.
func (b *labelBuilder) stored() int { return max(len(b.offs)-1, 0) }

// at returns label i (i < stored()).
func (b *labelBuilder) at(i int) string {
	return b.text.String()[b.offs[i]:b.offs[i+1]]
}

// list returns the labels added, sharing the builder's memory: add no
// more labels after it.
func (b *labelBuilder) list() (labelList, error) {
	if b.bytes > math.MaxInt32 {
		return labelList{}, fmt.Errorf("labels of %d bytes in all, more than the limit of 2 GiB; bucket the column or leave it out", b.bytes)
	}
	if b.offs == nil {
		b.offs = []int32{0}
	}
	return labelList{text: b.text.String(), offs: b.offs}, nil
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
