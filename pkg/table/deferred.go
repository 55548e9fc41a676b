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
// (issue 11: ≤ 100 MB at any cardinality). Value is called at most twice
// for a Parquet file (once at Create, to learn whether the item is small
// enough to stay in the stored Arrow schema, see storedSchemaMeta), and
// its result is not kept.
type Deferred struct {
	Key   string
	Value func() string
}

// lateItems are the items a Parquet file makes for its footer, and the
// bytes of their keys and values, which count towards storedSchemaMeta.
type lateItems struct {
	d    []Deferred
	size int
}

// deferLarge sorts d for a Parquet file: items of at most storedSchemaMeta
// bytes go into meta (a copy, when there are any), the others stay
// deferred, their size recorded: the stored schema carries no metadata
// when an item is that large, so the file's bytes are those of one
// written with every item in meta.
func deferLarge(meta Meta, d []Deferred) (Meta, lateItems) {
	var later lateItems
	copied := false
	for _, item := range d {
		v := item.Value()
		if n := len(MetaPrefix) + len(item.Key) + len(v); n > storedSchemaMeta {
			later.d = append(later.d, item)
			later.size += n
			continue
		}
		if !copied {
			meta, copied = meta.Clone(), true
		}
		meta[item.Key] = v
	}
	return meta, later
}

// withDeferred is meta (a copy, when d has items) with d's values made.
func withDeferred(meta Meta, d []Deferred) Meta {
	if len(d) == 0 {
		return meta
	}
	meta = meta.Clone()
	for _, item := range d {
		meta[item.Key] = item.Value()
	}
	return meta
}

// keyValuesWith is a file's key-value items (fileKeyValues: other tools'
// items, the pramkit items sorted by key, ARROW:schema last) with d's
// items made and put in their places among the pramkit items, as
// fileKeyValues would have put them.
func keyValuesWith(kv metadata.KeyValueMetadata, d []Deferred) metadata.KeyValueMetadata {
	if len(d) == 0 {
		return kv
	}
	items := make([]struct{ k, v string }, len(d))
	for i, item := range d {
		items[i].k, items[i].v = MetaPrefix+item.Key, item.Value()
	}
	slices.SortFunc(items, func(a, b struct{ k, v string }) int { return strings.Compare(a.k, b.k) })
	out := make(metadata.KeyValueMetadata, 0, len(kv)+len(items))
	for i, e := range kv {
		last := i == len(kv)-1 // ARROW:schema
		_, ours := metaKey(e.GetKey())
		for len(items) > 0 && (last || ours && e.GetKey() > items[0].k) {
			out.Append(items[0].k, items[0].v)
			items = items[1:]
		}
		out = append(out, e)
	}
	for _, it := range items {
		out.Append(it.k, it.v)
	}
	return out
}
