package rdmafs

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"
	"unsafe"

	"github.com/gdsload/gdsload/rdmafs/internal/ibv"
)

// ibvStack is rdmaStack over rdma-core, loaded at run time.
type ibvStack struct {
	l *ibv.Lib
	// mu guards devs: librdmacm's contexts wrapped once each, so the same
	// device compares equal however it was reached.
	mu   sync.Mutex
	devs map[uintptr]*ibvDevice
}

func newIBVStack(l *ibv.Lib) *ibvStack { return &ibvStack{l: l, devs: map[uintptr]*ibvDevice{}} }

func (s *ibvStack) device(ctx *ibv.Context) rdmaDevice {
	if ctx == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.devs[ctx.Key()]
	if d == nil {
		d = &ibvDevice{ctx: ctx}
		s.devs[ctx.Key()] = d
	}
	return d
}

func (s *ibvStack) devices() ([]rdmaDevice, error) {
	ctxs, err := s.l.Contexts()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoDevice, err)
	}
	if len(ctxs) == 0 {
		return nil, fmt.Errorf("%w: rdma_get_devices found none", errNoDevice)
	}
	out := make([]rdmaDevice, len(ctxs))
	for i, c := range ctxs {
		out[i] = s.device(c)
	}
	return out, nil
}

func (s *ibvStack) newEventChannel() (cmChannel, error) {
	ch, err := s.l.NewEventChannel()
	if err != nil {
		return nil, err
	}
	return &ibvChannel{s: s, ch: ch}, nil
}

type ibvChannel struct {
	s  *ibvStack
	ch *ibv.EventChannel
	// ids maps identifiers to their wrapper, so an event names the
	// wrapper the transport holds.
	mu  sync.Mutex
	ids map[uintptr]*ibvID
}

func (c *ibvChannel) wrap(id *ibv.ID) *ibvID {
	if id == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids == nil {
		c.ids = map[uintptr]*ibvID{}
	}
	w := c.ids[id.Key()]
	if w == nil {
		w = &ibvID{c: c, id: id}
		c.ids[id.Key()] = w
	}
	return w
}

func (c *ibvChannel) createID() (cmID, error) {
	id, err := c.ch.CreateID()
	if err != nil {
		return nil, err
	}
	return c.wrap(id), nil
}

var ibvEvents = map[int]cmEventKind{
	ibv.EventAddrResolved: evAddrResolved, ibv.EventAddrError: evAddrError, ibv.EventRouteResolved: evRouteResolved,
	ibv.EventRouteError: evRouteError, ibv.EventConnectRequest: evConnectRequest, ibv.EventConnectError: evConnectError,
	ibv.EventUnreachable: evUnreachable, ibv.EventRejected: evRejected, ibv.EventEstablished: evEstablished,
	ibv.EventDisconnected: evDisconnected, ibv.EventDeviceRemoval: evDeviceRemoval, ibv.EventTimewaitExit: evTimewaitExit,
}

func (c *ibvChannel) next() (cmEvent, error) {
	ev, err := c.ch.Next()
	if errors.Is(err, ibv.ErrClosed) {
		return cmEvent{}, errChannelClosed
	}
	if err != nil {
		return cmEvent{}, err
	}
	out := cmEvent{kind: ibvEvents[ev.Kind], status: ev.Status, priv: ev.Priv}
	if id := c.wrap(ev.ID); id != nil {
		out.id = id
	}
	return out, nil
}

func (c *ibvChannel) interrupt() { c.ch.Interrupt() }
func (c *ibvChannel) destroy()   { c.ch.Destroy() }

type ibvID struct {
	c  *ibvChannel
	id *ibv.ID
}

func (i *ibvID) key() uintptr                       { return i.id.Key() }
func (i *ibvID) bind(ap netip.AddrPort) error       { return i.id.Bind(ap) }
func (i *ibvID) listen(backlog int) error           { return i.id.Listen(backlog) }
func (i *ibvID) resolveRoute(t time.Duration) error { return i.id.ResolveRoute(t) }
func (i *ibvID) device() rdmaDevice                 { return i.c.s.device(i.id.Context()) }
func (i *ibvID) destroyQP()                         { i.id.DestroyQP() }
func (i *ibvID) reject(priv []byte) error           { return i.id.Reject(priv) }
func (i *ibvID) disconnect() error                  { return i.id.Disconnect() }
func (i *ibvID) localAddr() netip.AddrPort          { return i.id.LocalAddr() }
func (i *ibvID) peerAddr() netip.AddrPort           { return i.id.PeerAddr() }
func (i *ibvID) resolveAddr(src, dst netip.AddrPort, t time.Duration) error {
	return i.id.ResolveAddr(src, dst, t)
}

