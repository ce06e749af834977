package stage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// lockName is the file in the sidecar folder a running stage holds an
// exclusive flock on; it contains the holder's pid.
const lockName = "lock"

// ErrLocked reports a destination another stage is writing to.
var ErrLocked = errors.New("destination locked")

// lockDest takes the lock of the sidecar folder dir without waiting. The
// kernel drops it when the process dies, so a killed stage never leaves a
// stale lock.
func lockDest(dir, dest string) (*os.File, error) {
	p := filepath.Join(dir, lockName)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the stage lock %s: %w", p, err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.EWOULDBLOCK {
		b, _ := os.ReadFile(p)
		f.Close()
		holder := "unknown pid"
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
			holder = "pid " + strconv.Itoa(pid)
		}
		return nil, fmt.Errorf("%w: %s is being staged by another gdsload (%s, lock %s); wait for it to finish or stop it", ErrLocked, dest, holder, p)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", p, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
