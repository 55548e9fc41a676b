package release

import (
	"fmt"
	"math"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/table"
)

// Stage and mechanisms of anonymize's publications.
const (
	StageAnonymize = "anonymize"
	// MechanismDiverted is Zhang et al.'s A′ (anonymize's default).
	MechanismDiverted = "diverted"
	// MechanismAnatomy is Xiao–Tao's Anatomy: a row table with group ids
	// and a separate sensitive ("groups") table.
	MechanismAnatomy = "anatomy"
	// TableAnatomyGroups is the "table" item of an Anatomy sensitive table.
	TableAnatomyGroups = "anatomy-groups"
)

// Items of anonymize's publications (besides stage, mechanism, codebook,
// insecure_seed, order).
const (
	KeyUnknown        = "unknown" // codebook.UnknownPolicy name
	KeyMissing        = "missing" // codebook.MissingPolicy name
	KeyRows           = "N"       // rows published
	KeyDropped        = "dropped"
	KeyMissingDropped = "missing_dropped"
	KeySensitive      = "sensitive" // JSON list of the sensitive columns
	KeyL              = "l"         // ℓ′
	KeyGroups         = "groups"
	KeyGroupColumn    = "group_column"
	KeyReleaseID      = "release_id"
	KeyGroupsTable    = "groups_table"
	KeyTable          = "table"
	// KeyGrouping says how A′'s (or Anatomy's) groups' value sets were
	// chosen: GroupingAnatomy or GroupingRandom. Files written before the
	// item have no other grouping than Anatomy's, which its absence means,
	// so adding it changed no item's meaning (no contract bump).
	KeyGrouping = "grouping"
)

// Groupings of the decoy groups (anonymize --grouping).
const (
	GroupingAnatomy = "anatomy" // the ℓ′ largest remaining values
	GroupingRandom  = "random"  // drawn in proportion to remaining counts
)

const anonymizeFix = "publish the original table again with anonymize"

// Anonymized is the metadata of an anonymize publication (A′, Anatomy's
// row table, or global randomization, whose keep probabilities Global
// adds): how anonymize read the original values, the sensitive columns
// and their codebook, the rows published and left out, ℓ′, and for
// Anatomy the group column and the id shared with its sensitive table.
type Anonymized struct {
	Mechanism string // MechanismDiverted, MechanismAnatomy or MechanismGlobal
	// Grouping is GroupingAnatomy or GroupingRandom for A′ and Anatomy
	// ("" is read as GroupingAnatomy), "" for global.
	Grouping string
	// Policy is how anonymize encoded the original values, so that
	// estimate --truth reads the original table the same way.
	Policy  codebook.Policy
	Rows    int64 // N, rows published
	Dropped int64 // rows left out to make the groups (A′, Anatomy)
	// MissingDropped counts rows left out for a missing sensitive value
	// (--missing drop); 0 is not recorded.
	MissingDropped int64
	Sensitive      []string
	// Codebook holds the sensitive columns' codebooks.
	Codebook *codebook.Codebook
	// L is ℓ′ ≥ 2; 0 for a global release whose p was given directly.
	L int
	// Anatomy only: the number of groups, the group column of the row
	// table, the random id shared with the sensitive table, and the
	// sensitive table's file name.
	Groups                              int
	GroupColumn, ReleaseID, GroupsTable string
}

// Encode stores the publication's items (stage "anonymize"), the
// codebook unless Codebook is nil (a writer then makes it: CodebookItem);
// a global release then adds Global's.
func (a Anonymized) Encode(meta table.Meta) error {
	meta[KeyStage] = StageAnonymize
	meta[KeyMechanism] = a.Mechanism
	meta[KeyUnknown] = a.Policy.Unknown.String()
	meta[KeyMissing] = a.Policy.Missing.String()
	meta.SetInt(KeyRows, a.Rows)
	meta.SetInt(KeyDropped, a.Dropped)
	delete(meta, KeyMissingDropped)
	if a.MissingDropped > 0 {
		meta.SetInt(KeyMissingDropped, a.MissingDropped)
	}
	if err := meta.SetJSON(KeySensitive, a.Sensitive); err != nil {
		return err
	}
	if a.Codebook != nil {
		if err := meta.SetJSON(KeyCodebook, a.Codebook); err != nil {
			return err
		}
	}
	delete(meta, KeyGrouping)
	if a.Mechanism == MechanismDiverted || a.Mechanism == MechanismAnatomy {
		meta[KeyGrouping] = GroupingAnatomy
		if a.Grouping != "" {
			meta[KeyGrouping] = a.Grouping
		}
	}
	delete(meta, KeyL)
	if a.L > 0 {
		meta.SetInt(KeyL, int64(a.L))
	}
	if a.Mechanism == MechanismAnatomy {
		meta.SetInt(KeyGroups, int64(a.Groups))
		meta[KeyGroupColumn] = a.GroupColumn
		meta[KeyReleaseID] = a.ReleaseID
		meta[KeyGroupsTable] = a.GroupsTable
	}
	return nil
}

