package main

import "testing"

// TestHandOff: blocks written on one goroutine arrive with their bytes on
// the other, on two threads and on one, and the rate is positive.
func TestHandOff(t *testing.T) {
	for _, apart := range []bool{true, false} {
		gbs, err := handOff(300, apart)
		if err != nil {
			t.Fatalf("apart=%v: %v", apart, err)
		}
		if !(gbs > 0) {
			t.Errorf("apart=%v: %v GB/s, want > 0", apart, gbs)
		}
	}
}
