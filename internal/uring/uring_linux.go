package uring

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Entries is the ring's size: the most reads in flight at once; more
// readers wait for a free entry.
const Entries = 256

// maxRead is the largest read sent through the ring (an entry's length is
// 32 bits); larger ones are a pread.
const maxRead = 1 << 30

const (
	opRead          = 22 // IORING_OP_READ
	featSingleMap   = 1  // IORING_FEAT_SINGLE_MMAP
	registerEventFD = 4  // IORING_REGISTER_EVENTFD
	offSQRing       = 0  // with IORING_FEAT_SINGLE_MMAP, the CQ ring too
	offSQEs         = 0x10000000
	sqeSize         = 64
	cqeSize         = 16
)

// params is struct io_uring_params.
type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  [10]uint32 // io_sqring_offsets
	cqOff                                                                  [10]uint32 // io_cqring_offsets
}

// Offsets of fields in io_sqring_offsets and io_cqring_offsets.
const (
	offHead, offTail, offMask = 0, 1, 2
	sqOffArray                = 6
	cqOffCQEs                 = 5
)

// request is one read waiting for its completion.
type request struct {
	buf  unsafe.Pointer // the reader's buffer, kept reachable (see Read)
	res  int32
	done chan struct{}
	// batch, for a read of ReadBatch, is where the reaper hands the
	// request back instead of signalling done; req is that read.
	batch chan *request
	req   Req
}

// ring is the process's io_uring and the state its readers share.
type ring struct {
	fd                     int
	sqHead, sqTail, sqMask *uint32
	sqArray                []uint32
	sqes                   []byte
	cqHead, cqTail, cqMask *uint32
	cqes                   []byte

	slots chan struct{} // a token per entry that may be in flight

	mu   sync.Mutex // guards what follows, and filling the SQ
	reqs [Entries]*request
	free []uint16 // request slots not in use

	ev *os.File // an eventfd the kernel signals on every completion

	// tid, for a ring of ReadBatch's own set up with ownFlags, is the
	// thread that set it up: the only one that may submit to it.
	tid int

	mem [][]byte // the mappings of the rings and the SQEs, for close
}

var (
	setupOnce sync.Once
	shared    *ring
	reqPool   = sync.Pool{New: func() any { return &request{done: make(chan struct{}, 1)} }}
	// disabled is set by tests to exercise the pread path.
	disabled atomic.Bool
	// sharedOnly is set by tests to exercise ReadBatch through the
	// process's ring, its path where no ring of its own can be set up.
	sharedOnly atomic.Bool
)

// Available reports whether reads go through io_uring here.
func Available() bool { return get() != nil }

func get() *ring {
	if disabled.Load() {
		return nil
	}
	setupOnce.Do(func() { shared, _ = setup() })
	return shared
}

func setup() (*ring, error) {
	r, err := mapRing(0)
	if err != nil {
		return nil, err
	}
	r.slots = make(chan struct{}, Entries)
	for i := range Entries {
		r.free = append(r.free, uint16(i))
	}
	// The SQ holds at most Entries reads, and the CQ (at least as large)
	// can never overflow.
	for range Entries {
		r.slots <- struct{}{}
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		r.close()
		return nil, err
	}
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerEventFD, uintptr(unsafe.Pointer(&efd)), 1, 0, 0); errno != 0 {
		unix.Close(efd)
		r.close()
		return nil, errno
	}
	r.ev = os.NewFile(uintptr(efd), "io_uring eventfd")
	go r.reap()
	return r, nil
}

// io_uring_setup flags for ReadBatch's rings of their own.
const (
	setupCoopTaskrun  = 1 << 8  // IORING_SETUP_COOP_TASKRUN (5.19)
	setupSingleIssuer = 1 << 12 // IORING_SETUP_SINGLE_ISSUER (6.0)
	setupDeferTaskrun = 1 << 13 // IORING_SETUP_DEFER_TASKRUN (6.1)
	// ownFlags: completions are run by the one thread that submits, when
	// it waits for them, with no interrupt of the thread when one
	// arrives, as fio sets up its ring.
	ownFlags = setupCoopTaskrun | setupSingleIssuer | setupDeferTaskrun
)

