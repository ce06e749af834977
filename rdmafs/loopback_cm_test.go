package rdmafs

import (
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"time"
)

// The loopback rdma_cm: identifiers bind, listen, resolve, connect with
// private data, accept, reject and disconnect, and events arrive on their
// channel. Address resolution binds an identifier to the first device the
// fabric has; addresses marked unreachable fail it.

type simChannel struct {
	f    *simFabric
	q    []cmEvent
	ev   chan struct{}
	intr chan struct{}
	once sync.Once
	ids  map[*simID]bool
	dead bool
	// failedAt is when next failed with the fabric's cmErr, since the
	// last setCMErr.
	failedAt []time.Time
}

func (f *simFabric) newEventChannel() (cmChannel, error) {
	c := &simChannel{f: f, ev: make(chan struct{}, 1), intr: make(chan struct{}), ids: map[*simID]bool{}}
	f.mu.Lock()
	f.chans[c] = true
	f.mu.Unlock()
	return c, nil
}

// setCMErr makes every event channel fail with err (nil: work again),
// waking those that wait.
func (f *simFabric) setCMErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cmErr = err
	for c := range f.chans {
		c.failedAt = nil
		c.wake()
	}
}

// cmFailures returns, for each event channel, when its next calls failed
// with the error setCMErr set.
func (f *simFabric) cmFailures() [][]time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out [][]time.Time
	for c := range f.chans {
		out = append(out, slices.Clone(c.failedAt))
	}
	return out
}

func (c *simChannel) wake() {
	select {
	case c.ev <- struct{}{}:
	default:
	}
}

func (c *simChannel) push(ev cmEvent) {
	if c.dead {
		return
	}
	c.q = append(c.q, ev)
	c.wake()
}

func (c *simChannel) createID() (cmID, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.dead {
		f.violate("rdma_create_id on a destroyed event channel")
		return nil, syscall.EINVAL
	}
	f.nextObj++
	id := &simID{f: f, ch: c, k: f.nextObj}
	c.ids[id] = true
	f.ids[id] = true
	return id, nil
}

func (c *simChannel) next() (cmEvent, error) {
	f := c.f
	for {
		select {
		case <-c.intr:
			return cmEvent{}, errChannelClosed
		default:
		}
		f.mu.Lock()
		f.stats.cmNext++
		if err := f.cmErr; err != nil {
			c.failedAt = append(c.failedAt, time.Now())
			f.mu.Unlock()
			return cmEvent{}, err
		}
		if c.dead {
			f.violate("rdma_get_cm_event on a destroyed event channel")
			f.mu.Unlock()
			return cmEvent{}, errChannelClosed
		}
		if len(c.q) > 0 {
			ev := c.q[0]
			c.q = c.q[1:]
			f.mu.Unlock()
			return ev, nil
		}
		f.mu.Unlock()
		select {
		case <-c.ev:
		case <-c.intr:
			return cmEvent{}, errChannelClosed
		}
	}
}

func (c *simChannel) interrupt() { c.once.Do(func() { close(c.intr) }) }

func (c *simChannel) destroy() {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	c.interrupt()
	if c.dead {
		f.violate("rdma_destroy_event_channel twice")
		return
	}
	if len(c.ids) > 0 {
		f.violate("rdma_destroy_event_channel with %d identifiers still on it", len(c.ids))
	}
	c.dead = true
	delete(f.chans, c)
}

type simID struct {
	f         *simFabric
	ch        *simChannel
	k         uintptr
	dev       *simDevice
	local     netip.AddrPort
	peer      netip.AddrPort
	listening bool
	qp        *simQP
	remote    *simID
	params    connParams
	dead      bool
	// disconnected: DISCONNECTED was reported on this identifier.
	disconnected bool
}

func (id *simID) key() uintptr { return id.k }

// usable checks the identifier may be used; the caller holds f.mu.
func (id *simID) usable(op string) error {
	switch {
	case id.dead:
		id.f.violate("%s on a destroyed identifier", op)
		return syscall.EINVAL
	case id.ch.dead:
		id.f.violate("%s on an identifier whose event channel was destroyed", op)
		return syscall.EINVAL
	}
	return nil
}

