package main

import (
	"math/rand/v2"

	"github.com/pramkit/pramkit/pkg/rng"
)

// stream returns the generator of the named sub-stream of seed, so that
// every figure, point and release draws independently and a run does not
// depend on how releases are spread over workers.
func stream(seed uint64, name string) *rand.Rand { return rng.Derive(seed, "figures/"+name) }