// mapRing sets up an io_uring of Entries entries with flags and maps its
// rings.
func mapRing(flags uint32) (*ring, error) {
	p := params{flags: flags}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, Entries, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, errno
	}
	r := &ring{fd: int(fd)}
	fail := func(err error) (*ring, error) {
		r.close()
		return nil, err
	}
	if p.features&featSingleMap == 0 || p.sqEntries < Entries || p.cqEntries < p.sqEntries {
		return fail(unix.ENOTSUP) // kernels before 5.4: keep pread
	}
	sqLen := int(p.sqOff[sqOffArray] + p.sqEntries*4)
	cqLen := int(p.cqOff[cqOffCQEs] + p.cqEntries*cqeSize)
	ringLen := max(sqLen, cqLen)
	rings, err := unix.Mmap(r.fd, offSQRing, ringLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fail(err)
	}
	r.mem = append(r.mem, rings)
	sqes, err := unix.Mmap(r.fd, offSQEs, int(p.sqEntries)*sqeSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fail(err)
	}
	r.mem = append(r.mem, sqes)
	u32 := func(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&rings[off])) }
	r.sqHead, r.sqTail, r.sqMask = u32(p.sqOff[offHead]), u32(p.sqOff[offTail]), u32(p.sqOff[offMask])
	r.sqArray = unsafe.Slice(u32(p.sqOff[sqOffArray]), p.sqEntries)
	r.sqes = sqes
	r.cqHead, r.cqTail, r.cqMask = u32(p.cqOff[offHead]), u32(p.cqOff[offTail]), u32(p.cqOff[offMask])
	r.cqes = rings[p.cqOff[cqOffCQEs] : p.cqOff[cqOffCQEs]+p.cqEntries*cqeSize]
	return r, nil
}

// close unmaps a ring that mapRing set up and closes its descriptor; no
// read may be in flight in it.
func (r *ring) close() {
	for _, m := range r.mem {
		_ = unix.Munmap(m)
	}
	r.mem = nil
	unix.Close(r.fd)
}

// Read reads into p at off from fd, as pread(2) would.
func Read(fd int, p []byte, off int64) (int, error) {
	r := get()
	switch {
	case off < 0:
		// The ring would read at the file position (an offset of -1).
		return 0, syscall.EINVAL
	case r == nil || !ringable(p):
		n, err := unix.Pread(fd, p, off)
		return max(n, 0), err
	}
	<-r.slots
	req := reqPool.Get().(*request)
	// Held by the request (and so on the heap, where buffers never move)
	// until the kernel is done with it.
	req.buf = unsafe.Pointer(unsafe.SliceData(p))
	r.submit(req, fd, len(p), off)
	<-req.done
	res := req.res
	req.buf = nil
	reqPool.Put(req)
	r.slots <- struct{}{}
	return result(res)
}

// ringable reports whether a read into p goes through the ring: pread
// answers empty reads itself, and an entry's length is 32 bits.
func ringable(p []byte) bool { return len(p) > 0 && len(p) <= maxRead }

// result is pread's answer for a completion's res: a count, or -errno.
func result(res int32) (int, error) {
	if res < 0 {
		return 0, syscall.Errno(-res)
	}
	return int(res), nil
}

// submit queues req's read in the SQ and hands the kernel what is queued
// there. An entry the kernel refuses for now (EAGAIN, EBUSY) stays queued
// and goes with the next submission, or the reaper's next round.
func (r *ring) submit(req *request, fd, n int, off int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	slot := r.free[len(r.free)-1]
	r.free = r.free[:len(r.free)-1]
	r.reqs[slot] = req
	r.queue(fd, req.buf, n, off, uint64(slot))
	_, _ = enter(r.fd)
}

