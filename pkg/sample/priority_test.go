package sample

import (
	"bytes"
	"testing"
)

// TestPriorityStringRoundTripsAndKeepsOrder: the priority column's text
// must parse back to the priority and sort as the priorities do, or a
// merge of shards would keep other rows than one run.
func TestPriorityStringRoundTripsAndKeepsOrder(t *testing.T) {
	prf, err := NewPRF(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	prev := Priority{}
	for i := range uint64(1000) {
		p := prf.Position(i)
		q, err := ParsePriority(p.String())
		if err != nil || q != p {
			t.Fatalf("ParsePriority(%s) = %v, %v; want %v", p, q, err, p)
		}
		if (prev.String() < p.String()) != prev.Less(p) {
			t.Fatalf("%s and %s: string order differs from priority order", prev, p)
		}
		prev = p
	}
	for _, bad := range []string{"", "00", "zz" + p32[2:], p32 + "0"} {
		if _, err := ParsePriority(bad); err == nil {
			t.Errorf("ParsePriority(%q) accepted", bad)
		}
	}
}

const p32 = "0123456789abcdef0123456789abcdef"

func TestSecretIDNamesTheSecretOnly(t *testing.T) {
	a, b := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	if SecretID(a) != SecretID(bytes.Clone(a)) {
		t.Error("SecretID is not a function of the secret")
	}
	if SecretID(a) == SecretID(b) {
		t.Error("two secrets share a secret-id")
	}
	if SecretID(a) == Fingerprint(a, 0, 0)[:32] {
		t.Error("the secret-id equals a fingerprint: they must be domain-separated")
	}
}
