package rdmafs

import (
	"fmt"
	"net/netip"
	"sync"
	"syscall"
	"unsafe"
)

// simFabric is an RDMA fabric modelled in process: devices, protection
// domains, memory regions, completion queues, RC queue pairs and an
// rdma_cm, with the behaviour of hardware that the verbs transport must
// survive (see loopback_qp.go for the data path). One mutex guards it all;
// it never calls out while holding it.
//
// It also keeps what tests look at: misuse of the API that real verbs
// would punish (an event channel destroyed under live identifiers, a
// protection domain freed under its regions, an object used after being
// destroyed) is recorded in violations instead of crashing.
type simFabric struct {
	mu sync.Mutex

	devs      []*simDevice
	listeners map[netip.AddrPort]*simID
	ids       map[*simID]bool
	qps       map[*simQP]bool
	chans     map[*simChannel]bool
	nextObj   uintptr

	// memlock is the locked-memory budget in bytes registrations count
	// against (RLIMIT_MEMLOCK; 0: unlimited); locked is what is in use.
	memlock, locked int64
	// unreachable addresses fail address resolution.
	unreachable map[netip.Addr]bool
	// failDereg makes that many coming deregistrations fail (EBUSY),
	// leaving the region registered.
	failDereg int
	// cmErr, when set (setCMErr), is what every event channel's next
	// returns.
	cmErr error
	// tap records the payload of every WRITE and SEND transmitted, per
	// queue pair.
	tap bool
	// unstallOnPost: when the first queue pair posts, the second one's
	// link recovers and it transmits at once.
	unstallOnPost [2]*simQP

	violations []string
	stats      simStats
}

// simStats counts what tests assert on.
type simStats struct {
	pds, mrs, qps, cqs int // live
	pdAllocs, regs     int // ever
	cqCreates          int
	qpCreates          int
	cmNext             int // calls to an event channel's next
	maxOutstanding     int // most send work requests in flight on one queue pair
	resolveSrc         []netip.AddrPort
	resolveDst         []netip.AddrPort
	accepted           []connParams
	rejected           int
	// registered lists every registration: its address, length and the
	// access it got.
	registered []simReg
}

type simReg struct {
	base   uint64
	n      int
	access int
}

func newSimFabric() *simFabric {
	f := &simFabric{listeners: map[netip.AddrPort]*simID{}, ids: map[*simID]bool{}, qps: map[*simQP]bool{},
		chans:       map[*simChannel]bool{},
		unreachable: map[netip.Addr]bool{}}
	f.devs = append(f.devs, f.newDevice("sim0"))
	return f
}

func (f *simFabric) newDevice(name string) *simDevice {
	f.nextObj++
	// rkeys follow the common hardware pattern: a 24-bit index that counts
	// up, and an 8-bit key that counts too (mlx5; rxe and siw alike).
	return &simDevice{f: f, id: f.nextObj, nm: name, mrIndex: 0x1a2, mrKey: 0x17, relaxedOrdering: true, dmaBuf: true}
}

func (f *simFabric) violate(format string, a ...any) {
	f.violations = append(f.violations, fmt.Sprintf(format, a...))
}

// Violations returns the recorded API misuses.
func (f *simFabric) Violations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.violations...)
}

func (f *simFabric) statsNow() simStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.stats
	s.resolveSrc = append([]netip.AddrPort(nil), s.resolveSrc...)
	s.resolveDst = append([]netip.AddrPort(nil), s.resolveDst...)
	s.accepted = append([]connParams(nil), s.accepted...)
	s.registered = append([]simReg(nil), s.registered...)
	return s
}

