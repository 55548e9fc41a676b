// Package countquery estimates count queries on tables published by package
// anonymize: mechanism A′ of Fu, Wang, Wang and Wong ("Small Count Privacy
// and Large Count Utility in Data Publishing", seed 003, §5 and §7) and the
// baselines that paper compares it with (§9.4): Anatomy, global
// randomization (mechanism A) and Laplace noise on the counts.
//
// A query counts the rows that satisfy a predicate P on the non-sensitive
// attributes (published unchanged) and hold sensitive value s (or values
// s_1..s_w of w sensitive attributes). The estimators take the counts a
// caller gathers in one pass over the published table D′; they never see
// rows. For A′:
//
//   - ValueCounts gives f′_s, the count of s in D′: the unbiased maximum
//     likelihood estimate of f_s (Theorem 3).
//   - Predicate and PredicateMulti run the iterative Bayesian update of
//     Eq. 12 / Eq. 13 over the 2^{w+1} states of (P, s_1..s_w) and return
//     the estimate of the all-true state.
//
// The count-query language (Parse, ReadQueries) and the planner that
// answers many queries from one pass over D′ live here too: NewPlan groups
// the queries by predicate and sensitive columns, Plan.ScanRelease gathers
// every group's state counts from the published table (a table.Reader),
// Plan.ScanTruth the true counts from the original table, and Plan.Answers
// runs the estimators above. The caller (estimate) opens the files, decodes
// the release's metadata into a Release and writes the answers.
package countquery
