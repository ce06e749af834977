package cufile

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Memory policy modes (linux/mempolicy.h).
const (
	mpolDefault   = 0
	mpolPreferred = 1
)

// nodeMask is a one-word NUMA node mask for node (< 64). The calls take
// maxnode 65: the kernel reads maxnode-1 bits.
func nodeMask(node int) (uint64, error) {
	if node < 0 || node >= 64 {
		return 0, unix.EINVAL
	}
	return 1 << uint(node), nil
}

// preferHostNode makes the calling (locked) thread's new pages prefer node.
func preferHostNode(node int) error {
	mask, err := nodeMask(node)
	if err != nil {
		return err
	}
	if _, _, e := unix.Syscall(unix.SYS_SET_MEMPOLICY, mpolPreferred, uintptr(unsafe.Pointer(&mask)), 65); e != 0 {
		return e
	}
	return nil
}

// resetHostNode gives the calling thread the default policy back.
func resetHostNode() {
	_, _, _ = unix.Syscall(unix.SYS_SET_MEMPOLICY, mpolDefault, 0, 0)
}

// bindHostNode makes the pages of [p, p+n) not yet faulted in prefer node.
func bindHostNode(p unsafe.Pointer, n int, node int) error {
	mask, err := nodeMask(node)
	if err != nil {
		return err
	}
	if _, _, e := unix.Syscall6(unix.SYS_MBIND, uintptr(p), uintptr(n), mpolPreferred, uintptr(unsafe.Pointer(&mask)), 65, 0); e != 0 {
		return e
	}
	return nil
}

func unsafePointer(p *byte) unsafe.Pointer { return unsafe.Pointer(p) }