func (f *simFabric) devices() ([]rdmaDevice, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []rdmaDevice
	for _, d := range f.devs {
		if !d.removed {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: the loopback fabric has none", errNoDevice)
	}
	return out, nil
}

// simGPU resolves GPU memory for registrations by address (nvidia-peermem)
// and by dma-buf; tests supply it.
type simGPU interface {
	slice(addr uint64, n int64) ([]byte, error)
}

type simDevice struct {
	f       *simFabric
	id      uintptr
	nm      string
	removed bool

	mrIndex uint32
	mrKey   uint8
	// relaxedOrdering: the device honours IBV_ACCESS_RELAXED_ORDERING
	// (dma-buf registrations asking for it fail with EINVAL otherwise; the
	// library drops it from the others). dmaBuf: it registers dma-bufs.
	relaxedOrdering, dmaBuf bool
	gpu                     simGPU
}

func (d *simDevice) key() uintptr { return d.id }
func (d *simDevice) name() string { return d.nm }

func (d *simDevice) allocPD() (rdmaPD, error) {
	f := d.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if d.removed {
		return nil, fmt.Errorf("ibv_alloc_pd on %s: %w", d.nm, syscall.ENODEV)
	}
	f.stats.pds++
	f.stats.pdAllocs++
	return &simPD{dev: d, mrs: map[uint32]*simMR{}}, nil
}

type simPD struct {
	dev  *simDevice
	mrs  map[uint32]*simMR
	qps  int
	regs int // registrations ever made
	dead bool
}

// simMR is a registered region: mem is the memory, base its address as
// the peer names it.
type simMR struct {
	pd     *simPD
	key    uint32
	base   uint64
	mem    []byte
	access int
	dead   bool
}

func (m *simMR) lkey() uint32 { return m.key }
func (m *simMR) rkey() uint32 { return m.key }

// contains reports whether [addr, addr+n) lies inside the region.
func (m *simMR) contains(addr uint64, n uint64) bool {
	end := addr + n
	return end >= addr && addr >= m.base && end <= m.base+uint64(len(m.mem))
}

func (m *simMR) slice(addr uint64, n uint64) []byte {
	return m.mem[addr-m.base : addr-m.base+n]
}

func pageRound(n int) int64 { return (int64(n) + 4095) &^ 4095 }

// register adds a region; the caller holds f.mu.
func (pd *simPD) register(mem []byte, base uint64, access int) (rdmaMR, error) {
	d, f := pd.dev, pd.dev.f
	switch {
	case pd.dead:
		f.violate("ibv_reg_mr on a freed protection domain")
		return nil, syscall.EINVAL
	case d.removed:
		return nil, syscall.ENODEV
	case len(mem) == 0:
		return nil, syscall.EINVAL
	case f.memlock > 0 && f.locked+pageRound(len(mem)) > f.memlock:
		return nil, syscall.ENOMEM
	}
	f.locked += pageRound(len(mem))
	if !d.relaxedOrdering {
		access &^= accessRelaxedOrdering
	}
	m := &simMR{pd: pd, key: d.mrIndex<<8 | uint32(d.mrKey), base: base, mem: mem, access: access}
	d.mrIndex++
	d.mrKey++
	pd.mrs[m.key] = m
	pd.regs++
	f.stats.mrs++
	f.stats.regs++
	f.stats.registered = append(f.stats.registered, simReg{base: base, n: len(mem), access: access})
	return m, nil
}

func (pd *simPD) regMR(p []byte, access int) (rdmaMR, error) {
	pd.dev.f.mu.Lock()
	defer pd.dev.f.mu.Unlock()
	if len(p) == 0 {
		return nil, syscall.EINVAL
	}
	return pd.register(p, uint64(uintptr(unsafe.Pointer(&p[0]))), access)
}

func (pd *simPD) gpuSlice(addr uint64, n int) ([]byte, error) {
	if pd.dev.gpu == nil {
		return nil, syscall.EFAULT
	}
	mem, err := pd.dev.gpu.slice(addr, int64(n))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", syscall.EFAULT, err)
	}
	return mem, nil
}

func (pd *simPD) regAddr(addr uintptr, n int, access int) (rdmaMR, error) {
	mem, err := pd.gpuSlice(uint64(addr), n)
	if err != nil {
		return nil, err
	}
	pd.dev.f.mu.Lock()
	defer pd.dev.f.mu.Unlock()
	return pd.register(mem, uint64(addr), access)
}

func (pd *simPD) regDmaBuf(fd int, offset uint64, n int, iova uint64, access int) (rdmaMR, error) {
	d := pd.dev
	if !d.dmaBuf {
		return nil, syscall.EOPNOTSUPP
	}
	if access&accessRelaxedOrdering != 0 && !d.relaxedOrdering {
		// Unlike ibv_reg_mr_iova2, ibv_reg_dmabuf_mr passes optional
		// flags to the kernel as they are.
		return nil, syscall.EINVAL
	}
	if fd < 0 {
		return nil, syscall.EBADF
	}
	mem, err := pd.gpuSlice(iova, n)
	if err != nil {
		return nil, err
	}
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	return pd.register(mem, iova, access)
}

func (m *simMR) dereg() error {
	f := m.pd.dev.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if m.dead {
		f.violate("ibv_dereg_mr of a region already deregistered")
		return syscall.EINVAL
	}
	if f.failDereg > 0 {
		f.failDereg--
		return fmt.Errorf("ibv_dereg_mr: %w", syscall.EBUSY)
	}
	// Writes the responder accepted before now land before the region
	// goes: deregistration waits for the DMA in flight.
	f.placeInbound(func(w *simInbound) bool { return w.mr == m })
	m.dead = true
	delete(m.pd.mrs, m.key)
	f.locked -= pageRound(len(m.mem))
	f.stats.mrs--
	return nil
}

func (pd *simPD) dealloc() error {
	f := pd.dev.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if pd.dead {
		f.violate("ibv_dealloc_pd twice")
		return syscall.EINVAL
	}
	if len(pd.mrs) > 0 || pd.qps > 0 {
		f.violate("ibv_dealloc_pd with %d regions and %d queue pairs still in it", len(pd.mrs), pd.qps)
		return syscall.EBUSY
	}
	pd.dead = true
	f.stats.pds--
	return nil
}

// mr finds the region of a local key; the caller holds f.mu.
func (pd *simPD) mr(key uint32) *simMR {
	if m := pd.mrs[key]; m != nil && !m.dead {
		return m
	}
	return nil
}