// queue puts a read of n bytes into buf at off from fd in the SQ, with
// userData to tell its completion by; the kernel sees it at the next
// io_uring_enter. The caller keeps buf reachable until the completion.
func (r *ring) queue(fd int, buf unsafe.Pointer, n int, off int64, userData uint64) {
	tail := atomic.LoadUint32(r.sqTail)
	idx := tail & *r.sqMask
	sqe := r.sqes[idx*sqeSize : (idx+1)*sqeSize : (idx+1)*sqeSize]
	clear(sqe)
	sqe[0] = opRead
	*(*int32)(unsafe.Pointer(&sqe[4])) = int32(fd)
	*(*uint64)(unsafe.Pointer(&sqe[8])) = uint64(off)
	*(*uint64)(unsafe.Pointer(&sqe[16])) = uint64(uintptr(buf))
	*(*uint32)(unsafe.Pointer(&sqe[24])) = uint32(n)
	*(*uint64)(unsafe.Pointer(&sqe[32])) = userData
	r.sqArray[idx] = idx
	atomic.StoreUint32(r.sqTail, tail+1)
}

// reap wakes the readers of completed reads, then waits for the ring's
// eventfd in the Go runtime's poller, so that no thread blocks in a system
// call while reads are in flight. It runs for the life of the process.
func (r *ring) reap() {
	var buf [8]byte
	for {
		r.complete()
		if atomic.LoadUint32(r.sqHead) != atomic.LoadUint32(r.sqTail) {
			r.mu.Lock()
			_, _ = enter(r.fd) // entries the kernel refused before
			r.mu.Unlock()
		}
		_, _ = r.ev.Read(buf[:])
	}
}

// complete wakes the readers of every completion in the CQ.
func (r *ring) complete() {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	for ; head != tail; head++ {
		cqe := r.cqes[(head&*r.cqMask)*cqeSize:]
		slot := *(*uint64)(unsafe.Pointer(&cqe[0]))
		res := *(*int32)(unsafe.Pointer(&cqe[8]))
		r.mu.Lock()
		req := r.reqs[slot]
		r.reqs[slot] = nil
		r.free = append(r.free, uint16(slot))
		r.mu.Unlock()
		req.res = res
		if req.batch != nil {
			req.batch <- req // buffered for every read of the batch in flight
		} else {
			req.done <- struct{}{}
		}
	}
	atomic.StoreUint32(r.cqHead, head)
}

// enter is io_uring_enter(2) that submits what is queued in the SQ (the
// kernel takes no more than is queued) and does not wait: a call that
// does not block, made raw so that the Go scheduler does not prepare for
// one that might.
func enter(fd int) (uint32, error) {
	n, _, errno := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(fd), Entries, 0, 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return uint32(n), nil
}

// ReadBatch reads from fd what next hands out, keeping up to depth reads
// in flight from the calling goroutine alone, and hands each read to done
// with pread(2)'s count and error as it completes, in completion order.
// It returns once next has said there is no more and every read has
// been handed to done. next and done run on the calling goroutine, so
// they need no locks; a Req's buffer belongs to the kernel from next
// until its done, and may be handed out again after.
//
// Why: with Read, each completion wakes the goroutine that waits for it,
// and the Go runtime wakes a thread to run it. ReadBatch drives an
// io_uring of its own (taken from a few kept for reuse) as fio does: each
// read is submitted on its own io_uring_enter, the last of a refill with
// the wait for the next completion, the wait is made only when the CQ is
// empty, and every completion in the CQ is handed over before the next
// call, so no other goroutine or thread takes part
// (docs/PERFORMANCE-NOTES.md, loader). Where a ring of its own cannot be
// set up, the reads go through the process's ring and its reaper. Without
// io_uring, the reads are preads, one at a time.
func ReadBatch(fd, depth int, next func() (Req, bool), done func(r Req, n int, err error)) {
	r := get()
	if r == nil || depth <= 1 {
		for {
			q, ok := next()
			if !ok {
				return
			}
			n, err := Read(fd, q.Buf, q.Off)
			done(q, n, err)
		}
	}
	depth = min(depth, Entries)
	// A ring of its own takes reads from one thread only (ownFlags): the
	// goroutine stays on its thread for the batch.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if own := takeRing(unix.Gettid()); own != nil {
		defer putRing(own) // after a panic too: batch waits for its reads
		own.batch(fd, depth, next, done)
		return
	}
	r.sharedBatch(fd, depth, next, done)
}

