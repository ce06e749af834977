package bench

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// DropCache evicts path's pages from the page cache before a cold run. As
// root it writes 1 to /proc/sys/vm/drop_caches after a sync (every clean
// page goes, as benchmark tools do); otherwise it asks the kernel with
// posix_fadvise(DONTNEED), which drops only the file's clean pages. It
// returns which of the two it did.
func DropCache(path string) (string, error) {
	unix.Sync()
	if os.Geteuid() == 0 {
		if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("1"), 0); err == nil {
			return "cold (drop_caches)", nil
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return "", fmt.Errorf("posix_fadvise(DONTNEED) on %s: %w", path, err)
	}
	return "cold (posix_fadvise DONTNEED)", nil
}
