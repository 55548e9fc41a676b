package cli

import (
	"math"
	"strconv"
)

// Interval is the set of valid values of a float flag: Lo and Hi, each
// end open or closed. Hi = +Inf means "any finite number above Lo": the
// checks below refuse NaN and ±Inf everywhere, because a probability or a
// privacy level that is not a finite number is always a typo or an
// overflow, never a choice.
type Interval struct {
	Lo, Hi         float64
	LoOpen, HiOpen bool
}

// The intervals the tools' flags use.
var (
	OpenUnit       = Interval{0, 1, true, true}           // (0, 1): a level, a probability that must not be 0 or 1
	OpenClosedUnit = Interval{0, 1, true, false}          // (0, 1]: a fraction
	ClosedOpenUnit = Interval{0, 1, false, true}          // [0, 1): a keep probability
	Positive       = Interval{0, math.Inf(1), true, true} // a finite number > 0
)

// Above is the interval of finite numbers > lo.
func Above(lo float64) Interval { return Interval{lo, math.Inf(1), true, true} }

// Contains says whether v is in the interval; NaN and ±Inf never are.
func (iv Interval) Contains(v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return false
	}
	lo := v > iv.Lo || (!iv.LoOpen && v == iv.Lo)
	hi := v < iv.Hi || (!iv.HiOpen && v == iv.Hi)
	return lo && hi
}

// String writes the interval as "(0, 1]", or "> 0" when it is unbounded above.
func (iv Interval) String() string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	if math.IsInf(iv.Hi, 1) {
		if iv.LoOpen {
			return "> " + f(iv.Lo)
		}
		return "≥ " + f(iv.Lo)
	}
	l, r := "[", "]"
	if iv.LoOpen {
		l = "("
	}
	if iv.HiOpen {
		r = ")"
	}
	return l + f(iv.Lo) + ", " + f(iv.Hi) + r
}

// describe names what a flag holds: "a probability in (0, 1)" or
// "a finite number > 0".
func (iv Interval) describe(kind string) string {
	if math.IsInf(iv.Hi, 1) {
		return "a finite number " + iv.String()
	}
	return kind + " in " + iv.String()
}

// CheckNumber refuses a value of --flag outside iv with a usage error that
// names the flag, the valid range and the value given.
func CheckNumber(flag string, v float64, iv Interval) error {
	if iv.Contains(v) {
		return nil
	}
	return Usagef("--%s must be %s, got %v", flag, iv.describe("a number"), v)
}

// CheckProbability is CheckNumber for a probability: the message says so.
func CheckProbability(flag string, v float64, iv Interval) error {
	if iv.Contains(v) {
		return nil
	}
	return Usagef("--%s must be %s, got %v", flag, iv.describe("a probability"), v)
}

// CheckEpsilon refuses a privacy level ε that is not a finite number > 0
// (ε = 0 is no release at all and ε = ∞ no privacy).
func CheckEpsilon(flag string, eps float64) error {
	return CheckNumber(flag, eps, Positive)
}

// CheckGamma refuses an amplification γ that is not a finite number > 1:
// γ = 1 would release the rows unchanged (Agrawal et al. 2009, eq. 3).
func CheckGamma(flag string, g float64) error {
	if Above(1).Contains(g) {
		return nil
	}
	return Usagef("--%s must be a finite number > 1, got %v (γ = 1 would release the rows unchanged)", flag, g)
}
