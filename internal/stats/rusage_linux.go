// Package stats holds the measurements loader's results and bench's
// reports share: latency percentiles and the process's CPU time.
package stats

import (
	"time"

	"golang.org/x/sys/unix"
)

// ProcessCPUTime returns the process's user and system CPU time so far
// (getrusage RUSAGE_SELF).
func ProcessCPUTime() (user, sys time.Duration) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
