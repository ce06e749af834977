package rdmafs

import (
	"sync"
	"syscall"
)

// The loopback data path. A send work request stays in the send queue, in
// flight, until its requester's completion queue is polled: only then is it
// "transmitted", which reads the local buffer at that moment (a buffer
// reused before its completion was polled sends whatever it holds then).
// The responder checks the key and range on arrival, as hardware does,
// and a violation fails both queue pairs. Accepted WRITE data is not
// visible in the responder's memory yet: it is placed when a later SEND or
// WRITE_WITH_IMM on the same queue pair delivers its receive completion
// (the only ordering RC promises), when the target region is deregistered,
// or when the responder's queue pair fails or goes away. A SEND finding no
// receive posted waits (RNR retry for ever). Moving a queue pair to the
// error state completes everything outstanding with a flush error at the
// device's pace: when its completion queue is next polled; until then a
// send in progress may still read its buffer. A stalled queue pair (a
// stuck link, a wedged device) neither transmits nor flushes until it
// recovers; destroying it is the only way to end its work requests at
// once.

type simQPState int

const (
	qpsInit simQPState = iota
	qpsRTS
	qpsErr
)

type simCQ struct {
	f     *simFabric
	dev   *simDevice
	q     []workCompletion
	qps   []*simQP
	ev    chan struct{}
	intr  chan struct{}
	once  sync.Once
	dead  bool
	polls int
	// waiting counts the callers inside wait.
	waiting int
}

func (d *simDevice) createCQ(entries int) (rdmaCQ, error) {
	f := d.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if d.removed {
		return nil, syscall.ENODEV
	}
	f.stats.cqs++
	f.stats.cqCreates++
	return &simCQ{f: f, dev: d, ev: make(chan struct{}, 1), intr: make(chan struct{})}, nil
}

// signal raises the completion event (the CQ re-arms in wait).
func (c *simCQ) signal() {
	select {
	case c.ev <- struct{}{}:
	default:
	}
}

func (c *simCQ) push(wc workCompletion) {
	c.q = append(c.q, wc)
	c.signal()
}

func (c *simCQ) poll(out []workCompletion) (int, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	c.polls++
	if c.dead {
		f.violate("ibv_poll_cq on a destroyed completion queue")
		return 0, syscall.EINVAL
	}
	for _, qp := range c.qps {
		f.kick(qp)
	}
	n := copy(out, c.q)
	c.q = c.q[n:]
	return n, nil
}

func (c *simCQ) wait() error {
	select {
	case <-c.intr:
		return errChannelClosed
	default:
	}
	c.f.mu.Lock()
	c.waiting++
	c.f.mu.Unlock()
	defer func() {
		c.f.mu.Lock()
		c.waiting--
		c.f.mu.Unlock()
	}()
	select {
	case <-c.ev:
		return nil
	case <-c.intr:
		return errChannelClosed
	}
}

func (c *simCQ) interrupt() { c.once.Do(func() { close(c.intr) }) }

func (c *simCQ) destroy() error {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	c.interrupt()
	if c.dead {
		f.violate("ibv_destroy_cq twice")
		return syscall.EINVAL
	}
	if len(c.qps) > 0 {
		f.violate("ibv_destroy_cq with %d queue pairs on it", len(c.qps))
		return syscall.EBUSY
	}
	c.dead = true
	f.stats.cqs--
	return nil
}

type simRecv struct {
	id, addr uint64
	n, lkey  uint32
}

// simInbound is a WRITE the responder accepted and has not placed yet.
type simInbound struct {
	mr   *simMR
	addr uint64
	data []byte
}

type simQP struct {
	f     *simFabric
	id    *simID
	pd    *simPD
	cq    *simCQ
	state simQPState
	peer  *simQP
	dead  bool

	sq                 []workRequest
	rq                 []simRecv
	inbound            []simInbound
	sendCap, recvCap   int
	responderResources uint8
	// stalled: the link or the device is stuck: nothing is transmitted
	// or flushed.
	stalled bool
	tapped  []byte
}

func (qp *simQP) post(wr workRequest) error {
	f := qp.f
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case qp.dead:
		f.violate("ibv_post_send on a destroyed queue pair")
		return syscall.EINVAL
	case qp.state == qpsInit:
		return syscall.EINVAL
	case qp.state == qpsErr:
		qp.sq = append(qp.sq, wr)
		qp.cq.signal()
		return nil
	case len(qp.sq) >= qp.sendCap:
		return syscall.ENOMEM
	}
	qp.sq = append(qp.sq, wr)
	f.stats.maxOutstanding = max(f.stats.maxOutstanding, len(qp.sq))
	if u := f.unstallOnPost; u[0] == qp && u[1] != nil {
		f.unstallOnPost = [2]*simQP{}
		u[1].stalled = false
		f.kick(u[1])
	}
	if !qp.stalled {
		qp.cq.signal()
	}
	return nil
}

