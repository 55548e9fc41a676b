package release

import (
	"errors"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/pkg/table"
)

// TestStampedFilesDecode: a stamped file of this contract decodes.
func TestStampedFilesDecode(t *testing.T) {
	meta := table.Meta{}
	Sample{N: 10, M: 2, Fingerprint: "ab"}.Encode(meta)
	Stamp(meta, "1.2.3")
	if meta[KeyContract] != "4" || meta[KeyVersion] != "1.2.3" {
		t.Fatalf("stamped %v", meta)
	}
	var s Sample
	if err := s.Decode(meta, "s.csv"); err != nil {
		t.Fatal(err)
	}
}

// TestOtherContractRefused: every decoder refuses a file of a newer
// contract version, or an older pramkit's file without the item, before
// reading any item, with one line naming the file, both versions and the fix.
func TestOtherContractRefused(t *testing.T) {
	_, gmeta := gammaHonest(t, 1)
	cases := []struct {
		name     string
		contract string // "" leaves the item out
		want     string
	}{
		{"older, no item", "", "r.csv: the file was written under release contract version 1 (by pramkit 0.3.0) and this pramkit reads versions 2 to 4; re-run the stage that wrote it with this pramkit"},
		{"newer", "5", "r.csv: the file was written under release contract version 5 (by pramkit 0.3.0), newer than this pramkit reads (2 to 4); upgrade pramkit"},
		{"garbage", "two", "r.csv: the file was written under release contract version unknown (by pramkit 0.3.0) and this pramkit reads versions 2 to 4; re-run the stage that wrote it with this pramkit"},
	}
	decoders := map[string]func(table.Meta) error{
		"Sample":             func(m table.Meta) error { var s Sample; return s.Decode(m, "r.csv") },
		"Key":                func(m table.Meta) error { var k Key; return k.Decode(m, "r.csv") },
		"GammaDiagonal":      func(m table.Meta) error { var g GammaDiagonal; return g.Decode(m, "r.csv") },
		"CheckGammaDiagonal": func(m table.Meta) error { return CheckGammaDiagonal(m, "r.csv") },
		"Bitflip":            func(m table.Meta) error { var b Bitflip; return b.Decode(m, "r.csv") },
		"DDPS":               func(m table.Meta) error { var d DDPS; return d.Decode(m, "r.csv") },
		"Global":             func(m table.Meta) error { var g Global; return g.Decode(m, "r.csv") },
		"ReadSample":         func(m table.Meta) error { _, err := ReadSample(m, "r.csv", "x"); return err },
		"ReadColumns":        func(m table.Meta) error { _, err := ReadColumns(m, "r.csv", "x"); return err },
	}
	for _, c := range cases {
		for name, dec := range decoders {
			meta := gmeta.Clone()
			Stamp(meta, "0.3.0")
			delete(meta, KeyContract)
			if c.contract != "" {
				meta[KeyContract] = c.contract
			}
			err := dec(meta)
			var ce *ContractError
			if !errors.As(err, &ce) || err.Error() != c.want || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s, %s: error %v, want %q", c.name, name, err, c.want)
			}
		}
	}
}

// TestUnstampedFilesAreJudgedByTheirItems: a table no pramkit stage wrote
// (no "version", no "contract") is not refused for its contract.
func TestUnstampedFilesAreJudgedByTheirItems(t *testing.T) {
	if err := CheckContract(table.Meta{"n": "3"}, "hand.csv"); err != nil {
		t.Fatal(err)
	}
	if err := CheckContract(nil, "plain.csv"); err != nil {
		t.Fatal(err)
	}
}

// TestOlderUnderstoodContractDecodes: a file of contract version 2 (before
// the grouping item) still decodes with every decoder, and an A′ release of
// version 2 without the item reads as Anatomy's grouping.
func TestOlderUnderstoodContractDecodes(t *testing.T) {
	_, gmeta := gammaHonest(t, 1)
	meta := gmeta.Clone()
	Stamp(meta, "0.9.0")
	meta[KeyContract] = "2"
	var g GammaDiagonal
	if err := g.Decode(meta, "r.csv"); err != nil {
		t.Fatalf("version 2 γ-diagonal release: %v", err)
	}
	_, ameta := anatomyHonest(t)
	ameta[KeyMechanism] = MechanismDiverted
	delete(ameta, KeyGrouping)
	Stamp(ameta, "0.9.0")
	ameta[KeyContract] = "2"
	var a Anonymized
	if err := a.Decode(ameta, "r.csv"); err != nil || a.Grouping != GroupingAnatomy {
		t.Fatalf("version 2 A′ release: grouping %q, %v; want anatomy", a.Grouping, err)
	}
	for _, v := range []string{"2", "3", "4"} {
		if err := CheckContract(table.Meta{KeyContract: v, KeyVersion: "x"}, "r.csv"); err != nil {
			t.Errorf("version %s: %v", v, err)
		}
	}
}
