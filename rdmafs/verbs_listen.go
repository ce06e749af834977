package rdmafs

import (
	"crypto/hmac"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// verbsListener accepts TCP control connections, and on port + 1 the
// queue pairs of sessions that authenticated on them.
//
// Lifetime: the rdma_cm event channel carries the listening identifier and
// every accepted one, so it is reference counted: the listener holds one
// reference until Close, each server endpoint one until its identifier is
// destroyed. The event loop runs, and the channel, the protection domains
// and the buffer registrations live, until the last reference is dropped;
// closing the listener while connections drain is safe.
type verbsListener struct {
	t   *verbsTransport
	tcp net.Listener
	ch  cmChannel
	lid cmID
	log *slog.Logger

	loopDone chan struct{}

	mu       sync.Mutex
	closed   bool
	removed  error // the device under the listening identifier went away
	refs     int
	sessions map[pairingID]*pendingSession
	eps      map[uintptr]*serverEndpoint // by identifier key
	devs     map[uintptr]*serverDevice   // by device key
	pool     [][]byte
	rejects  int
}

// pendingSession is an authenticated session waiting for its queue pair.
// Exactly one of finish (by the listener) and abandon (by the waiter who
// gave up) wins.
type pendingSession struct {
	s       pairingSession
	expires time.Time

	mu        sync.Mutex
	done      chan struct{}
	ep        *serverEndpoint
	err       error
	finished  bool
	abandoned bool
}

// serverEndpoint is an accepted queue pair before and after its session
// took it.
type serverEndpoint struct {
	*qpEndpoint
	dev     *serverDevice
	session *pendingSession
	conn    *verbsServerConn // set once paired
}

// serverDevice is what the server keeps per RDMA device: one protection
// domain, the buffer pool registered once, and registered slots for
// frames.
type serverDevice struct {
	dev  rdmaDevice
	pd   rdmaPD
	mrs  map[uintptr]rdmaMR // by buffer address
	pins runtime.Pinner
	ctrl []byte
	// slots hands out indexes of ctrl's slotSize pieces.
	slots  chan int
	ctrlMR rdmaMR
	conns  int
}

func newVerbsListener(t *verbsTransport, tl net.Listener) (*verbsListener, error) {
	tap, err := tcpAddrPort(tl.Addr())
	if err != nil {
		return nil, err
	}
	rap, err := rdmaAddr(tap)
	if err != nil {
		return nil, err
	}
	ch, err := t.stack.newEventChannel()
	if err != nil {
		return nil, err
	}
	lid, err := ch.createID()
	if err != nil {
		ch.destroy()
		return nil, err
	}
	if err := lid.bind(rap); err != nil {
		lid.destroy()
		ch.destroy()
		return nil, fmt.Errorf("bind %s (is an RDMA device on this address?): %w", rap, err)
	}
	if err := lid.listen(128); err != nil {
		lid.destroy()
		ch.destroy()
		return nil, err
	}
	l := &verbsListener{
		t: t, tcp: tl, ch: ch, lid: lid, log: slog.Default(),
		loopDone: make(chan struct{}),
		refs:     1,
		sessions: map[pairingID]*pendingSession{},
		eps:      map[uintptr]*serverEndpoint{},
		devs:     map[uintptr]*serverDevice{},
	}
	go l.cmLoop()
	return l, nil
}

// prepare registers the server's buffer pool with every RDMA device the
// listener may accept queue pairs on, once, for local access only: the
// device reads the buffers to send them; nobody may write or read them
// remotely. Server.Serve calls it before accepting. A registration that
// fails (usually the locked-memory limit) fails Serve.
func (l *verbsListener) prepare(pool [][]byte, log *slog.Logger) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if log != nil {
		l.log = log
	}
	l.pool = pool
	devs := []rdmaDevice{}
	if d := l.lid.device(); d != nil {
		devs = append(devs, d)
	} else {
		all, err := l.t.stack.devices()
		if err != nil {
			return err
		}
		devs = all
	}
	for _, d := range devs {
		if _, err := l.deviceLocked(d); err != nil {
			return err
		}
	}
	return nil
}

