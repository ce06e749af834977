package main

import (
	"os"
	"runtime"
	"sync"
)

// blockingIOProcs is how many Go scheduler slots (Ps) stage and load add
// beyond the cores: one per default loader worker.
const blockingIOProcs = 8

// roomForBlockingIO raises GOMAXPROCS by blockingIOProcs, unless the
// GOMAXPROCS environment variable set it. Only the first call raises it.
//
// A goroutine in pread or pwrite of a disk file holds its P for the whole
// call, and the scheduler hands that P to a runnable goroutine only once
// sysmon notices, after up to 10 ms. With one P per core, the workers'
// disk reads and the stage writers' writes then keep the hashing
// goroutines waiting with the cores idle: on 2 cores, a stage of 16 x 64
// MiB with SHA-256 used 1.2 of them and took 0.66 s (median of 4), against
// 0.54 s with 10 Ps. The extra Ps only let goroutines be scheduled while
// others block: the kernel still shares the cores among the threads.
var roomForBlockingIO = sync.OnceFunc(func() {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + blockingIOProcs)
})
