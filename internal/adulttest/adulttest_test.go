package adulttest

import "testing"

func TestLoadReadsEveryAdultRow(t *testing.T) {
	// adult.names: 32561 training and 16281 test instances.
	if got := len(Load(t, "data")); got != 32561 {
		t.Errorf("adult.data: %d rows, want 32561", got)
	}
	test := Load(t, "test")
	if got := len(test); got != 16281 {
		t.Errorf("adult.test: %d rows, want 16281", got)
	}
	if inc := test[0][14]; inc != "<=50K" {
		t.Errorf("test income %q, want <=50K without the trailing period", inc)
	}
}
