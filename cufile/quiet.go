package cufile

import (
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// stdioMu serializes the redirections of the process's standard output and
// error around libcufile's driver calls: two at once would restore each
// other's descriptors.
var stdioMu sync.Mutex

// maxOutput bounds what is kept of libcufile's own output.
const maxOutput = 16 << 10

// quietly runs call with the process's standard output and error sent to a
// memory file for its duration, and returns what was written there. Those
// descriptors are shared by the whole process: whatever another thread
// writes to them meanwhile is captured too, so callers keep the window to
// one rare call (the driver's open and close). Where no memory file can be
// made, call runs with the descriptors untouched (its argument is -1).
func quietly[T any](call func(fd int) T) (T, string) {
	fd, err := unix.MemfdCreate("gdsload-libcufile-output", unix.MFD_CLOEXEC)
	if err != nil {
		return call(-1), ""
	}
	defer unix.Close(fd)
	stdioMu.Lock()
	r := call(fd)
	stdioMu.Unlock()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Size == 0 {
		return r, ""
	}
	buf := make([]byte, min(st.Size, maxOutput))
	n, _ := unix.Pread(fd, buf, 0)
	return r, strings.TrimSpace(string(buf[:max(n, 0)]))
}

// logFileEnv is the variable libcufile reads for its log's path.
const logFileEnv = "CUFILE_LOGFILE_PATH"

// logFile returns where libcufile logs: CUFILE_LOGFILE_PATH when the
// environment sets it, else cfg.LogFile, else cufile.log in the user's
// cache folder (created), else the null device. set reports whether the
// variable still has to be set to that path.
func (c Config) logFile() (path string, set bool) {
	if p := c.getenv(logFileEnv); p != "" {
		return p, false
	}
	if c.LogFile != "" {
		return c.LogFile, true
	}
	if dir, err := os.UserCacheDir(); err == nil {
		dir = filepath.Join(dir, "gdsload")
		if os.MkdirAll(dir, 0o700) == nil {
			return filepath.Join(dir, "cufile.log"), true
		}
	}
	return os.DevNull, true
}

// useLogFile points libcufile's log away from the current folder, where it
// would otherwise create cufile.log, and returns the log's path. It sets
// CUFILE_LOGFILE_PATH in the process environment (which libcufile reads
// when its driver opens) unless the variable is already set.
func (c Config) useLogFile() string {
	p, set := c.logFile()
	if set {
		_ = os.Setenv(logFileEnv, p)
	}
	return p
}