// deviceLocked returns the server's state for d, setting it up on first
// use; the caller holds l.mu.
func (l *verbsListener) deviceLocked(d rdmaDevice) (*serverDevice, error) {
	if sd := l.devs[d.key()]; sd != nil {
		return sd, nil
	}
	pd, err := d.allocPD()
	if err != nil {
		return nil, fmt.Errorf("RDMA device %s: %w", d.name(), err)
	}
	sd := &serverDevice{dev: d, pd: pd, mrs: map[uintptr]rdmaMR{}, slots: make(chan int, l.t.opts.ctrlSlots)}
	fail := func(err error) (*serverDevice, error) {
		sd.release(l.t)
		return nil, err
	}
	total := 0
	for _, b := range l.pool {
		if _, err := sd.register(b); err != nil {
			return fail(memlockError(fmt.Sprintf("RDMA device %s: buffer pool (%d buffers, %d bytes registered so far)", d.name(), len(l.pool), total), len(b), err))
		}
		total += len(b)
	}
	sd.ctrl = make([]byte, l.t.opts.ctrlSlots*slotSize)
	sd.pins.Pin(&sd.ctrl[0])
	if sd.ctrlMR, err = pd.regMR(sd.ctrl, 0); err != nil {
		return fail(memlockError(fmt.Sprintf("RDMA device %s: frame buffers", d.name()), len(sd.ctrl), err))
	}
	for i := range l.t.opts.ctrlSlots {
		sd.slots <- i
	}
	l.devs[d.key()] = sd
	return sd, nil
}

// register registers b for local access (once); the caller serializes.
func (sd *serverDevice) register(b []byte) (rdmaMR, error) {
	k := uintptr(unsafe.Pointer(&b[0]))
	if mr := sd.mrs[k]; mr != nil {
		return mr, nil
	}
	sd.pins.Pin(&b[0])
	mr, err := sd.pd.regMR(b, 0)
	if err != nil {
		return nil, err
	}
	sd.mrs[k] = mr
	return mr, nil
}

// release deregisters everything and frees the protection domain. A
// registration that cannot be undone keeps its memory pinned for ever.
func (sd *serverDevice) release(t *verbsTransport) error {
	var errs []error
	keep := false
	for k, mr := range sd.mrs {
		if err := mr.dereg(); err != nil {
			errs = append(errs, err)
			keep = true
		}
		delete(sd.mrs, k)
	}
	if sd.ctrlMR != nil {
		if err := sd.ctrlMR.dereg(); err != nil {
			errs = append(errs, err)
			keep = true
		}
	}
	if keep {
		t.leak(&sd.pins)
		return errors.Join(errs...)
	}
	sd.pins.Unpin()
	if err := sd.pd.dealloc(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// poolMR returns the registration of the pool buffer holding p,
// registering a buffer the pool did not announce (once per device).
func (l *verbsListener) poolMR(sd *serverDevice, p []byte) (rdmaMR, error) {
	base := p[:cap(p)]
	l.mu.Lock()
	defer l.mu.Unlock()
	mr, err := sd.register(base)
	if err != nil {
		return nil, memlockError("RDMA device "+sd.dev.name()+": server buffer", len(base), err)
	}
	return mr, nil
}

func (l *verbsListener) Addr() net.Addr { return l.tcp.Addr() }

// Accept returns the next TCP control connection; its queue pair comes
// with the handshake.
func (l *verbsListener) Accept() (net.Conn, error) {
	c, err := l.tcp.Accept()
	if err != nil {
		l.mu.Lock()
		removed := l.removed
		l.mu.Unlock()
		if removed != nil {
			return nil, removed
		}
		return nil, err
	}
	tuneTCP(c)
	return &verbsServerConn{Conn: c, l: l}, nil
}

// Close stops accepting; connections already paired keep working until
// they close.
func (l *verbsListener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	for id, s := range l.sessions {
		s.finish(nil, errors.New("server listener closed"))
		delete(l.sessions, id)
	}
	l.mu.Unlock()
	err := l.tcp.Close()
	l.lid.destroy()
	l.release()
	return err
}

// release drops one reference; the last one stops the event loop, which
// frees everything.
func (l *verbsListener) release() {
	l.mu.Lock()
	l.refs--
	last := l.refs == 0
	l.mu.Unlock()
	if last {
		l.ch.interrupt()
	}
}

// expect registers a session awaiting its queue pair.
func (l *verbsListener) expect(s pairingSession) (*pendingSession, error) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errors.New("server listener closed")
	}
	for id, p := range l.sessions {
		if now.After(p.expires) {
			p.finish(nil, errors.New("queue pair did not connect in time"))
			delete(l.sessions, id)
		}
	}
	if len(l.sessions) >= l.t.opts.maxPending {
		return nil, fmt.Errorf("%d sessions already wait for their queue pair: server busy", len(l.sessions))
	}
	p := &pendingSession{s: s, expires: now.Add(l.t.opts.pairTimeout), done: make(chan struct{})}
	l.sessions[s.id] = p
	return p, nil
}

