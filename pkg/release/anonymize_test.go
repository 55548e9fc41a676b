package release

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/table"
)

func anonCodebook(t *testing.T) *codebook.Codebook {
	t.Helper()
	cb, err := codebook.Parse([]byte(`{"columns":[{"name":"disease","categories":["flu","cold","cancer"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return cb
}

// sameAnonymized compares a and b, codebooks by their metadata form.
func sameAnonymized(t *testing.T, got, want Anonymized) bool {
	t.Helper()
	g, _ := json.Marshal(got.Codebook)
	w, _ := json.Marshal(want.Codebook)
	got.Codebook, want.Codebook = nil, nil
	return string(g) == string(w) && reflect.DeepEqual(got, want)
}

func anatomyHonest(t *testing.T) (Anonymized, table.Meta) {
	t.Helper()
	a := Anonymized{Mechanism: MechanismAnatomy, Policy: codebook.Policy{Unknown: codebook.UnknownMissing, Missing: codebook.MissingDrop},
		Rows: 12, Dropped: 1, MissingDropped: 2, Sensitive: []string{"disease"}, Codebook: anonCodebook(t), L: 3,
		Groups: 4, GroupColumn: "gid", ReleaseID: "r1", GroupsTable: "g.csv", Grouping: GroupingAnatomy}
	meta := table.Meta{}
	if err := a.Encode(meta); err != nil {
		t.Fatal(err)
	}
	return a, meta
}

func TestAnonymizedRoundTrip(t *testing.T) {
	anat, _ := anatomyHonest(t)
	div := anat
	div.Mechanism, div.Groups, div.GroupColumn, div.ReleaseID, div.GroupsTable, div.MissingDropped = MechanismDiverted, 0, "", "", "", 0
	div.Grouping = GroupingRandom
	glob := Anonymized{Mechanism: MechanismGlobal, Sensitive: []string{"disease"}, Codebook: anonCodebook(t)}
	for _, want := range []Anonymized{anat, div, glob} {
		meta := table.Meta{}
		if err := want.Encode(meta); err != nil {
			t.Fatal(err)
		}
		var got Anonymized
		if err := got.Decode(meta, "r.csv"); err != nil || !sameAnonymized(t, got, want) {
			t.Errorf("%s: got %+v, %v; want %+v (meta %v)", want.Mechanism, got, err, want, meta)
		}
	}
	_, meta := anatomyHonest(t)
	checkEdits(t, meta, func() decoder { return new(Anonymized) }, []edit{
		{"mechanism", set("mechanism", "gamma-diagonal"), `metadata "mechanism" = "gamma-diagonal" is not an anonymize mechanism`},
		{"grouping", set("grouping", "greedy"), `metadata "grouping" = greedy is out of range: "anatomy" or "random"`},
		{"no sensitive", set("sensitive", "[]"), `names no sensitive column`},
		{"two sensitive", set("sensitive", `["disease","disease"]`), `an anatomy release has one sensitive column, metadata "sensitive" names 2; the file was edited or damaged — publish the original table again with anonymize$`},
		{"sensitive not in codebook", set("sensitive", `["age"]`), `the codebook in the metadata has no column "age"`},
		{"bad codebook", set("codebook", "{"), `the codebook in the metadata is not valid`},
		{"policy", set("missing", "maybe"), `metadata "missing" = maybe is out of range`},
		{"l one", set("l", "1"), `metadata "l" = 1 is out of range: ℓ′ ≥ 2`},
		{"l missing", del("l"), `no "l" in the metadata`},
		{"N negative", set("N", "-1"), `metadata "N" = -1 is out of range`},
		{"dropped negative", set("dropped", "-3"), `metadata "dropped" = -3 is out of range`},
		{"groups zero", set("groups", "0"), `metadata "groups" = 0 is out of range`},
		{"groups too many", set("groups", "5"), `metadata "groups" = 5 groups of at least ℓ′ = 3 rows do not fit in N = 12 rows`},
		{"no release id", set("release_id", ""), `metadata "release_id" is empty`},
		{"no group column", del("group_column"), `no "group_column" in the metadata`},
		{"groups table name", del("groups_table"), ""},
	})
}

func TestAnatomyGroupsRoundTrip(t *testing.T) {
	a, _ := anatomyHonest(t)
	for _, insecure := range []bool{false, true} {
		want := a.GroupsTableMeta(insecure)
		meta := table.Meta{}
		if err := want.Encode(meta); err != nil {
			t.Fatal(err)
		}
		var got AnatomyGroups
		err := got.Decode(meta, "g.csv")
		gc, _ := json.Marshal(got.Codebook)
		wc, _ := json.Marshal(want.Codebook)
		got.Codebook, want.Codebook = nil, nil
		if err != nil || string(gc) != string(wc) || !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v, %v; want %+v", got, err, want)
		}
	}
	meta := table.Meta{}
	if err := a.GroupsTableMeta(false).Encode(meta); err != nil {
		t.Fatal(err)
	}
	checkEdits(t, meta, func() decoder { return new(AnatomyGroups) }, []edit{
		{"not a groups table", set("table", "rows"), `metadata "table" = "rows" is not an anatomy sensitive table`},
		{"groups too many", set("groups", "9"), `metadata "groups" = 9 groups of at least ℓ′ = 3 rows do not fit in N = 12 rows`},
		{"l one", set("l", "1"), `metadata "l" = 1 is out of range`},
		{"no release id", del("release_id"), `no "release_id" in the metadata`},
		{"sensitive not in codebook", set("sensitive", `["age"]`), `the codebook in the metadata has no column "age"`},
	})
}

// TestAnonymizedWithoutGroupingIsAnatomy: a release written before the
// grouping item reads as Anatomy's grouping, the only one there was; a
// global release has none.
func TestAnonymizedWithoutGroupingIsAnatomy(t *testing.T) {
	_, meta := anatomyHonest(t)
	meta[KeyMechanism] = MechanismDiverted
	meta[KeyGrouping] = GroupingRandom
	var a Anonymized
	if err := a.Decode(meta, "r.csv"); err != nil || a.Grouping != GroupingRandom {
		t.Fatalf("grouping %q, %v; want random", a.Grouping, err)
	}
	delete(meta, KeyGrouping)
	if err := a.Decode(meta, "r.csv"); err != nil || a.Grouping != GroupingAnatomy {
		t.Fatalf("without the item: grouping %q, %v; want anatomy", a.Grouping, err)
	}
	glob := Anonymized{Mechanism: MechanismGlobal, Sensitive: []string{"disease"}, Codebook: anonCodebook(t), Grouping: GroupingRandom}
	m := table.Meta{}
	if err := glob.Encode(m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m[KeyGrouping]; ok {
		t.Fatalf("a global release records a grouping: %v", m)
	}
}

// TestAnatomyGroupsDecodeForReusesTheReleasesCodebook: DecodeFor takes the
// release's parsed codebook when the table's codebook item has the
// release's digest, parses the item otherwise (another text, no digest),
// and checks the rest as Decode does.
func TestAnatomyGroupsDecodeForReusesTheReleasesCodebook(t *testing.T) {
	a, _ := anatomyHonest(t)
	meta := table.Meta{}
	if err := a.GroupsTableMeta(false).Encode(meta); err != nil {
		t.Fatal(err)
	}
	var parsed AnatomyGroups
	if err := parsed.Decode(meta, "g.csv"); err != nil {
		t.Fatal(err)
	}
	mine := parsed.Codebook
	sum := CodebookDigest(meta[KeyCodebook])
	asDigest := meta.Clone()
	asDigest[KeyCodebook] = sum // as table.ReadOptions.DigestMeta reads it
	for _, tc := range []struct {
		name     string
		meta     table.Meta
		sum      string
		digested bool
		reuse    bool
	}{
		{"same text", meta, sum, false, true},
		{"another text", meta, CodebookDigest(meta[KeyCodebook] + " "), false, false},
		{"no digest", meta, "", false, false},
		{"read as the same digest", asDigest, sum, true, true},
	} {
		var g AnatomyGroups
		if err := g.DecodeFor(tc.meta, "g.csv", mine, tc.sum, tc.digested); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if (g.Codebook == mine) != tc.reuse {
			t.Errorf("%s: the release's codebook taken = %v, want %v", tc.name, g.Codebook == mine, tc.reuse)
		}
	}
	// A text read whole that is the digest (an edit) is parsed: refused.
	var g AnatomyGroups
	if err := g.DecodeFor(asDigest, "g.csv", mine, sum, false); err == nil {
		t.Error("a codebook item edited to the release codebook's digest: no error")
	}
	bad := meta.Clone()
	bad[KeyL] = "1"
	if err := g.DecodeFor(bad, "g.csv", mine, sum, false); err == nil {
		t.Error("ℓ′ = 1 with the release's codebook: no error")
	}
}