func (qp *simQP) postRecv(id uint64, addr uint64, n uint32, lkey uint32) error {
	f := qp.f
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case qp.dead:
		f.violate("ibv_post_recv on a destroyed queue pair")
		return syscall.EINVAL
	case qp.state == qpsErr:
		qp.rq = append(qp.rq, simRecv{id: id, addr: addr, n: n, lkey: lkey})
		qp.cq.signal()
		return nil
	case len(qp.rq) >= qp.recvCap:
		return syscall.ENOMEM
	}
	qp.rq = append(qp.rq, simRecv{id: id, addr: addr, n: n, lkey: lkey})
	if p := qp.peer; p != nil && len(p.sq) > 0 && !p.stalled {
		p.cq.signal() // an RNR-blocked SEND can go now
	}
	return nil
}

func (qp *simQP) toError() error {
	f := qp.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if qp.dead {
		f.violate("ibv_modify_qp on a destroyed queue pair")
		return syscall.EINVAL
	}
	f.qpError(qp)
	return nil
}

// qpError fails qp: accepted writes land; everything outstanding will be
// flushed, by the device, later (see flush). The caller holds f.mu.
func (f *simFabric) qpError(qp *simQP) {
	if qp.state == qpsErr {
		return
	}
	f.place(qp)
	qp.state = qpsErr
	if !qp.stalled {
		qp.cq.signal()
	}
}

// flush completes qp's outstanding work requests with a flush error. Until
// then the device may still be working on them: a send in progress reads
// its buffer up to its flush completion. The caller holds f.mu.
func (f *simFabric) flush(qp *simQP) {
	for _, wr := range qp.sq {
		if f.tap && wr.op != wrRead && wr.n > 0 {
			if m := qp.pd.mr(wr.lkey); m != nil && m.contains(wr.addr, uint64(wr.n)) {
				qp.tapped = append(qp.tapped, m.slice(wr.addr, uint64(wr.n))...)
			}
		}
		qp.cq.push(workCompletion{id: wr.id, status: wcFlushErr, op: int(wr.op)})
	}
	qp.sq = nil
	for _, r := range qp.rq {
		qp.cq.push(workCompletion{id: r.id, status: wcFlushErr, op: wcOpRecv})
	}
	qp.rq = nil
}

// place makes qp's accepted writes visible, in order.
func (f *simFabric) place(qp *simQP) {
	for _, w := range qp.inbound {
		if !w.mr.dead {
			copy(w.mr.slice(w.addr, uint64(len(w.data))), w.data)
		}
	}
	qp.inbound = nil
}

// placeInbound places the accepted writes that match, on every queue pair.
func (f *simFabric) placeInbound(match func(*simInbound) bool) {
	for qp := range f.qps {
		keep := qp.inbound[:0]
		for i := range qp.inbound {
			w := &qp.inbound[i]
			if match(w) {
				copy(w.mr.slice(w.addr, uint64(len(w.data))), w.data)
			} else {
				keep = append(keep, *w)
			}
		}
		qp.inbound = keep
	}
}

const simBlocked = -1

// kick transmits qp's send queue in order until it is empty or blocked,
// or flushes a failed queue pair. A stalled queue pair does neither. The
// caller holds f.mu.
func (f *simFabric) kick(qp *simQP) {
	if qp.stalled || qp.dead {
		return
	}
	if qp.state == qpsErr {
		f.flush(qp)
		return
	}
	for len(qp.sq) > 0 && qp.state == qpsRTS {
		wr := qp.sq[0]
		status := f.transmit(qp, wr)
		if status == simBlocked {
			return
		}
		qp.sq = qp.sq[1:]
		if status != wcSuccess {
			qp.cq.push(workCompletion{id: wr.id, status: status, op: int(wr.op)})
			f.qpError(qp)
			f.flush(qp)
			return
		}
		if wr.signaled {
			qp.cq.push(workCompletion{id: wr.id, status: wcSuccess, op: completionOp(wr.op), byteLen: wr.n})
		}
	}
}

func completionOp(op wrOp) int {
	switch op {
	case wrWrite, wrWriteImm:
		return wcOpWrite
	case wrRead:
		return wcOpRead
	}
	return wcOpSend
}

// responderFault fails the responder too, as a remote access or invalid
// request error does on RC, and returns the requester's status.
func (f *simFabric) responderFault(p *simQP, status int) int {
	f.qpError(p)
	return status
}

