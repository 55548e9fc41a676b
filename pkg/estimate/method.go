package estimate

import "fmt"

// Method names an estimator of the joint type.
type Method int

// The estimators; the zero Method is invalid.
const (
	MethodInverse   Method = iota + 1 // Inverse: the paper's A⁻¹T
	MethodProjected                   // Projected: A⁻¹T projected onto the simplex
	MethodMLE                         // MLE: maximum likelihood (closed form, or EM)
)

// String returns the name ParseMethod accepts.
func (m Method) String() string {
	switch m {
	case MethodInverse:
		return "inverse"
	case MethodProjected:
		return "projected"
	case MethodMLE:
		return "mle"
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// ParseMethod maps "inverse", "projected" or "mle" to its Method.
func ParseMethod(s string) (Method, error) {
	for _, m := range []Method{MethodInverse, MethodProjected, MethodMLE} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("estimate.ParseMethod: unknown method %q (want inverse, projected or mle)", s)
}

// Run applies the estimator method to c; em is used by MethodMLE only.
func Run(method Method, c Counts, gamma float64, em EMOptions) (Vector, error) {
	switch method {
	case MethodInverse:
		return Inverse(c, gamma)
	case MethodProjected:
		return Projected(c, gamma)
	case MethodMLE:
		res, err := MLE(c, gamma, em)
		return res.Estimate, err
	}
	return Vector{}, fmt.Errorf("estimate.Run: invalid method %v", method)
}
