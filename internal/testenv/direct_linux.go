package testenv

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// probeBlock is the size and alignment of the probe's I/O: a page, which
// every logical block size of a Linux block device divides.
const probeBlock = 4096

// DirectIO reports whether files in dir take O_DIRECT, by trying it with
// raw system calls: it creates a file there with O_DIRECT, writes one
// aligned block, reads it back with an aligned pread and compares. When
// not, reason names the failed step and the file system (statfs's type).
func DirectIO(dir string) (ok bool, reason string) {
	f, err := os.CreateTemp(dir, ".direct-probe-*")
	if err != nil {
		return false, fmt.Sprintf("creating a probe file: %v", err)
	}
	name := f.Name()
	f.Close()
	defer os.Remove(name)
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Sprintf("open(O_DIRECT) on %s: %v", fsType(dir), err)
	}
	defer unix.Close(fd)
	mem, err := unix.Mmap(-1, 0, 2*probeBlock, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return false, fmt.Sprintf("mapping an aligned buffer: %v", err)
	}
	defer unix.Munmap(mem)
	out, in := mem[:probeBlock], mem[probeBlock:]
	for i := range out {
		out[i] = byte(i*7 + 1)
	}
	if n, err := unix.Pwrite(fd, out, 0); err != nil || n != probeBlock {
		return false, fmt.Sprintf("aligned pwrite with O_DIRECT on %s: %d bytes, %v", fsType(dir), n, err)
	}
	if n, err := unix.Pread(fd, in, 0); err != nil || n != probeBlock {
		return false, fmt.Sprintf("aligned pread with O_DIRECT on %s: %d bytes, %v", fsType(dir), n, err)
	}
	if !bytes.Equal(in, out) {
		return false, fmt.Sprintf("an O_DIRECT pread on %s returned other bytes than were written", fsType(dir))
	}
	return true, ""
}

// fsType names the file system dir is on, from statfs's magic number.
func fsType(dir string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Clean(dir), &st); err != nil {
		return fmt.Sprintf("an unknown file system (statfs: %v)", err)
	}
	if name, ok := fsNames[int64(st.Type)]; ok {
		return name
	}
	return fmt.Sprintf("file system type %#x", st.Type)
}

var fsNames = map[int64]string{
	unix.TMPFS_MAGIC:           "tmpfs",
	unix.RAMFS_MAGIC:           "ramfs",
	unix.EXT4_SUPER_MAGIC:      "ext4",
	unix.XFS_SUPER_MAGIC:       "xfs",
	unix.BTRFS_SUPER_MAGIC:     "btrfs",
	unix.OVERLAYFS_SUPER_MAGIC: "overlayfs",
	unix.NFS_SUPER_MAGIC:       "nfs",
	unix.FUSE_SUPER_MAGIC:      "fuse",
}
