package release

import (
	"testing"

	"github.com/pramkit/pramkit/pkg/table"
)

func TestPrioritiesRoundTripAndRemove(t *testing.T) {
	meta := table.Meta{}
	if _, ok, err := DecodePriorities(meta, "f"); ok || err != nil {
		t.Fatalf("no items: ok=%v err=%v", ok, err)
	}
	want := Priorities{Column: PriorityColumn, SecretID: "ab"}
	want.Encode(meta)
	got, ok, err := DecodePriorities(meta, "f")
	if !ok || err != nil || got != want {
		t.Fatalf("got %+v ok=%v err=%v, want %+v", got, ok, err, want)
	}
	delete(meta, KeySecretID)
	if _, _, err := DecodePriorities(meta, "f"); err == nil {
		t.Error("a priority column without a secret-id was accepted")
	}
	want.Encode(meta)
	Priorities{}.Remove(meta)
	if len(meta) != 0 {
		t.Errorf("Remove left %v", meta)
	}
}