// Decode reads an anonymize publication's items and checks them: a known
// mechanism, at least one sensitive column, each in the codebook of the
// metadata, known encoding policies, N ≥ 0 and dropped ≥ 0, ℓ′ ≥ 2
// (optional for global only), and for Anatomy one sensitive column, a
// group column, a release id and 1 ≤ groups with groups·ℓ′ ≤ N (each
// group holds at least ℓ′ rows with ℓ′ distinct values). Global's keep
// probabilities are Global.Decode's.
func (a *Anonymized) Decode(meta table.Meta, file string) error {
	f := newFields(meta, file, anonymizeFix)
	*a = Anonymized{}
	a.Mechanism = f.str(KeyMechanism)
	if f.err == nil && a.Mechanism != MechanismDiverted && a.Mechanism != MechanismAnatomy && a.Mechanism != MechanismGlobal {
		f.failf(KeyMechanism, "metadata %q = %q is not an anonymize mechanism (want %q, %q or %q)", KeyMechanism, a.Mechanism, MechanismDiverted, MechanismAnatomy, MechanismGlobal)
	}
	f.json(KeySensitive, &a.Sensitive)
	if f.err == nil && len(a.Sensitive) == 0 {
		f.failf(KeySensitive, "metadata %q names no sensitive column", KeySensitive)
	}
	cb := f.codebook(KeyCodebook)
	if f.err != nil {
		return f.err
	}
	for _, name := range a.Sensitive {
		if _, ok := cb.Column(name); !ok {
			f.failf(KeyCodebook, "the codebook in the metadata has no column %q", name)
			return f.err
		}
	}
	a.Codebook = cb
	if f.has(KeyUnknown) {
		if err := a.Policy.Unknown.Set(f.str(KeyUnknown)); err != nil {
			f.outOfRange(KeyUnknown, meta[KeyUnknown], err.Error())
		}
	}
	if f.has(KeyMissing) {
		if err := a.Policy.Missing.Set(f.str(KeyMissing)); err != nil {
			f.outOfRange(KeyMissing, meta[KeyMissing], err.Error())
		}
	}
	global := a.Mechanism == MechanismGlobal
	if !global {
		a.Grouping = GroupingAnatomy
		if f.has(KeyGrouping) {
			a.Grouping = f.str(KeyGrouping)
			if f.err == nil && a.Grouping != GroupingAnatomy && a.Grouping != GroupingRandom {
				f.outOfRange(KeyGrouping, a.Grouping, fmt.Sprintf("%q or %q", GroupingAnatomy, GroupingRandom))
			}
		}
	}
	if f.has(KeyL) || !global {
		l := f.int(KeyL)
		if f.err == nil && (l < 2 || l > maxInt32) {
			f.outOfRange(KeyL, l, "ℓ′ ≥ 2")
		}
		a.L = int(l)
	}
	if f.has(KeyRows) || !global {
		if a.Rows = f.int(KeyRows); f.err == nil && a.Rows < 0 {
			f.outOfRange(KeyRows, a.Rows, "a count of rows is ≥ 0")
		}
	}
	for _, c := range []struct {
		key string
		v   *int64
	}{{KeyDropped, &a.Dropped}, {KeyMissingDropped, &a.MissingDropped}} {
		if f.has(c.key) {
			if *c.v = f.int(c.key); f.err == nil && *c.v < 0 {
				f.outOfRange(c.key, *c.v, "a count of rows is ≥ 0")
			}
		}
	}
	if f.err != nil || a.Mechanism != MechanismAnatomy {
		return f.err
	}
	if len(a.Sensitive) != 1 {
		f.failf(KeySensitive, "an anatomy release has one sensitive column, metadata %q names %d", KeySensitive, len(a.Sensitive))
		return f.err
	}
	a.GroupColumn = f.nonEmpty(KeyGroupColumn)
	a.ReleaseID = f.nonEmpty(KeyReleaseID)
	a.GroupsTable = meta[KeyGroupsTable]
	g := f.int(KeyGroups)
	if f.err != nil {
		return f.err
	}
	switch {
	case g < 1 || g > math.MaxUint32:
		f.outOfRange(KeyGroups, g, "an anatomy release has 1 ≤ groups ≤ 2^32 − 1")
	case g*int64(a.L) > a.Rows:
		f.failf(KeyGroups, "metadata %q = %d groups of at least ℓ′ = %d rows do not fit in N = %d rows", KeyGroups, g, a.L, a.Rows)
	}
	a.Groups = int(g)
	return f.err
}