// withdraw removes a session that stopped waiting.
func (l *verbsListener) withdraw(p *pendingSession) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sessions[p.s.id] == p {
		delete(l.sessions, p.s.id)
	}
}

// finish hands the session its endpoint (nil with err when pairing
// failed). It returns false when the waiter already gave up: the caller
// then disposes of ep.
func (p *pendingSession) finish(ep *serverEndpoint, err error) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished || p.abandoned {
		return false
	}
	p.finished, p.ep, p.err = true, ep, err
	close(p.done)
	return true
}

// abandon gives up waiting; false when finish came first (the result is
// then in ep and err).
func (p *pendingSession) abandon() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return false
	}
	p.abandoned = true
	return true
}

// cmLoop handles rdma_cm events until the last reference is dropped. A
// failing channel is retried with growing pauses, never in a busy loop.
func (l *verbsListener) cmLoop() {
	defer close(l.loopDone)
	var delay time.Duration
	for {
		ev, err := l.ch.next()
		if errors.Is(err, errChannelClosed) {
			l.shutdown()
			return
		}
		if err != nil {
			delay = min(max(2*delay, 10*time.Millisecond), time.Second)
			if delay < 20*time.Millisecond || delay == time.Second {
				l.log.Warn("rdma_cm event channel failing; retrying", "err", err, "retry_in", delay)
			}
			time.Sleep(delay)
			continue
		}
		delay = 0
		l.handle(ev)
	}
}

// shutdown frees the per-device state and the channel, once nothing uses
// them.
func (l *verbsListener) shutdown() {
	l.mu.Lock()
	devs := l.devs
	l.devs = map[uintptr]*serverDevice{}
	l.mu.Unlock()
	for _, sd := range devs {
		if err := sd.release(l.t); err != nil {
			l.log.Error("rdma: releasing the server's registrations failed; their memory stays pinned", "device", sd.dev.name(), "err", err)
		}
	}
	l.ch.destroy()
}

func (l *verbsListener) handle(ev cmEvent) {
	if ev.kind == evConnectRequest {
		l.onConnectRequest(ev)
		return
	}
	if ev.id == nil {
		return
	}
	if ev.id.key() == l.lid.key() {
		if ev.kind == evDeviceRemoval {
			l.mu.Lock()
			l.removed = errors.New("the RDMA device the server listens on was removed")
			l.mu.Unlock()
			l.log.Error("rdma: device removed under the listener; no more queue pairs will be accepted")
			l.tcp.Close()
		}
		return
	}
	l.mu.Lock()
	ep := l.eps[ev.id.key()]
	l.mu.Unlock()
	if ep == nil {
		return
	}
	switch ev.kind {
	case evEstablished:
		l.mu.Lock()
		s := ep.session
		ep.session = nil
		l.mu.Unlock()
		if s == nil {
			return
		}
		ep.start()
		if !s.finish(ep, nil) {
			l.dropEndpoint(ep, errors.New("session stopped waiting for its queue pair"))
		}
	case evRejected, evConnectError, evUnreachable:
		l.dropEndpoint(ep, fmt.Errorf("queue pair failed to connect: %s (status %d)", ev.kind, ev.status))
	case evDisconnected, evDeviceRemoval:
		l.dropEndpoint(ep, fmt.Errorf("queue pair: %s", ev.kind))
	}
}

