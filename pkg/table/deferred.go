package table

import (
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// Deferred is a metadata item whose value a writer makes only when it
// writes its metadata: when it commits a Parquet file (the footer) or a
// CSV file (its sidecar), at once for an Arrow stream or a table on
// standard output, whose metadata comes first. The file holds the same
// bytes as with the item in Create's Meta.
//
// Why: a release's codebook is its largest item, 20 MB of JSON at 2M
// labels, made at the start and held while every row streams, on top of
// the parsed codebook (33 MB) and the streaming state: encrypt's key
// file and anonymize's Parquet output peaked at 119 and 141 MB of RSS
// (issue 11: ≤ 100 MB at any cardinality). The footer and the sidecar
// take the value a piece at a time, so it is never held whole there
// either (encrypt's peak at 2M labels had come to be the key's codebook
// made at commit). A large Parquet item is given twice: measured at
// Create, then written for the footer.
type Deferred struct {
	Key string
	// Write gives the value to emit a piece at a time, the same pieces
	// at every call: a writer may call it to measure the value (a
	// Parquet item's length comes before its bytes) and then to write
	// it. emit keeps no piece; Write returns its error.
	Write func(emit func([]byte) error) error
}

// Value makes d's whole value.
func (d Deferred) Value() (string, error) {
	n, err := d.size()
	if err != nil {
		return "", err
	}
	return d.valueOf(n)
}

// valueOf makes d's whole value, of n bytes (size).
func (d Deferred) valueOf(n int) (string, error) {
	var b strings.Builder
	b.Grow(n)
	err := d.Write(func(p []byte) error {
		b.Write(p)
		return nil
	})
	return b.String(), err
}

// size is the length of d's value in bytes.
func (d Deferred) size() (int, error) {
	n := 0
	err := d.Write(func(p []byte) error {
		n += len(p)
		return nil
	})
	return n, err
}

// lateItems are the items a Parquet file makes for its footer, and the
// bytes of their keys and values, which count towards storedSchemaMeta.
type lateItems struct {
	d     []Deferred
	sizes []int // each value's bytes, measured by deferLarge
	size  int
}

// sizedItem is a Deferred whose value is n bytes.
type sizedItem struct {
	Deferred
	n int
}

// deferLarge sorts d for a Parquet file: items of at most storedSchemaMeta
// bytes go into meta (a copy, when there are any), the others stay
// deferred, their size recorded: the stored schema carries no metadata
// when an item is that large, so the file's bytes are those of one
// written with every item in meta.
func deferLarge(meta Meta, d []Deferred) (Meta, lateItems, error) {
	var later lateItems
	copied := false
	for _, item := range d {
		size, err := item.size()
		if err != nil {
			return nil, lateItems{}, err
		}
		if n := len(MetaPrefix) + len(item.Key) + size; n > storedSchemaMeta {
			later.d = append(later.d, item)
			later.sizes = append(later.sizes, size)
			later.size += n
			continue
		}
		v, err := item.valueOf(size)
		if err != nil {
			return nil, lateItems{}, err
		}
		if !copied {
			meta, copied = meta.Clone(), true
		}
		meta[item.Key] = v
	}
	return meta, later, nil
}

// withDeferred is meta (a copy, when d has items) with d's values made.
func withDeferred(meta Meta, d []Deferred) (Meta, error) {
	if len(d) == 0 {
		return meta, nil
	}
	meta = meta.Clone()
	for _, item := range d {
		v, err := item.Value()
		if err != nil {
			return nil, err
		}
		meta[item.Key] = v
	}
	return meta, nil
}

// keyValuesWith is a file's key-value items (fileKeyValues: other tools'
// items, the pramkit items sorted by key, ARROW:schema last) with the
// items of later put in their places among the pramkit items, as
// fileKeyValues would have put them: each with an empty value, to be
// written from the item the returned map gives for its key
// (footerSplice).
func keyValuesWith(kv metadata.KeyValueMetadata, later lateItems) (metadata.KeyValueMetadata, map[string]sizedItem) {
	if len(later.d) == 0 {
		return kv, nil
	}
	made := make(map[string]sizedItem, len(later.d))
	keys := make([]string, 0, len(later.d))
	for i, item := range later.d {
		k := MetaPrefix + item.Key
		made[k] = sizedItem{item, later.sizes[i]}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(metadata.KeyValueMetadata, 0, len(kv)+len(keys))
	for i, e := range kv {
		last := i == len(kv)-1 // ARROW:schema
		_, ours := metaKey(e.GetKey())
		for len(keys) > 0 && (last || ours && e.GetKey() > keys[0]) {
			out.Append(keys[0], "")
			keys = keys[1:]
		}
		out = append(out, e)
	}
	for _, k := range keys {
		out.Append(k, "")
	}
	return out, made
}