// idle holds rings of ReadBatch's that no batch uses now, for the next.
var idle struct {
	sync.Mutex
	rings []*ring
}

// maxIdle is how many rings idle keeps; more are closed.
const maxIdle = 4

// takeRing is an idle ring thread tid may submit to, or a new one set up
// by it (with ownFlags, or none where the kernel refuses them); nil where
// none can be set up. The caller is locked to thread tid.
func takeRing(tid int) *ring {
	if sharedOnly.Load() {
		return nil
	}
	idle.Lock()
	for k := len(idle.rings) - 1; k >= 0; k-- {
		if r := idle.rings[k]; r.tid == 0 || r.tid == tid {
			idle.rings = slices.Delete(idle.rings, k, k+1)
			idle.Unlock()
			return r
		}
	}
	idle.Unlock()
	if r, err := mapRing(ownFlags); err == nil {
		r.tid = tid
		return r
	}
	r, err := mapRing(0) // before Linux 6.1
	if err != nil {
		return nil
	}
	return r
}

// putRing keeps r, with no read in flight, for the next batch, or closes
// it. The newest are kept: the threads that ran the last batches are the
// likeliest to run the next.
func putRing(r *ring) {
	idle.Lock()
	defer idle.Unlock()
	idle.rings = append(idle.rings, r)
	if len(idle.rings) > maxIdle {
		idle.rings[0].close()
		idle.rings = idle.rings[1:]
	}
}

// unplugged is the most reads one io_uring_enter submits in ReadBatch's
// own ring. The kernel plugs the block queue for more than two, and the
// device then gets them, and answers them, as one burst: 32 random 4 KiB
// reads submitted at once came back together, one round trip of the
// slowest per 32 reads, and fio's reads per second at the same depth
// (it submits one at a time) were out of reach. Submitted one at a time,
// as fio does, reads complete, and are replaced, one by one.
const unplugged = 1

// enterFlagGetEvents is IORING_ENTER_GETEVENTS.
const enterFlagGetEvents = 1

// queued is how many reads r's SQ holds that the kernel has not taken.
func (r *ring) queued() uint32 { return atomic.LoadUint32(r.sqTail) - atomic.LoadUint32(r.sqHead) }

// submitWait submits every read queued in r's SQ and, when they all went
// and the CQ is empty, waits until it holds at least one completion (as
// fio does, the CQ is looked at first: completions the kernel posted
// while this goroutine ran cost no system call). It blocks, so it is a
// system call the Go scheduler knows of. The kernel's refusals for now
// (EAGAIN, EBUSY) and interruptions leave the reads queued for the next
// call.
func (r *ring) submitWait() {
	queued := r.queued()
	var wait uintptr
	if atomic.LoadUint32(r.cqHead) == atomic.LoadUint32(r.cqTail) {
		wait = enterFlagGetEvents // else completions are there: no wait
	} else if queued == 0 {
		return // nothing to submit, completions to hand over: no system call
	}
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(queued), 1, wait, 0, 0)
	switch errno {
	case 0, unix.EINTR:
	case unix.EAGAIN, unix.EBUSY:
		runtime.Gosched()
	default:
		// The ring is this batch's and well formed: nothing else fails.
		panic(fmt.Sprintf("io_uring_enter of a private ring: %v", errno))
	}
}