func (i *ibvID) createQP(pd rdmaPD, cq rdmaCQ, sendWR, recvWR int) (rdmaQP, error) {
	qp, err := i.id.CreateQP(pd.(*ibvPD).pd, cq.(*ibvCQ).cq, sendWR, recvWR)
	if err != nil {
		return nil, err
	}
	return ibvQP{qp}, nil
}

func (i *ibvID) connect(priv []byte, p connParams) error {
	return i.id.Connect(priv, p.responderResources, p.initiatorDepth)
}

func (i *ibvID) accept(p connParams) error {
	return i.id.Accept(p.responderResources, p.initiatorDepth)
}

func (i *ibvID) destroy() error {
	err := i.id.Destroy()
	if err == nil {
		i.c.mu.Lock()
		delete(i.c.ids, i.id.Key())
		i.c.mu.Unlock()
	}
	return err
}

type ibvDevice struct{ ctx *ibv.Context }

func (d *ibvDevice) key() uintptr { return d.ctx.Key() }
func (d *ibvDevice) name() string { return d.ctx.Name() }
func (d *ibvDevice) allocPD() (rdmaPD, error) {
	pd, err := d.ctx.AllocPD()
	if err != nil {
		return nil, err
	}
	return &ibvPD{pd}, nil
}

func (d *ibvDevice) createCQ(entries int) (rdmaCQ, error) {
	cq, err := d.ctx.CreateCQ(entries)
	if err != nil {
		return nil, err
	}
	return &ibvCQ{cq}, nil
}

type ibvPD struct{ pd *ibv.PD }

func (p *ibvPD) regMR(b []byte, access int) (rdmaMR, error) {
	if len(b) == 0 {
		return nil, errors.New("ibv_reg_mr of an empty buffer")
	}
	mr, err := p.pd.RegMR(uintptr(unsafe.Pointer(&b[0])), len(b), access)
	if err != nil {
		return nil, err
	}
	return ibvMR{mr}, nil
}

func (p *ibvPD) regAddr(addr uintptr, n int, access int) (rdmaMR, error) {
	mr, err := p.pd.RegMR(addr, n, access)
	if err != nil {
		return nil, err
	}
	return ibvMR{mr}, nil
}

func (p *ibvPD) regDmaBuf(fd int, offset uint64, n int, iova uint64, access int) (rdmaMR, error) {
	mr, err := p.pd.RegDmaBuf(fd, offset, n, iova, access)
	if err != nil {
		return nil, err
	}
	return ibvMR{mr}, nil
}

func (p *ibvPD) dealloc() error { return p.pd.Dealloc() }

type ibvMR struct{ mr *ibv.MR }

func (m ibvMR) lkey() uint32 { return m.mr.LKey() }
func (m ibvMR) rkey() uint32 { return m.mr.RKey() }
func (m ibvMR) dereg() error { return m.mr.Dereg() }

type ibvCQ struct{ cq *ibv.CQ }

func (c *ibvCQ) poll(out []workCompletion) (int, error) {
	var wcs [16]ibv.WC
	n, err := c.cq.Poll(wcs[:min(len(out), len(wcs))])
	for i := range n {
		w := wcs[i]
		out[i] = workCompletion{id: w.ID, status: w.Status, op: w.Opcode, byteLen: w.ByteLen, imm: w.Imm, hasImm: w.HasImm}
	}
	return n, err
}

func (c *ibvCQ) wait() error {
	if err := c.cq.Wait(); errors.Is(err, ibv.ErrClosed) {
		return errChannelClosed
	} else if err != nil {
		return err
	}
	return nil
}

func (c *ibvCQ) interrupt()     { c.cq.Interrupt() }
func (c *ibvCQ) destroy() error { return c.cq.Destroy() }

type ibvQP struct{ qp *ibv.QP }

func (q ibvQP) post(wr workRequest) error {
	return q.qp.Post(wr.id, int(wr.op), wr.signaled, wr.addr, wr.n, wr.lkey, wr.raddr, wr.rkey, wr.imm)
}

func (q ibvQP) postRecv(id uint64, addr uint64, n uint32, lkey uint32) error {
	return q.qp.PostRecv(id, addr, n, lkey)
}

func (q ibvQP) toError() error { return q.qp.ToError() }
