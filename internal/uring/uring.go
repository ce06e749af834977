// Package uring reads files through one io_uring shared by the whole
// process, for many small reads in flight at once (4 KiB random reads of
// an O_DIRECT file, 32 at a time).
//
// Each pread(2) of an O_DIRECT file is a trip to the device on its own:
// on the development VM, the virtio doorbell of every request (a VM exit)
// and the wake-up of its blocked thread took three quarters of the CPU of
// a random-read benchmark, and fio, which submits the same reads through
// io_uring, did four times the reads per second. Through the ring, reads
// that arrive while others are being submitted are submitted together in
// one io_uring_enter(2), and no thread blocks per read: one goroutine
// waits for completions and wakes the readers.
//
// Read is pread(2) for callers that cannot tell the difference: the same
// byte counts, short reads and errors (as syscall.Errno). Where io_uring
// is missing or refused (old kernels, kernel.io_uring_disabled, seccomp
// profiles), Available reports false and Read calls pread itself.
package uring

// Reaper names the function of the goroutine that waits for completions:
// it runs for the life of the process once a read has gone through the
// ring, and leak checks (goleak.IgnoreAnyFunction) must let it be.
const Reaper = "github.com/gdsload/gdsload/internal/uring.(*ring).reap"
