package release

// Items of the sample, encrypt, perturb and decrypt stages' metadata
// (besides those declared next to their structs: KeyColumns, KeyPad,
// KeyCodebook, KeyPRFKey, KeyGammas, the common items in contract.go and
// anonymize's in anonymize.go). Every stage reads and writes them through
// these names; the structs' Encode and Decode are the preferred way.
const (
	KeyN           = "n"
	KeyM           = "m"
	KeyFingerprint = "fingerprint"
	// KeySampleID is how the sample stage identified rows: SampleIDColumn
	// (--id) or SampleIDPosition.
	KeySampleID        = "sample_id"
	KeyJointSize       = "K" // K = k_1·…·k_d
	KeyGamma           = "gamma"
	KeyEpsilon         = "epsilon"
	KeyReleases        = "releases"
	KeyGammaComposed   = "gamma_composed"
	KeyEpsilonComposed = "epsilon_composed"
	// KeyBits is the record length L of a bitflip release (also in
	// estimate's report).
	KeyBits = "bits"
	// KeyNoise says where a γ-diagonal release's offsets came from:
	// NoisePRF (perturb --noise-key: a keyed PRF of the row index,
	// computational secrecy, re-computable by part). Absent, they came
	// from the run's random generator.
	KeyNoise = "noise"
	NoisePRF = "prf"
)

// Values of KeySampleID.
const (
	SampleIDColumn   = "column"
	SampleIDPosition = "position"
)

// StageEstimate is the "stage" item of estimate's reports.
const StageEstimate = "estimate"

// Items of estimate's reports that are not fields of a summary struct (the
// summaries' JSON names are the report's other items). No stage reads a
// report: these are named here only so that no stage spells an item.
const (
	KeyEstimator = "estimator"
	KeyDecoy     = "decoy"
	KeyIBUTol    = "ibu_tol"
	// KeyIBUStop and KeyIBUMaxIter: the Bayesian update's stopping rule
	// (paper or converged) and its step bound.
	KeyIBUStop    = "ibu_stop"
	KeyIBUMaxIter = "ibu_max_iter"
	// EstimatorCounts is the estimator of anonymize releases' counts.
	EstimatorCounts = "counts"
)

// A count table (estimate --tabulate) holds a γ-diagonal release's counts
// instead of its rows: the release's columns (the labels) plus CountColumn,
// one row per observed joint value, with the release's metadata plus
// KeyCountTable = CountTableTrue. Counts of disjoint parts of a release add
// up to the counts of the whole, so estimate merges count tables and row
// files of one release exactly.
const (
	KeyCountTable  = "count_table"
	CountTableTrue = "true"
	CountColumn    = "count"
)

// IsCountTable reports whether meta is a count table's.
func IsCountTable(meta map[string]string) bool { return meta[KeyCountTable] == CountTableTrue }

// ReleasePartKeys are the metadata items that the parts of one γ-diagonal
// release (row files or count tables) share: a part whose items differ
// belongs to another release, and merging it would estimate nonsense.
var ReleasePartKeys = []string{KeyMechanism, KeyFingerprint, KeyGamma, KeyGammas, KeyGammaComposed, KeyReleases, KeyN, KeyM, KeyJointSize, KeyColumns, KeyCodebook, KeyNoiseID}

// DDPSPartKeys are ReleasePartKeys' analogue for ddps releases: the column,
// the masses (which fix the estimator), and the codebook, which fixes the
// values (and the "values" item of releases before contract version 4: the
// parts of one release have it or lack it alike). A ddps release records
// no number of owners, so its parts' total is not checkable.
var DDPSPartKeys = []string{KeyMechanism, KeyFingerprint, KeyDDPSColumn, KeyDDPSNoneToken, KeyDDPSNonParticipant, KeyDDPSPiS, KeyDDPSPiBottom, KeyDDPSValues, KeyEpsilon, KeyCodebook}

// AnonymizePartKeys are ReleasePartKeys' analogue for anonymize's
// publications (A′, Anatomy's row table, global): the parts of one release,
// and their count tables, agree on all of them. A′ and global releases
// carry no id of their own, so two runs with the same parameters on the
// same table are told apart only by their rows' total against N.
var AnonymizePartKeys = []string{KeyMechanism, KeySensitive, KeyCodebook, KeyRows, KeyDropped, KeyMissingDropped, KeyUnknown, KeyMissing, KeyL, KeyGrouping, KeyGroups, KeyGroupColumn, KeyReleaseID, "p", "p_per_column"}

// BitflipPartKeys are ReleasePartKeys' analogue for bitflip releases: q, L,
// the layout and the ε they give, and the codebook. A bitflip release
// records no number of rows either.
var BitflipPartKeys = []string{KeyMechanism, KeyFingerprint, "lie", "bits", "epsilon_per_bit", "epsilon_per_record", "epsilon_encoded", "layout", KeyCodebook}
