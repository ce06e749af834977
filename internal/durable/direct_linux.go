package durable

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Errno returns the errno inside err, or err when it holds none.
func Errno(err error) error {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}

// DIOAlign asks statx for the direct-I/O alignment; 4 KiB where the kernel
// or file system does not say.
func DIOAlign(f interface{ Fd() uintptr }) (offset, mem int64) {
	var st unix.Statx_t
	err := unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH, unix.STATX_DIOALIGN, &st)
	if err != nil || st.Mask&unix.STATX_DIOALIGN == 0 || st.Dio_offset_align == 0 {
		return DefaultAlignment, DefaultAlignment
	}
	offset, mem = int64(st.Dio_offset_align), int64(st.Dio_mem_align)
	if mem == 0 {
		mem = offset
	}
	return offset, mem
}

// Addr is the address of b's first byte.
func Addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// FSName names the file system holding path, for reasons and errors.
func FSName(path string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return "this file system"
	}
	if name, ok := fsMagicName(int64(st.Type)); ok {
		return name
	}
	return fmt.Sprintf("file system 0x%x", st.Type)
}

func fsMagicName(magic int64) (string, bool) {
	switch magic {
	case 0xEF53:
		return "ext4", true
	case 0x58465342:
		return "xfs", true
	case 0x9123683E:
		return "btrfs", true
	case 0x01021994:
		return "tmpfs", true
	case 0x858458f6:
		return "ramfs", true
	case 0x6969:
		return "nfs", true
	case 0x794c7630:
		return "overlayfs", true
	case 0x65735546:
		return "fuse", true
	case 0x2fc12fc1:
		return "zfs", true
	case 0x0bd00bd0:
		return "lustre", true
	case 0x47504653:
		return "gpfs", true
	case 0xF2F52010:
		return "f2fs", true
	}
	return "", false
}