// transmit sends one work request: its status, or simBlocked (no receive
// posted at the peer).
func (f *simFabric) transmit(qp *simQP, wr workRequest) int {
	var data []byte
	if wr.op != wrRead && wr.n > 0 {
		m := qp.pd.mr(wr.lkey)
		if m == nil || !m.contains(wr.addr, uint64(wr.n)) {
			return wcLocProtErr
		}
		data = append([]byte(nil), m.slice(wr.addr, uint64(wr.n))...) // the device reads the buffer now
	}
	p := qp.peer
	if p == nil || p.dead || p.state != qpsRTS {
		return wcRetryExcErr
	}
	if wr.op != wrRead && f.tap {
		qp.tapped = append(qp.tapped, data...)
	}
	remote := func(access int, n uint32) (*simMR, bool) {
		rm := p.pd.mr(wr.rkey)
		return rm, rm != nil && rm.access&access != 0 && rm.contains(wr.raddr, uint64(n))
	}
	switch wr.op {
	case wrWrite, wrWriteImm:
		if wr.op == wrWriteImm && len(p.rq) == 0 {
			return simBlocked
		}
		if wr.n > 0 {
			rm, ok := remote(accessRemoteWrite, wr.n)
			if !ok {
				return f.responderFault(p, wcRemAccessErr)
			}
			p.inbound = append(p.inbound, simInbound{mr: rm, addr: wr.raddr, data: data})
		}
		if wr.op == wrWriteImm {
			r := p.rq[0]
			p.rq = p.rq[1:]
			f.place(p)
			p.cq.push(workCompletion{id: r.id, status: wcSuccess, op: wcOpRecvWriteImm, imm: wr.imm, hasImm: true})
		}
	case wrSend:
		if len(p.rq) == 0 {
			return simBlocked
		}
		r := p.rq[0]
		m := p.pd.mr(r.lkey)
		if m == nil || m.access&accessLocalWrite == 0 || !m.contains(r.addr, uint64(r.n)) {
			p.rq = p.rq[1:]
			p.cq.push(workCompletion{id: r.id, status: wcLocProtErr, op: wcOpRecv})
			return f.responderFault(p, wcRemOpErr)
		}
		if wr.n > r.n {
			p.rq = p.rq[1:]
			p.cq.push(workCompletion{id: r.id, status: wcLocLenErr, op: wcOpRecv})
			return f.responderFault(p, wcRemInvReqErr)
		}
		p.rq = p.rq[1:]
		f.place(p) // RC: the WRITEs before this SEND land before its completion
		copy(m.slice(r.addr, uint64(wr.n)), data)
		p.cq.push(workCompletion{id: r.id, status: wcSuccess, op: wcOpRecv, byteLen: wr.n})
	case wrRead:
		if p.responderResources == 0 {
			return f.responderFault(p, wcRemInvReqErr)
		}
		rm, ok := remote(accessRemoteRead, wr.n)
		if !ok {
			return f.responderFault(p, wcRemAccessErr)
		}
		m := qp.pd.mr(wr.lkey)
		if m == nil || m.access&accessLocalWrite == 0 || !m.contains(wr.addr, uint64(wr.n)) {
			return wcLocProtErr
		}
		copy(m.slice(wr.addr, uint64(wr.n)), rm.slice(wr.raddr, uint64(wr.n)))
	default:
		return wcLocQPOpErr
	}
	return wcSuccess
}

// destroyQP removes qp: outstanding requests vanish without completions,
// accepted writes land. The caller holds f.mu.
func (f *simFabric) destroyQP(qp *simQP) {
	f.place(qp)
	qp.dead = true
	qp.sq, qp.rq = nil, nil
	qp.pd.qps--
	for i, q := range qp.cq.qps {
		if q == qp {
			qp.cq.qps = append(qp.cq.qps[:i], qp.cq.qps[i+1:]...)
			break
		}
	}
	delete(f.qps, qp)
	f.stats.qps--
}

// stall stops (or restarts) transmission on qp, as a stuck link would.
func (f *simFabric) stall(qp *simQP, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	qp.stalled = on
	if !on {
		qp.cq.signal()
	}
}

// polls is how often cq was polled.
func (f *simFabric) polls(cq *simCQ) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return cq.polls
}

// parked reports whether a caller waits on cq's completion event with no
// event raised and no completion queued, so that only a new completion
// can wake it, and how often cq was polled until then.
func (f *simFabric) parked(cq *simCQ) (bool, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return cq.waiting > 0 && len(cq.ev) == 0 && len(cq.q) == 0, cq.polls
}