func (f *simFabric) liveDevice() *simDevice {
	for _, d := range f.devs {
		if !d.removed {
			return d
		}
	}
	return nil
}

func (id *simID) bind(ap netip.AddrPort) error {
	f := id.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := id.usable("rdma_bind_addr"); err != nil {
		return err
	}
	for l := range f.listeners {
		if l.Port() == ap.Port() && (l.Addr() == ap.Addr() || l.Addr().IsUnspecified() || ap.Addr().IsUnspecified()) {
			return syscall.EADDRINUSE
		}
	}
	if !ap.Addr().IsUnspecified() {
		if id.dev = f.liveDevice(); id.dev == nil {
			return syscall.EADDRNOTAVAIL
		}
	}
	id.local = ap
	return nil
}

func (id *simID) listen(int) error {
	f := id.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := id.usable("rdma_listen"); err != nil {
		return err
	}
	id.listening = true
	f.listeners[id.local] = id
	return nil
}

func (id *simID) resolveAddr(src, dst netip.AddrPort, _ time.Duration) error {
	f := id.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := id.usable("rdma_resolve_addr"); err != nil {
		return err
	}
	f.stats.resolveSrc = append(f.stats.resolveSrc, src)
	f.stats.resolveDst = append(f.stats.resolveDst, dst)
	d := f.liveDevice()
	if f.unreachable[dst.Addr()] || d == nil {
		id.ch.push(cmEvent{kind: evAddrError, status: -int(syscall.EHOSTUNREACH), id: id})
		return nil
	}
	f.nextObj++
	id.dev, id.local, id.peer = d, netip.AddrPortFrom(src.Addr(), uint16(40000+f.nextObj%20000)), dst
	id.ch.push(cmEvent{kind: evAddrResolved, id: id})
	return nil
}

func (id *simID) resolveRoute(time.Duration) error {
	f := id.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := id.usable("rdma_resolve_route"); err != nil {
		return err
	}
	if id.dev == nil {
		return syscall.EINVAL
	}
	id.ch.push(cmEvent{kind: evRouteResolved, id: id})
	return nil
}

func (id *simID) device() rdmaDevice {
	id.f.mu.Lock()
	defer id.f.mu.Unlock()
	if id.dev == nil {
		return nil
	}
	return id.dev
}

func (id *simID) createQP(pd rdmaPD, cq rdmaCQ, sendWR, recvWR int) (rdmaQP, error) {
	f := id.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := id.usable("rdma_create_qp"); err != nil {
		return nil, err
	}
	spd, scq := pd.(*simPD), cq.(*simCQ)
	switch {
	case id.qp != nil:
		return nil, syscall.EEXIST
	case id.dev == nil || spd.dev != id.dev || scq.dev != id.dev:
		return nil, syscall.EINVAL
	case spd.dead || scq.dead:
		f.violate("rdma_create_qp on a freed protection domain or completion queue")
		return nil, syscall.EINVAL
	}
	qp := &simQP{f: f, id: id, pd: spd, cq: scq, sendCap: sendWR, recvCap: recvWR}
	spd.qps++
	scq.qps = append(scq.qps, qp)
	f.qps[qp] = true
	f.stats.qps++
	f.stats.qpCreates++
	id.qp = qp
	return qp, nil
}

func (id *simID) destroyQP() {
	f := id.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if id.qp != nil {
		f.destroyQP(id.qp)
		id.qp = nil
	}
}

// listenerFor finds the listening identifier for dst.
func (f *simFabric) listenerFor(dst netip.AddrPort) *simID {
	if l := f.listeners[dst]; l != nil {
		return l
	}
	for ap, l := range f.listeners {
		if ap.Port() == dst.Port() && ap.Addr().IsUnspecified() {
			return l
		}
	}
	return nil
}