// batch is ReadBatch through r, a ring of its own: next and done run here,
// between calls that submit and wait in one.
func (r *ring) batch(fd, depth int, next func() (Req, bool), done func(r Req, n int, err error)) {
	reqs := make([]Req, depth) // each slot's read, its buffer kept reachable
	free := make([]int, depth)
	for s := range free {
		free[s] = s
	}
	inflight := 0
	more := true
	// Whatever way this returns, a panic in next or done included, the
	// reads in flight are waited for: the kernel must be done with the
	// buffers before they are handed back, and with the ring before it is
	// used again.
	defer func() {
		for inflight > 0 {
			r.submitWait()
			head, tail := atomic.LoadUint32(r.cqHead), atomic.LoadUint32(r.cqTail)
			inflight -= int(tail - head)
			atomic.StoreUint32(r.cqHead, tail)
		}
	}()
	fill := func() {
		for more && inflight < depth {
			q, ok := nextRingable(fd, next, done)
			if !ok {
				more = false
				return
			}
			// The read queued before goes to the kernel first: one a call,
			// and the last one goes with the wait that follows.
			if r.queued() >= unplugged {
				_, _ = enter(r.fd)
			}
			s := free[len(free)-1]
			free = free[:len(free)-1]
			reqs[s] = q
			r.queue(fd, unsafe.Pointer(unsafe.SliceData(q.Buf)), len(q.Buf), q.Off, uint64(s))
			inflight++
		}
	}
	fill()
	for inflight > 0 {
		r.submitWait()
		head, tail := atomic.LoadUint32(r.cqHead), atomic.LoadUint32(r.cqTail)
		for ; head != tail; head++ {
			cqe := r.cqes[(head&*r.cqMask)*cqeSize:]
			s := *(*uint64)(unsafe.Pointer(&cqe[0]))
			res := *(*int32)(unsafe.Pointer(&cqe[8]))
			// Consumed before done runs, so that a panic there leaves the
			// CQ and the count in flight agreeing for the deferred wait.
			atomic.StoreUint32(r.cqHead, head+1)
			inflight--
			q := reqs[s]
			reqs[s] = Req{}
			free = append(free, int(s))
			n, err := result(res)
			done(q, n, err)
		}
		fill()
	}
}

// sharedBatch is ReadBatch through the process's ring: each read is
// submitted on its own and its completion comes back from the reaper.
func (r *ring) sharedBatch(fd, depth int, next func() (Req, bool), done func(r Req, n int, err error)) {
	back := make(chan *request, depth)
	spare := make([]*request, 0, depth) // requests back from the kernel, to use again
	inflight := 0
	more := true
	// Whatever way this returns, a panic in next or done included, the
	// reads in flight are waited for and their entries given back: the
	// kernel must be done with the buffers, and the ring is the process's.
	defer func() {
		for ; inflight > 0; inflight-- {
			<-back
			r.slots <- struct{}{}
		}
	}()
	fill := func() {
		for more && inflight < depth {
			q, ok := nextRingable(fd, next, done)
			if !ok {
				more = false
				return
			}
			<-r.slots
			var req *request
			if k := len(spare); k > 0 {
				req, spare = spare[k-1], spare[:k-1]
			} else {
				req = &request{batch: back}
			}
			req.req, req.buf = q, unsafe.Pointer(unsafe.SliceData(q.Buf))
			r.submit(req, fd, len(q.Buf), q.Off)
			inflight++
		}
	}
	fill()
	for inflight > 0 {
		req := <-back
		r.slots <- struct{}{}
		inflight--
		q := req.req
		req.req, req.buf = Req{}, nil
		spare = append(spare, req)
		n, err := result(req.res)
		done(q, n, err)
		fill()
	}
}

// nextRingable returns the next request a ring can take, answering the
// ones it cannot (a negative offset, a buffer the kernel would refuse)
// with pread on the way, as Read gives them; false when next has no more.
func nextRingable(fd int, next func() (Req, bool), done func(Req, int, error)) (Req, bool) {
	for {
		q, ok := next()
		if !ok {
			return Req{}, false
		}
		if q.Off >= 0 && ringable(q.Buf) {
			return q, true
		}
		n, err := Read(fd, q.Buf, q.Off)
		done(q, n, err)
	}
}
