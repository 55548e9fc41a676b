package release

import (
	"fmt"
	"math"

	"github.com/pramkit/pramkit/pkg/table"
)

// Stages written in the "stage" metadata item.
const (
	StageSample  = "sample"
	StageEncrypt = "encrypt"
	StageKey     = table.StageKey // "key": table recognises key files by it
	StagePerturb = "perturb"
	StageDecrypt = "decrypt"
)

// Sample is what the sample stage records about the sampling and every
// later stage of the release pipeline carries: n rows in the table, m
// sampled, and the fingerprint of (secret, n, m).
type Sample struct {
	N, M        int64
	Fingerprint string
}

// Encode stores n, m and fingerprint.
func (s Sample) Encode(meta table.Meta) {
	meta.SetInt("n", s.N)
	meta.SetInt("m", s.M)
	meta["fingerprint"] = s.Fingerprint
}

// Decode reads n, m and fingerprint and checks 1 ≤ m ≤ n.
func (s *Sample) Decode(meta table.Meta, file string) error {
	f := newFields(meta, file, "re-create it with sample")
	s.decode(f)
	return f.err
}

func (s *Sample) decode(f *fields) {
	s.N, s.M = f.int("n"), f.int("m")
	s.Fingerprint = f.nonEmpty("fingerprint")
	if f.err != nil {
		return
	}
	switch {
	case s.N < 1:
		f.outOfRange("n", s.N, "a table has n ≥ 1 rows")
	case s.M < 1 || s.M > s.N:
		f.outOfRange("m", s.M, fmt.Sprintf("a sample needs 1 ≤ m ≤ n = %d", s.N))
	}
}

// Column describes one ciphertext column. The "columns" metadata item of
// encrypted tables, releases and key files is the JSON list of them in the
// table's column order.
type Column struct {
	Name string `json:"name"`
	// K is the alphabet size k_j: the codebook length of the column.
	K uint32 `json:"k"`
	// CodebookHash is the Hash of the column's one-column codebook.
	CodebookHash string `json:"codebook_hash"`
	// KeyID identifies the encrypt run (random, independent of the pads),
	// so that decrypt can tell the right key from a key of another run on
	// the same sample.
	KeyID string `json:"key_id"`
	// Pad is "otp" or "prf".
	Pad string `json:"pad"`
}

// Key is what identifies a key file (stage "key", written by encrypt
// --key-out): the sampling it was made for and, per column, the encrypt
// run (key_id), alphabet, pad kind and codebook hash.
type Key struct {
	Sample
	Columns []Column
}

// keyFix is what to do about a damaged key file.
const keyFix = "use the key file encrypt wrote with --key-out"

// Encode stores the key's identifying items.
func (k Key) Encode(meta table.Meta) error {
	meta["stage"] = StageKey
	k.Sample.Encode(meta)
	return meta.SetJSON("columns", k.Columns)
}

// Decode reads a key file's identifying items: stage "key", the sampling
// (1 ≤ m ≤ n), and at least one column, each with a name and a key id.
func (k *Key) Decode(meta table.Meta, file string) error {
	f := newFields(meta, file, keyFix)
	if st := f.str("stage"); f.err == nil && st != StageKey {
		f.failf("stage", "metadata %q = %q: not a key file (want %q)", "stage", st, StageKey)
	}
	k.Sample.decode(f)
	f.json("columns", &k.Columns)
	if f.err == nil && len(k.Columns) == 0 {
		f.failf("columns", "the metadata lists no columns")
	}
	for _, c := range k.Columns {
		if c.Name == "" || c.KeyID == "" {
			f.failf("columns", "metadata %q lists a column without a name or key_id", "columns")
		}
	}
	return f.err
}

