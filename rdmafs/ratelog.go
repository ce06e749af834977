package rdmafs

import (
	"sync"
	"time"
)

// logLimiter lets at most burst lines through per interval and counts the
// ones it holds back, so a flood of failed logins cannot flood the log: a
// line that passes after a quiet spell says how many were suppressed.
type logLimiter struct {
	interval time.Duration
	burst    int

	mu      sync.Mutex
	start   time.Time // of the current window
	passed  int       // lines let through in the current window
	dropped int       // lines held back since the last one let through
}

// allow reports whether a line may be logged at now and, when it may, how
// many lines were held back before it.
func (l *logLimiter) allow(now time.Time) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.start.IsZero() || now.Sub(l.start) >= l.interval {
		l.start, l.passed = now, 0
	}
	if l.passed >= l.burst {
		l.dropped++
		return false, 0
	}
	l.passed++
	suppressed, l.dropped = l.dropped, 0
	return true, suppressed
}
