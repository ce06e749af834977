package rdmafs

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// qpEndpoint is one connected RC queue pair with its completion queue. A
// poller goroutine sleeps on the completion channel (not in a busy loop)
// and hands each completion to the work request waiting for it, so any
// number of work requests, up to the send queue's depth, can be in flight
// at once.
//
// The endpoint's rule for buffers: run returns only once the device is
// done with the work request's memory, because the request completed, was
// flushed after the queue pair was moved to the error state, or the queue
// pair was destroyed. A caller may reuse the buffer as soon as run returns,
// whatever it returned.
type qpEndpoint struct {
	t  *verbsTransport
	id cmID
	cq rdmaCQ
	qp rdmaQP

	sendSlots chan struct{}
	recvs     chan workCompletion

	mu        sync.Mutex
	waiters   map[uint64]chan workCompletion
	nextWR    uint64
	broken    error
	brokenCh  chan struct{}
	qpGone    chan struct{}
	destroyed bool
	idle      chan struct{} // closed when broken and no work request is left
	started   bool
	pollDone  chan struct{}
	closeOnce sync.Once
	// onBreak runs once when the endpoint breaks (setOnBreak).
	onBreak func(error)
}

// recvBit marks receive work-request ids: a failed completion's opcode is
// undefined, its id is not.
const recvBit = 1 << 63

var errEndpointClosed = errors.New("queue pair closed")

// newEndpoint creates the completion queue and queue pair of id on pd.
func newEndpoint(t *verbsTransport, id cmID, dev rdmaDevice, pd rdmaPD, sendWR, recvWR int) (*qpEndpoint, error) {
	cq, err := dev.createCQ(sendWR + recvWR)
	if err != nil {
		return nil, fmt.Errorf("create completion queue on %s: %w", dev.name(), err)
	}
	qp, err := id.createQP(pd, cq, sendWR, recvWR)
	if err != nil {
		cq.destroy()
		return nil, fmt.Errorf("create queue pair on %s: %w", dev.name(), err)
	}
	return &qpEndpoint{
		t: t, id: id, cq: cq, qp: qp,
		sendSlots: make(chan struct{}, sendWR),
		recvs:     make(chan workCompletion, recvWR),
		waiters:   map[uint64]chan workCompletion{},
		brokenCh:  make(chan struct{}),
		qpGone:    make(chan struct{}),
		idle:      make(chan struct{}),
		pollDone:  make(chan struct{}),
	}, nil
}

// start starts the poller.
func (e *qpEndpoint) start() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.started {
		e.started = true
		go e.pollLoop()
	}
}

func (e *qpEndpoint) pollLoop() {
	defer close(e.pollDone)
	wcs := make([]workCompletion, 16)
	for {
		for {
			n, err := e.cq.poll(wcs)
			if err != nil {
				e.fail(fmt.Errorf("poll completion queue: %w", err))
				return
			}
			for _, wc := range wcs[:n] {
				e.dispatch(wc)
			}
			if n < len(wcs) {
				break
			}
		}
		if err := e.cq.wait(); err != nil {
			if !errors.Is(err, errChannelClosed) {
				e.fail(fmt.Errorf("wait for completions: %w", err))
			}
			return
		}
	}
}

func (e *qpEndpoint) dispatch(wc workCompletion) {
	if wc.id&recvBit != 0 {
		if wc.status != wcSuccess && wc.status != wcFlushErr {
			e.fail(fmt.Errorf("receive failed: %w", wc.err()))
		}
		e.recvs <- wc // never blocks: at most cap(recvs) receives are posted
		return
	}
	e.mu.Lock()
	ch := e.waiters[wc.id]
	delete(e.waiters, wc.id)
	e.maybeIdle()
	e.mu.Unlock()
	if ch != nil {
		ch <- wc
	}
	if wc.status != wcSuccess && wc.status != wcFlushErr {
		e.fail(wc.err())
	}
}

