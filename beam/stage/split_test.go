package stage

import (
	"path/filepath"
	"testing"

	"github.com/pramkit/pramkit/beam/internal/beamtest"
)

// TestParquetShardsAreSplitByRowGroup: a Parquet shard of several row
// groups becomes one split per group, whose first rows follow the groups'
// sizes; a CSV file is one split. (TestEstimateOnPrismMatchesTheCLI and
// TestREADMEPrismCommands read such shards and match the CLI.)
func TestParquetShardsAreSplitByRowGroup(t *testing.T) {
	rel, dir := beamtest.AdultRelease(t)
	pq, csv := filepath.Join(dir, "r.parquet"), filepath.Join(dir, "r.csv")
	beamtest.Split(t, rel, pq) // row groups of 1000 rows (Split's batches)
	beamtest.Split(t, rel, csv)
	var got []fileSplit
	if err := splitFile(pq, func(s fileSplit) { got = append(got, s) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 { // m = 5000
		t.Fatalf("%d splits, want 5: %v", len(got), got)
	}
	for i, s := range got {
		if s.Path != pq || s.Group != i || s.FirstRow != int64(1000*i) {
			t.Errorf("split %d = %+v", i, s)
		}
	}
	got = nil
	if err := splitFile(csv, func(s fileSplit) { got = append(got, s) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Group != -1 {
		t.Errorf("CSV splits %v, want the whole file", got)
	}
}