// AnatomyGroups is the metadata of an Anatomy sensitive table (the
// --groups file): the release id it shares with its row table, ℓ′, the
// number of groups, and the sensitive column with its codebook.
type AnatomyGroups struct {
	ReleaseID string
	L, Groups int
	Rows      int64 // N of the row table
	Sensitive []string
	Codebook  *codebook.Codebook
	// InsecureSeed: the row table was made with --insecure-seed.
	InsecureSeed bool
}

// GroupsTableMeta returns the metadata of the sensitive table of Anatomy release a.
func (a Anonymized) GroupsTableMeta(insecureSeed bool) AnatomyGroups {
	return AnatomyGroups{ReleaseID: a.ReleaseID, L: a.L, Groups: a.Groups, Rows: a.Rows, Sensitive: a.Sensitive, Codebook: a.Codebook, InsecureSeed: insecureSeed}
}

// Encode stores the sensitive table's items, the codebook unless
// Codebook is nil (a writer then makes it: CodebookItem).
func (g AnatomyGroups) Encode(meta table.Meta) error {
	meta[KeyStage] = StageAnonymize
	meta[KeyTable] = TableAnatomyGroups
	meta[KeyReleaseID] = g.ReleaseID
	meta.SetInt(KeyL, int64(g.L))
	meta.SetInt(KeyGroups, int64(g.Groups))
	meta.SetInt(KeyRows, g.Rows)
	if g.InsecureSeed {
		meta[KeyInsecureSeed] = "true"
	}
	if err := meta.SetJSON(KeySensitive, g.Sensitive); err != nil {
		return err
	}
	if g.Codebook == nil {
		return nil
	}
	return meta.SetJSON(KeyCodebook, g.Codebook)
}

// Decode reads a sensitive table's items: table "anatomy-groups", a
// release id, ℓ′ ≥ 2, groups ≥ 1, N ≥ groups·ℓ′, one sensitive column in
// the metadata's codebook.
func (g *AnatomyGroups) Decode(meta table.Meta, file string) error {
	return g.DecodeFor(meta, file, nil, "", false)
}

// DecodeFor is Decode for the sensitive table of a release whose codebook
// is cb, parsed from a text of digest sum (CodebookDigest): a table whose
// codebook item has that digest — or, when digested says that meta was
// read with table.ReadOptions.DigestMeta, is that digest — gets cb, not a
// second parse of the same text (22 MB at 2M labels, while the release's
// is held). A text read whole that merely is the digest (an edit) is
// parsed, and refused. With cb nil it is Decode.
func (g *AnatomyGroups) DecodeFor(meta table.Meta, file string, cb *codebook.Codebook, sum string, digested bool) error {
	item := meta[KeyCodebook]
	if same := sum != "" && (digested && item == sum || !digested && CodebookDigest(item) == sum); !same {
		cb = nil
	}
	f := newFields(meta, file, anonymizeFix)
	*g = AnatomyGroups{}
	if t := f.str(KeyTable); f.err == nil && t != TableAnatomyGroups {
		f.failf(KeyTable, "metadata %q = %q is not an anatomy sensitive table (want %q)", KeyTable, t, TableAnatomyGroups)
	}
	g.ReleaseID = f.nonEmpty(KeyReleaseID)
	l, groups, rows := f.int(KeyL), f.int(KeyGroups), f.int(KeyRows)
	f.json(KeySensitive, &g.Sensitive)
	if cb == nil {
		cb = f.codebook(KeyCodebook)
	}
	g.InsecureSeed = meta[KeyInsecureSeed] == "true"
	if f.err != nil {
		return f.err
	}
	switch {
	case l < 2 || l > maxInt32:
		f.outOfRange(KeyL, l, "ℓ′ ≥ 2")
	case groups < 1 || groups > math.MaxUint32:
		f.outOfRange(KeyGroups, groups, "an anatomy release has 1 ≤ groups ≤ 2^32 − 1")
	case groups*l > rows:
		f.failf(KeyGroups, "metadata %q = %d groups of at least ℓ′ = %d rows do not fit in N = %d rows", KeyGroups, groups, l, rows)
	case len(g.Sensitive) != 1:
		f.failf(KeySensitive, "an anatomy release has one sensitive column, metadata %q names %d", KeySensitive, len(g.Sensitive))
	}
	if f.err != nil {
		return f.err
	}
	g.L, g.Groups, g.Rows = int(l), int(groups), rows
	if _, ok := cb.Column(g.Sensitive[0]); !ok {
		f.failf(KeyCodebook, "the codebook in the metadata has no column %q", g.Sensitive[0])
		return f.err
	}
	g.Codebook = cb
	return nil
}
