package release

import (
	"fmt"
	"strconv"

	"github.com/pramkit/pramkit/pkg/table"
)

// ContractVersion is the version of the metadata contract between the
// stages: the items this package writes and reads. Bump it when an item is
// added or changes meaning, name or format. A stage reads files of every
// version from MinContractVersion to ContractVersion (an item an older
// version lacks takes the value it implicitly had then) and refuses older
// and newer ones (CheckContract) instead of misreading them.
//
// Version 1 is the contract before the item existed: files that carry
// the "version" item every pramkit stage writes but no "contract".
// Version 3 adds anonymize's "grouping" (KeyGrouping); a version-2 release
// has none and its groups are Anatomy's, the only grouping there was.
// Version 4 writes a ddps release's equal masses "pi_bot" as one number and
// drops its "values" (the codebook's categories); a release of version 2
// or 3 has the list and the item, which DDPS.Decode still reads. An older
// pramkit refuses a version-4 file with "upgrade pramkit" instead of
// misreading the masses or missing the values.
const ContractVersion = 4

// MinContractVersion is the oldest contract version this pramkit reads:
// every item of versions 2..ContractVersion is either present in all of
// them or defaults, when absent, to what the older version meant. Version
// 1 files predate the contract and are refused.
const MinContractVersion = 2

// Items common to every stage's output. They are written once, for every
// output table, by Stamp (through cli.Create), not by each struct's Encode:
// each struct encodes what its own stage decides.
const (
	// KeyContract holds ContractVersion.
	KeyContract = "contract"
	// KeyVersion holds the version of the pramkit that wrote the file.
	KeyVersion = "version"
	// KeyStage is the stage that wrote the file (StageSample, …); a key
	// file is recognised by table.StageKey, which this package re-exports
	// as StageKey (table cannot import release).
	KeyStage = "stage"
	// KeyMechanism names the mechanism of a release (MechanismGamma, …).
	KeyMechanism = "mechanism"
	// KeyOrder is "shuffled" or "input" (--keep-order): OrderShuffled, OrderInput.
	KeyOrder = "order"
	// KeyInsecureSeed is "true" when a stage ran with --insecure-seed.
	KeyInsecureSeed = "insecure_seed"
	// KeySampleReleases counts the γ-diagonal releases of the sample that
	// perturb's release ledger knew of, this one included.
	KeySampleReleases = "sample_releases"
)

// Values of KeyOrder.
const (
	OrderShuffled = "shuffled"
	OrderInput    = "input"
)

// Stamp records the contract version and the writing pramkit's version in
// an output's metadata.
func Stamp(meta table.Meta, toolVersion string) {
	meta[KeyVersion] = toolVersion
	meta[KeyContract] = strconv.Itoa(ContractVersion)
}

// ContractError is a file written under a contract version this pramkit
// does not read.
type ContractError struct {
	File string
	// Have is the file's contract version: 1 for a pramkit file without
	// the item, 0 when the item is not a number.
	Have int
	// Tool is the version of the pramkit that wrote the file, "" if unknown.
	Tool string
}

func (e *ContractError) Error() string {
	by := ""
	if e.Tool != "" {
		by = fmt.Sprintf(" (by pramkit %s)", e.Tool)
	}
	if e.Have > ContractVersion {
		return fmt.Sprintf("%s: the file was written under release contract version %d%s, newer than this pramkit reads (%d to %d); upgrade pramkit", e.File, e.Have, by, MinContractVersion, ContractVersion)
	}
	have := strconv.Itoa(e.Have)
	if e.Have == 0 {
		have = "unknown"
	}
	return fmt.Sprintf("%s: the file was written under release contract version %s%s and this pramkit reads versions %d to %d; re-run the stage that wrote it with this pramkit", e.File, have, by, MinContractVersion, ContractVersion)
}

// CheckContract refuses a file written under a contract version outside
// MinContractVersion..ContractVersion: an older one with the fix of
// re-running its stage, a newer one with the fix of upgrading pramkit. A
// file with neither "contract" nor "version" was not written by a pramkit
// stage (a hand-made table, or a table with no metadata): the decoders
// judge its items one by one.
func CheckContract(meta table.Meta, file string) error {
	s, ok := meta[KeyContract]
	if !ok {
		if tool, ok := meta[KeyVersion]; ok {
			return &ContractError{File: file, Have: 1, Tool: tool}
		}
		return nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		return &ContractError{File: file, Tool: meta[KeyVersion]}
	}
	if v < MinContractVersion || v > ContractVersion {
		return &ContractError{File: file, Have: v, Tool: meta[KeyVersion]}
	}
	return nil
}
