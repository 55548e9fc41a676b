//go:build !unix

package anonymize

import "time"

// processCPU is unavailable here; benchmarks then omit the CPU metric.
func processCPU() time.Duration { return 0 }
