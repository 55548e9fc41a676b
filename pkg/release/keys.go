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
	// EstimatorCounts is the estimator of anonymize releases' counts.
	EstimatorCounts = "counts"
)
