//go:build !unix

package supervisor

import "time"

// processCPU is not measured off Unix; the benchmarks report wall times
// only there.
func processCPU() (self, children time.Duration, ok bool) { return 0, 0, false }
