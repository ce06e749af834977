// Package uring reads files through one io_uring shared by the whole
// process, for many small reads in flight at once (4 KiB random reads of
// an O_DIRECT file, 32 at a time).
//
// Each pread(2) of an O_DIRECT file blocks its thread until the device
// answers: on a VM, the thread switches and wake-ups of 32 blocked
// readers, and the Go runtime handing their processors around, took most
// of the CPU of a random-read benchmark, and fio, which submits the same
// reads through io_uring, did several times the reads per second
// (docs/PERFORMANCE-NOTES.md, loader).
// Through the ring, a read is queued and submitted without blocking, and
// no thread waits per read: one goroutine waits for completions on an
// eventfd the kernel signals, in the Go runtime's poller, and wakes the
// readers.
//
// Read is pread(2) for callers that cannot tell the difference: the same
// byte counts, short reads and errors (as syscall.Errno). ReadBatch is for
// one goroutine with many reads to make: it keeps up to a given number in
// flight through an io_uring of its own, submitting each read as it goes
// and waiting for completions in the same system call, as fio does, with
// no other goroutine or thread involved.
// Where io_uring is missing or refused (old kernels,
// kernel.io_uring_disabled, seccomp profiles), Available reports false and
// Read calls pread itself.
package uring

// Reaper names the function of the goroutine that waits for completions:
// it runs for the life of the process once a read has gone through the
// ring, and leak checks (goleak.IgnoreAnyFunction) must let it be.
const Reaper = "github.com/gdsload/gdsload/internal/uring.(*ring).reap"

// Req is one read of ReadBatch: len(Buf) bytes at Off. Tag is the
// caller's, handed back with the read.
type Req struct {
	Buf []byte
	Off int64
	Tag int
}
