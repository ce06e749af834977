package rdmafs

import (
	"bytes"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of the loopback fabric's model itself: what the verbs tests rely
// on it to do.

// simPair is two connected queue pairs on a fresh fabric, each with its
// own domain and completion queue.
type simPair struct {
	f      *simFabric
	a, b   *simQP
	pa, pb rdmaPD
}

func newSimPair(t *testing.T) *simPair {
	t.Helper()
	f := newSimFabric()
	ch, _ := f.newEventChannel()
	lid, _ := ch.createID()
	require.NoError(t, lid.bind(netip.MustParseAddrPort("127.0.0.1:7000")))
	lid.listen(1)
	cch, _ := f.newEventChannel()
	cid, _ := cch.createID()
	cid.resolveAddr(netip.MustParseAddrPort("127.0.0.1:0"), netip.MustParseAddrPort("127.0.0.1:7000"), time.Second)
	cch.next()
	dev := cid.device()
	pa, _ := dev.allocPD()
	cqa, _ := dev.createCQ(16)
	qa, err := cid.createQP(pa, cqa, 8, 8)
	require.NoError(t, err)
	cid.connect([]byte("hi"), connParams{})
	ev, _ := ch.next()
	require.EqualValues(t, evConnectRequest, ev.kind, "server got %s %q", ev.kind, ev.priv)
	require.EqualValues(t, "hi", string(ev.priv), "server got %s %q", ev.kind, ev.priv)
	pb, _ := dev.allocPD()
	cqb, _ := dev.createCQ(16)
	qb, err := ev.id.createQP(pb, cqb, 8, 8)
	require.NoError(t, err)
	require.NoError(t, ev.id.accept(connParams{}))
	return &simPair{f: f, a: qa.(*simQP), b: qb.(*simQP), pa: pa, pb: pb}
}

func pollAll(t *testing.T, cq *simCQ) []workCompletion {
	t.Helper()
	out := make([]workCompletion, 16)
	n, err := cq.poll(out)
	require.NoError(t, err)
	return out[:n]
}

func TestSimKeysFollowTheHardwarePattern(t *testing.T) {
	f := newSimFabric()
	pd, _ := f.devs[0].allocPD()
	var prev uint32
	for i := range 5 {
		m, err := pd.regMR(make([]byte, 4096), accessLocalWrite)
		require.NoError(t, err)
		assert.EqualValues(t, m.rkey(), m.lkey(), "lkey %x != rkey %x", m.lkey(), m.rkey())
		assert.False(t, i > 0 && (m.rkey()>>8 != prev>>8+1 || uint8(m.rkey()) != uint8(prev)+1), "key %x after %x: want index and key byte counting up", m.rkey(), prev)
		prev = m.rkey()
	}
}

func TestSimMemlockBudget(t *testing.T) {
	f := newSimFabric()
	f.memlock = 3 * 4096
	pd, _ := f.devs[0].allocPD()
	a, err := pd.regMR(make([]byte, 5000), 0) // two pages
	require.NoError(t, err)
	_, err = pd.regMR(make([]byte, 8192), 0)
	require.ErrorIs(t, err, syscall.ENOMEM, "over the budget: %v, want ENOMEM", err)
	require.NoError(t, a.dereg())
	_, err = pd.regMR(make([]byte, 8192), 0)
	require.NoError(t, err, "after deregistering")
}

// A WRITE completes at the requester while its data is not yet visible
// at the responder; the SEND after it forces it out, in order.
func TestSimWriteVisibleOnlyAfterALaterMessage(t *testing.T) {
	p := newSimPair(t)
	src := bytes.Repeat([]byte{7}, 4096)
	dst := make([]byte, 4096)
	inbox := make([]byte, 64)
	msrc, _ := p.pa.regMR(src, 0)
	mdst, _ := p.pb.regMR(dst, accessLocalWrite|accessRemoteWrite)
	minbox, _ := p.pb.regMR(inbox, accessLocalWrite)
	require.NoError(t, p.a.post(workRequest{id: 1, op: wrWrite, signaled: true, addr: addrOf(src), n: 4096, lkey: msrc.lkey(),
		raddr: addrOf(dst), rkey: mdst.rkey()}))
	wcs := pollAll(t, p.a.cq)
	require.Len(t, wcs, 1, "WRITE completion: %+v", wcs)
	require.Equal(t, wcSuccess, wcs[0].status, "WRITE completion: %+v", wcs)
	require.EqualValues(t, 0, dst[0], "WRITE data visible before any later message")
	p.b.postRecv(recvBit|1, addrOf(inbox), 64, minbox.lkey())
	p.a.post(workRequest{id: 2, op: wrSend, signaled: true, addr: addrOf(src), n: 8, lkey: msrc.lkey()})
	pollAll(t, p.a.cq)
	wcs = pollAll(t, p.b.cq)
	require.Len(t, wcs, 1, "receive: %+v", wcs)
	require.Equal(t, wcOpRecv, wcs[0].op, "receive: %+v", wcs)
	require.EqualValues(t, 8, wcs[0].byteLen, "receive: %+v", wcs)
	require.True(t, bytes.Equal(dst, src), "WRITE data not visible at the SEND's receive completion")
}

// A SEND without a receive waits; a bad key fails both queue pairs and
// flushes what is outstanding; buffers are read when transmitted.
func TestSimFailuresAndFlush(t *testing.T) {
	p := newSimPair(t)
	src := bytes.Repeat([]byte{1}, 4096)
	inbox := make([]byte, 4096)
	msrc, _ := p.pa.regMR(src, 0)
	minbox, _ := p.pb.regMR(inbox, accessLocalWrite)
	p.f.tap = true
	p.a.post(workRequest{id: 1, op: wrSend, signaled: true, addr: addrOf(src), n: 16, lkey: msrc.lkey()})
	require.Empty(t, pollAll(t, p.a.cq), "SEND completed with no receive posted")
	src[0] = 9 // the device has not read it yet
	p.b.postRecv(recvBit|1, addrOf(inbox), 4096, minbox.lkey())
	got := pollAll(t, p.a.cq)
	require.Len(t, got, 1, "SEND after the receive: %+v, byte %d", got, inbox[0])
	require.Equal(t, wcSuccess, got[0].status, "SEND after the receive: %+v, byte %d", got, inbox[0])
	require.EqualValues(t, 9, inbox[0], "SEND after the receive: %+v, byte %d", got, inbox[0])
	pollAll(t, p.b.cq)
	p.a.post(workRequest{id: 2, op: wrWrite, signaled: true, addr: addrOf(src), n: 16, lkey: msrc.lkey(), raddr: addrOf(inbox), rkey: minbox.rkey()})
	p.a.post(workRequest{id: 3, op: wrSend, signaled: true, addr: addrOf(src), n: 16, lkey: msrc.lkey()})
	wcs := pollAll(t, p.a.cq)
	require.Len(t, wcs, 2, "WRITE to a region without remote access, then a SEND: %+v; want a remote access error, then a flush", wcs)
	require.EqualValues(t, 2, wcs[0].id, "WRITE to a region without remote access, then a SEND: %+v; want a remote access error, then a flush", wcs)
	require.Equal(t, wcRemAccessErr, wcs[0].status, "WRITE to a region without remote access, then a SEND: %+v; want a remote access error, then a flush", wcs)
	require.EqualValues(t, 3, wcs[1].id, "WRITE to a region without remote access, then a SEND: %+v; want a remote access error, then a flush", wcs)
	require.Equal(t, wcFlushErr, wcs[1].status, "WRITE to a region without remote access, then a SEND: %+v; want a remote access error, then a flush", wcs)
	assert.Equal(t, qpsErr, p.b.state, "the responder's queue pair did not fail")
	require.NoError(t, p.a.post(workRequest{id: 4, op: wrSend, n: 0}))
	wcs = pollAll(t, p.a.cq)
	require.Len(t, wcs, 1, "posting on a failed queue pair: %+v", wcs)
	require.Equal(t, wcFlushErr, wcs[0].status, "posting on a failed queue pair: %+v", wcs)
}

// Misuse that real verbs punish is recorded.
func TestSimRecordsMisuse(t *testing.T) {
	f := newSimFabric()
	pd, _ := f.devs[0].allocPD()
	m, _ := pd.regMR(make([]byte, 4096), 0)
	err := pd.dealloc()
	assert.ErrorIs(t, err, syscall.EBUSY, "dealloc with a region")
	m.dereg()
	m.dereg()
	ch, _ := f.newEventChannel()
	id, _ := ch.createID()
	ch.destroy()
	id.disconnect()
	v := strings.Join(f.Violations(), "\n")
	for _, want := range []string{"ibv_dealloc_pd with 1 regions", "already deregistered", "rdma_destroy_event_channel with 1 identifiers",
		"rdma_disconnect on an identifier whose event channel was destroyed"} {
		assert.Contains(t, v, want, "violations lack %q:\n%s", want, v)
	}
}
