package loader

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// FileSystemOf returns the file system holding path, from
// /proc/self/mountinfo: of the mounts of path's device, the one whose
// mount point holds path most closely.
func FileSystemOf(path string) (FileSystem, error) {
	return fileSystemOf(path, "/proc/self/mountinfo")
}

func fileSystemOf(path, mountinfo string) (FileSystem, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return FileSystem{}, fmt.Errorf("file system of %s: %w", path, &os.PathError{Op: "stat", Path: path, Err: err})
	}
	dev := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	abs, err := filepath.Abs(path)
	if err == nil {
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			abs = r
		}
	}
	f, err := os.Open(mountinfo)
	if err != nil {
		return FileSystem{}, fmt.Errorf("file system of %s: %w", path, err)
	}
	defer f.Close()
	var best FileSystem
	found, bestLen := false, -1
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m, ok := parseMountinfo(sc.Text())
		if !ok || m.Device != dev {
			continue
		}
		n := -1 // a mount of the device that does not hold path: a bind mount elsewhere
		if abs == m.Mount || m.Mount == "/" || strings.HasPrefix(abs, m.Mount+"/") {
			n = len(m.Mount)
		}
		if !found || n >= bestLen {
			best, bestLen, found = m, n, true
		}
	}
	if err := sc.Err(); err != nil {
		return FileSystem{}, fmt.Errorf("file system of %s: reading %s: %w", path, mountinfo, err)
	}
	if !found {
		return FileSystem{}, fmt.Errorf("file system of %s: device %s is not in %s", path, dev, mountinfo)
	}
	return best, nil
}

// parseMountinfo reads one line of /proc/self/mountinfo: "36 35 98:0
// /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue".
func parseMountinfo(line string) (FileSystem, bool) {
	fields := strings.Fields(line)
	sep := -1
	for i, f := range fields {
		if f == "-" && i >= 6 {
			sep = i
			break
		}
	}
	if sep < 0 || len(fields) < sep+3 {
		return FileSystem{}, false
	}
	return FileSystem{
		Mount:  unescapeMount(fields[4]),
		Device: fields[2],
		Type:   fields[sep+1],
		Source: unescapeMount(fields[sep+2]),
	}, true
}

// unescapeMount undoes the kernel's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
