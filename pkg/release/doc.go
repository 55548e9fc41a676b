// Package release is the on-disk contract between the pramkit stages: the
// metadata each stage writes for the next one, as typed Go values.
//
// Each struct has Encode, which writes its items into a table.Meta, and
// Decode, which parses them back with range checks and checks the items
// that determine each other (ε from n, m and γ for the γ-diagonal release,
// Lin–Wang–Rane Theorem III.2; the bitflip ε from q and L; the DDPS ε from
// its masses; 1 ≤ m ≤ n). A file whose metadata was edited or damaged is
// refused with one line naming the file, the item and both values, rather
// than estimated with the wrong parameters or reported with the wrong ε.
//
// Numbers are stored in Go's shortest round-trip form (table.Meta.SetFloat),
// so an honest file reproduces its derived values exactly; Decode still
// allows a relative difference of Tolerance so that files written by other
// tools that round the last digit are accepted.
package release