// Match checks that the key belongs to the release rel (its sampling s and
// ciphertext columns cols): same n, m and fingerprint, and for each of the
// key's columns that the release has, the same key_id (encrypt run), k,
// pad kind and codebook hash. A key edited to claim the release's
// fingerprint still fails on key_id, which encrypt draws at random per run.
// The error names the item, both files and both values.
func (k *Key) Match(s Sample, cols []Column, keyFile, relFile string) error {
	differ := func(key string, kv, rv any, what string) error {
		return fmt.Errorf("%s: metadata %s = %v does not match %s's %v: %s; pass the key written when this release's columns were encrypted", keyFile, key, kv, relFile, rv, what)
	}
	switch {
	case k.Fingerprint != s.Fingerprint:
		return differ(`"fingerprint"`, fmt.Sprintf("%q", k.Fingerprint), fmt.Sprintf("%q", s.Fingerprint), "the key was made for another sampling")
	case k.N != s.N:
		return differ(`"n"`, k.N, s.N, "the key was made for another sampling")
	case k.M != s.M:
		return differ(`"m"`, k.M, s.M, "the key was made for another sampling")
	}
	byName := make(map[string]Column, len(cols))
	for _, c := range cols {
		byName[c.Name] = c
	}
	for _, kc := range k.Columns {
		rc, ok := byName[kc.Name]
		if !ok {
			continue
		}
		col := fmt.Sprintf("column %q", kc.Name)
		switch {
		case kc.KeyID != rc.KeyID:
			return differ(`"key_id" of `+col, fmt.Sprintf("%q", kc.KeyID), fmt.Sprintf("%q", rc.KeyID), "it is the key of another encrypt run")
		case kc.K != rc.K:
			return differ(`"k" of `+col, kc.K, rc.K, "it is the key of another encrypt run")
		case kc.Pad != rc.Pad:
			return differ(`"pad" of `+col, fmt.Sprintf("%q", kc.Pad), fmt.Sprintf("%q", rc.Pad), "it is the key of another encrypt run")
		case kc.CodebookHash != rc.CodebookHash:
			return differ(`"codebook_hash" of `+col, fmt.Sprintf("%q", kc.CodebookHash), fmt.Sprintf("%q", rc.CodebookHash), "the key was made with another codebook")
		}
	}
	return nil
}

// maxInt32 bounds counters stored as integers.
const maxInt32 = math.MaxInt32

// PriorityColumn is the last column of a sample written with
// --with-priority: each row's 128-bit sampling priority as 32 hex digits,
// which lets samples of disjoint shards merge into the sample of their
// union (sample --merge).
const PriorityColumn = "_priority"

// Metadata items of a sample written with --with-priority.
const (
	// KeyPriorityColumn names the priority column (PriorityColumn).
	KeyPriorityColumn = "priority_column"
	// KeySecretID is the public name of the sampling secret
	// (sample.SecretID), the same for every shard drawn under it.
	KeySecretID = "secret_id"
)

// Priorities is what a --with-priority sample records beyond Sample: its
// priority column and the secret-id.
type Priorities struct {
	Column   string
	SecretID string
}

// Encode stores the priority column and secret-id.
func (p Priorities) Encode(meta table.Meta) {
	meta[KeyPriorityColumn] = p.Column
	meta[KeySecretID] = p.SecretID
}

// Remove deletes the items Encode stores, for a sample written without
// priorities.
func (Priorities) Remove(meta table.Meta) {
	delete(meta, KeyPriorityColumn)
	delete(meta, KeySecretID)
}

// DecodePriorities reads the items; ok is false when meta has none (a
// sample written without --with-priority).
func DecodePriorities(meta table.Meta, file string) (p Priorities, ok bool, err error) {
	col, hasCol := meta[KeyPriorityColumn]
	id, hasID := meta[KeySecretID]
	if !hasCol && !hasID {
		return p, false, nil
	}
	if col == "" || id == "" {
		return p, false, fmt.Errorf("%s: metadata items %q and %q must both be set; re-create it with sample --with-priority", file, KeyPriorityColumn, KeySecretID)
	}
	return Priorities{Column: col, SecretID: id}, true, nil
}