// onConnectRequest accepts a queue pair whose private data names a
// waiting session with the right tag; anything else is rejected before
// any resource is allocated for it.
func (l *verbsListener) onConnectRequest(ev cmEvent) {
	id := ev.id
	reject := func(reason byte) {
		l.mu.Lock()
		l.rejects++
		l.mu.Unlock()
		_ = id.reject(encodeReject(reason))
		_ = id.destroy()
	}
	got, err := parsePairing(ev.priv)
	l.mu.Lock()
	p := l.sessions[got.id]
	ok := err == nil && p != nil && !l.closed && time.Now().Before(p.expires) && hmac.Equal(got.tag[:], p.s.tag[:])
	if ok {
		delete(l.sessions, got.id) // a session pairs once
	}
	closed := l.closed
	l.mu.Unlock()
	switch {
	case closed:
		reject(rejectClosing)
		return
	case !ok:
		reject(rejectAuth)
		return
	}
	ep, err := l.newServerEndpoint(id)
	if err != nil {
		l.log.Error("rdma: cannot set up a queue pair", "err", err)
		reject(rejectResources)
		p.finish(nil, err)
		return
	}
	ep.session = p
	if err := id.accept(connParams{}); err != nil {
		l.dropEndpoint(ep, fmt.Errorf("rdma_accept: %w", err))
		return
	}
}

// newServerEndpoint sets up the queue pair of an accepted identifier on
// its device's protection domain. It takes a reference on the listener.
func (l *verbsListener) newServerEndpoint(id cmID) (*serverEndpoint, error) {
	d := id.device()
	if d == nil {
		return nil, errors.New("connect request on no device")
	}
	l.mu.Lock()
	sd, err := l.deviceLocked(d)
	if err == nil {
		sd.conns++
	}
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	qe, err := newEndpoint(l.t, id, d, sd.pd, l.t.opts.sendWR, 1)
	if err != nil {
		l.mu.Lock()
		sd.conns--
		l.mu.Unlock()
		return nil, err
	}
	ep := &serverEndpoint{qpEndpoint: qe, dev: sd}
	l.mu.Lock()
	l.eps[id.key()] = ep
	l.refs++
	l.mu.Unlock()
	return ep, nil
}

// dropEndpoint tears an endpoint down, failing its session or closing its
// connection.
func (l *verbsListener) dropEndpoint(ep *serverEndpoint, why error) {
	l.mu.Lock()
	s, c := ep.session, ep.conn
	ep.session = nil
	l.mu.Unlock()
	if s != nil {
		s.finish(nil, why)
	}
	ep.fail(why)
	if c != nil {
		// The connection's Close frees the endpoint.
		c.Close()
		return
	}
	l.closeEndpoint(ep)
}

// closeEndpoint frees an endpoint's queue pair and identifier and drops
// its reference. Safe to call more than once.
func (l *verbsListener) closeEndpoint(ep *serverEndpoint) {
	l.mu.Lock()
	if l.eps[ep.id.key()] != ep {
		l.mu.Unlock()
		return
	}
	delete(l.eps, ep.id.key())
	ep.dev.conns--
	l.mu.Unlock()
	_ = ep.id.disconnect()
	ep.close()
	_ = ep.id.destroy()
	l.release()
}
