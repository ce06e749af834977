//go:build !linux

package stats

import "time"

// ProcessCPUTime is not measured outside Linux.
func ProcessCPUTime() (user, sys time.Duration) { return 0, 0 }
