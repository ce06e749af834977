package loader

import (
	"time"

	"golang.org/x/sys/unix"
)

// rusage returns the process's user and system CPU time.
func rusage() (user, sys time.Duration) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
