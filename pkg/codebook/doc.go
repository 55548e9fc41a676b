// Package codebook holds the public schema of pramkit's categorical columns
// (SPEC §2): for each column, the ordered list of its possible values.
//
// Every mechanism works on value indices, not on strings: the value index of
// a cell is the position of its value in the column's codebook, and the
// column's alphabet size k is the codebook's length, so a row is a point of
//
//	G = Z_{k_1} × … × Z_{k_d}
//
// Lin, Wang, Rane (§II, "Database Model") take each curator's values from a
// finite alphabet 𝒳 and (§III-A, footnote 1) encrypt by adding in a group on
// 𝒳; the codebook fixes 𝒳 = Z_k by numbering the values. Curators, the server and the researcher must all use
// the same codebook; Hash gives a short fingerprint they can compare. The
// codebook is schema, not data: it is published, so it must not be derived
// from the data without saying so (see Infer).
//
// # File format
//
// A codebook file is a JSON object written by humans:
//
//	{"columns": [
//	  {"name": "sex", "categories": ["Female", "Male"]},
//	  {"name": "workclass", "categories": ["Private", "Self-emp-not-inc"], "missing": "?"},
//	  {"name": "age", "cuts": [25, 35, 45, 55, 65]},
//	  {"name": "hours-per-week", "cuts": [35, 41], "labels": ["part-time", "full-time", "over-time"]}
//	]}
//
// Parsing is strict: unknown or duplicate keys (keys are case-sensitive),
// trailing data, duplicate column names and duplicate categories are errors.
//
// A categorical column lists its categories; value index = position. Each
// category is a non-empty, valid UTF-8 string without leading or trailing
// white space (values are matched byte for byte, so " Male" would never match
// "Male").
//
// A numeric column lists cut points c_1 < c_2 < … < c_n (finite, strictly
// increasing, at least one). They make n+1 half-open buckets
//
//	bucket 0 = (−∞, c_1),  bucket i = [c_i, c_{i+1}) for 1 ≤ i < n,  bucket n = [c_n, +∞)
//
// so a value exactly on a cut belongs to the bucket above it. Values are
// parsed as float64 (strconv.ParseFloat); NaN, ±Inf and non-numbers are not
// in any bucket and are treated as unknown values. Bucket labels are either
// given ("labels", n+1 distinct non-empty strings) or generated:
//
//   - when every cut is a whole number in [0, 2^53] (integer style):
//     "<c_1", then "a-b" for bucket [a, b+1) (just "a" when the bucket holds
//     one whole number), then "c_n+". Cuts 25, 35, 65 give "<25", "25-34",
//     "35-64", "65+". Such a label names the whole numbers in its bucket; a
//     fractional value like 34.5 still falls in [25, 35), labelled "25-34".
//   - otherwise (interval style): "<c_1", "[a,b)", …, ">=c_n". Cuts -1, 0.5
//     give "<-1", "[-1,0.5)", ">=0.5".
//
// Numbers in labels are written as in the JSON file: the shortest form that
// reads back exactly, without an exponent for 1e-6 ≤ |x| < 1e21.
//
// # Missing values
//
// A column with a "missing" token (for Adult, "?") has a missing category of
// its own. Values equal to the token, and the empty string, map to it. The
// token's category keeps its position if it is listed among the categories,
// and is appended last otherwise (always last for numeric columns, after the
// buckets); its label is the token itself. The token must be non-empty; in a
// numeric column it must not be a number (that number could never be
// bucketed) nor equal a bucket label. A column without a missing token has no
// missing category: an empty value is an error unless the caller's
// MissingPolicy drops the row.
//
// # Encoding
//
// An Encoder maps one column's values to indices in hot loops without
// allocating. Its Policy says what to do with values outside the codebook
// (UnknownFail, UnknownMissing) and with missing values (MissingKeep,
// MissingDrop, MissingFail). Errors are *ValueError values that name the
// column and the value and say how to fix the problem; callers add the file
// and the row.
package codebook