func (id *simID) connect(priv []byte, p connParams) error {
	f := id.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := id.usable("rdma_connect"); err != nil {
		return err
	}
	if id.qp == nil {
		return syscall.EINVAL
	}
	id.params = p
	l := f.listenerFor(id.peer)
	if l == nil || l.dead || l.ch.dead {
		id.ch.push(cmEvent{kind: evRejected, status: 8, id: id}) // IB_CM_REJ_INVALID_SERVICE_ID
		return nil
	}
	f.nextObj++
	sid := &simID{f: f, ch: l.ch, k: f.nextObj, dev: id.dev, local: id.peer, peer: id.local, remote: id}
	l.ch.ids[sid] = true
	f.ids[sid] = true
	id.remote = sid
	l.ch.push(cmEvent{kind: evConnectRequest, id: sid, priv: append([]byte(nil), priv...)})
	return nil
}

func (id *simID) accept(p connParams) error {
	f := id.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := id.usable("rdma_accept"); err != nil {
		return err
	}
	r := id.remote
	if id.qp == nil || r == nil {
		return syscall.EINVAL
	}
	f.stats.accepted = append(f.stats.accepted, p)
	if r.dead || r.qp == nil {
		return syscall.ECONNABORTED
	}
	id.qp.responderResources = p.responderResources
	r.qp.responderResources = r.params.responderResources
	id.qp.peer, r.qp.peer = r.qp, id.qp
	id.qp.state, r.qp.state = qpsRTS, qpsRTS
	id.ch.push(cmEvent{kind: evEstablished, id: id})
	r.ch.push(cmEvent{kind: evEstablished, id: r})
	return nil
}

func (id *simID) reject(priv []byte) error {
	f := id.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := id.usable("rdma_reject"); err != nil {
		return err
	}
	f.stats.rejected++
	if r := id.remote; r != nil && !r.dead {
		r.ch.push(cmEvent{kind: evRejected, status: 28, id: r, priv: append([]byte(nil), priv...)}) // IB_CM_REJ_CONSUMER_DEFINED
		r.remote = nil
	}
	id.remote = nil
	return nil
}

func (id *simID) disconnect() error {
	f := id.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := id.usable("rdma_disconnect"); err != nil {
		return err
	}
	if id.qp != nil {
		f.qpError(id.qp)
	}
	if r := id.remote; r != nil && !r.dead {
		if r.qp != nil {
			f.qpError(r.qp)
		}
		if !r.disconnected {
			r.disconnected = true
			r.ch.push(cmEvent{kind: evDisconnected, id: r})
		}
	}
	if !id.disconnected && id.remote != nil {
		id.disconnected = true
		id.ch.push(cmEvent{kind: evDisconnected, id: id})
	}
	return nil
}

func (id *simID) destroy() error {
	f := id.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := id.usable("rdma_destroy_id"); err != nil {
		return err
	}
	if id.qp != nil {
		f.violate("rdma_destroy_id with its queue pair still there")
		f.destroyQP(id.qp)
		id.qp = nil
	}
	if id.listening {
		delete(f.listeners, id.local)
	}
	if r := id.remote; r != nil && r.remote == id {
		r.remote = nil
	}
	id.dead = true
	delete(id.ch.ids, id)
	delete(f.ids, id)
	return nil
}

func (id *simID) localAddr() netip.AddrPort {
	id.f.mu.Lock()
	defer id.f.mu.Unlock()
	return id.local
}

func (id *simID) peerAddr() netip.AddrPort {
	id.f.mu.Lock()
	defer id.f.mu.Unlock()
	return id.peer
}

// removeDevice unplugs d: its queue pairs fail and every identifier bound
// to it gets DEVICE_REMOVAL.
func (f *simFabric) removeDevice(d *simDevice) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d.removed = true
	for id := range f.ids {
		if id.dev == d || (id.listening && id.dev == nil) {
			if id.qp != nil {
				f.qpError(id.qp)
			}
			id.ch.push(cmEvent{kind: evDeviceRemoval, id: id})
		}
	}
}
