package cli

import (
	"errors"
	"math"
	"testing"
)

func TestCheckNumber(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		iv   Interval
		v    float64
		ok   bool
		want string
	}{
		{OpenUnit, 0.5, true, ""},
		{OpenUnit, 0, false, "--f must be a number in (0, 1), got 0"},
		{OpenUnit, 1, false, "--f must be a number in (0, 1), got 1"},
		{OpenUnit, nan, false, "--f must be a number in (0, 1), got NaN"},
		{OpenClosedUnit, 1, true, ""},
		{OpenClosedUnit, 0, false, "--f must be a number in (0, 1], got 0"},
		{ClosedOpenUnit, 0, true, ""},
		{ClosedOpenUnit, 1, false, "--f must be a number in [0, 1), got 1"},
		{Interval{0, 0.5, true, true}, 0.5, false, "--f must be a number in (0, 0.5), got 0.5"},
		{Positive, 1e300, true, ""},
		{Positive, 0, false, "--f must be a finite number > 0, got 0"},
		{Positive, inf, false, "--f must be a finite number > 0, got +Inf"},
		{Positive, -inf, false, "--f must be a finite number > 0, got -Inf"},
		{Positive, nan, false, "--f must be a finite number > 0, got NaN"},
		{Interval{0, math.Inf(1), false, true}, 0, true, ""},
		{Interval{0, math.Inf(1), false, true}, -1, false, "--f must be a finite number ≥ 0, got -1"},
	}
	for _, c := range cases {
		err := CheckNumber("f", c.v, c.iv)
		if (err == nil) != c.ok {
			t.Errorf("CheckNumber(%v in %v) = %v, want ok=%v", c.v, c.iv, err, c.ok)
			continue
		}
		if err == nil {
			continue
		}
		var u *UsageError
		if !errors.As(err, &u) {
			t.Errorf("CheckNumber(%v in %v): %T is not a usage error", c.v, c.iv, err)
		}
		if err.Error() != c.want {
			t.Errorf("CheckNumber(%v in %v) = %q, want %q", c.v, c.iv, err, c.want)
		}
	}
}

func TestCheckProbabilityEpsilonGamma(t *testing.T) {
	if err := CheckProbability("lie", 0.7, Interval{0, 0.5, true, true}); err == nil || err.Error() != "--lie must be a probability in (0, 0.5), got 0.7" {
		t.Errorf("CheckProbability: %v", err)
	}
	if err := CheckEpsilon("epsilon", math.NaN()); err == nil || err.Error() != "--epsilon must be a finite number > 0, got NaN" {
		t.Errorf("CheckEpsilon: %v", err)
	}
	if err := CheckEpsilon("epsilon", 2); err != nil {
		t.Errorf("CheckEpsilon(2): %v", err)
	}
	if err := CheckGamma("gamma", 1); err == nil || err.Error() != "--gamma must be a finite number > 1, got 1 (γ = 1 would release the rows unchanged)" {
		t.Errorf("CheckGamma(1): %v", err)
	}
	if err := CheckGamma("gamma", math.Inf(1)); err == nil {
		t.Errorf("CheckGamma(+Inf) passed")
	}
}