// maybeIdle closes idle once the endpoint is broken and nothing is in
// flight; the caller holds e.mu.
func (e *qpEndpoint) maybeIdle() {
	if e.broken != nil && len(e.waiters) == 0 {
		select {
		case <-e.idle:
		default:
			close(e.idle)
		}
	}
}

// fail breaks the endpoint: the queue pair goes to the error state, so
// everything outstanding is flushed.
func (e *qpEndpoint) fail(err error) {
	e.mu.Lock()
	if e.broken != nil {
		e.mu.Unlock()
		return
	}
	e.broken = err
	close(e.brokenCh)
	e.maybeIdle()
	if !e.destroyed {
		_ = e.qp.toError()
	}
	onBreak := e.onBreak
	e.mu.Unlock()
	if onBreak != nil {
		onBreak(err)
	}
}

// setOnBreak sets what runs when the endpoint breaks; at once if it
// already has.
func (e *qpEndpoint) setOnBreak(f func(error)) {
	e.mu.Lock()
	e.onBreak = f
	broken := e.broken
	e.mu.Unlock()
	if broken != nil {
		f(broken)
	}
}

func (e *qpEndpoint) err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.broken
}

// postRecv posts a receive unless the queue pair is gone.
func (e *qpEndpoint) postRecv(id, addr uint64, n, lkey uint32) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.destroyed {
		return errEndpointClosed
	}
	return e.qp.postRecv(id, addr, n, lkey)
}

// destroyQP destroys the queue pair: afterwards the device no longer
// touches any buffer of it.
func (e *qpEndpoint) destroyQP() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.destroyed {
		return
	}
	e.destroyed = true
	e.id.destroyQP()
	close(e.qpGone)
}

// run posts wr (signaled) and waits for its completion until deadline.
// What run returns, the device is done with wr's buffer (see qpEndpoint).
func (e *qpEndpoint) run(wr workRequest, deadline time.Time, what string) error {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case e.sendSlots <- struct{}{}:
	case <-e.brokenCh:
		return e.err()
	case <-timer.C:
		return fmt.Errorf("%s: send queue full for %v", what, e.t.opts.writeTimeout)
	}
	defer func() { <-e.sendSlots }()
	ch := make(chan workCompletion, 1)
	e.mu.Lock()
	if e.broken != nil {
		e.mu.Unlock()
		return e.broken
	}
	e.nextWR++
	wr.id, wr.signaled = e.nextWR&^recvBit, true
	e.waiters[wr.id] = ch
	if err := e.qp.post(wr); err != nil {
		delete(e.waiters, wr.id)
		e.mu.Unlock()
		err = fmt.Errorf("%s: %w", what, err)
		e.fail(err)
		return err
	}
	e.mu.Unlock()
	select {
	case wc := <-ch:
		if err := wc.err(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	case <-timer.C:
		e.fail(fmt.Errorf("%s not completed by its deadline: queue pair moved to the error state", what))
	case <-e.brokenCh:
	}
	// The request may still be in the device: it must be flushed (or the
	// queue pair destroyed) before the caller reuses its buffer.
	flush := time.NewTimer(e.t.opts.flushTimeout)
	defer flush.Stop()
	select {
	case <-ch:
	case <-e.qpGone:
	case <-flush.C:
		e.destroyQP()
	}
	return fmt.Errorf("%s: %w", what, e.err())
}

// close breaks the endpoint, lets outstanding work requests flush (at
// most flushTimeout), destroys the queue pair and the completion queue.
func (e *qpEndpoint) close() {
	e.closeOnce.Do(func() {
		e.fail(errEndpointClosed)
		select {
		case <-e.idle:
		case <-time.After(e.t.opts.flushTimeout):
		}
		e.destroyQP()
		e.cq.interrupt()
		e.mu.Lock()
		started := e.started
		e.started = true // no poller from now on
		e.mu.Unlock()
		if started {
			<-e.pollDone
		}
		_ = e.cq.destroy()
	})
}
