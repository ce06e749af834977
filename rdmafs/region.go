package rdmafs

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"
)

// regionTable is one connection's protection domain in the loopback
// transport: the memory regions its client registered, by key. Addresses are
// synthetic but behave like virtual addresses: each region gets its own
// range, separated by a guard gap, so an address that belongs to another
// region is out of range for this key.
type regionTable struct {
	mu       sync.Mutex
	regions  map[uint32]*region
	nextAddr uint64
}

type region struct {
	base uint64
	mem  []byte
}

const regionGuard = 1 << 20

func newRegionTable() *regionTable {
	return &regionTable{regions: map[uint32]*region{}, nextAddr: 1 << 32}
}

func (t *regionTable) register(p []byte) (Region, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var key uint32
	for key == 0 || t.regions[key] != nil {
		// Random keys: a peer cannot guess another region's key from its own.
		var b [4]byte
		rand.Read(b[:])
		key = binary.LittleEndian.Uint32(b[:])
	}
	r := &region{base: t.nextAddr, mem: p}
	t.nextAddr += uint64(len(p)) + regionGuard
	t.regions[key] = r
	return Region{Addr: r.base, Len: uint64(len(p)), Key: key}, nil
}

func (t *regionTable) deregister(rg Region) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.regions[rg.Key]
	if r == nil || r.base != rg.Addr {
		return fmt.Errorf("deregister key 0x%08x: %w: not registered", rg.Key, ErrRegion)
	}
	delete(t.regions, rg.Key)
	return nil
}

// write copies p to rg.Addr+off under the key. The copy happens under the
// table lock, so a deregister that returns has waited out any write in
// progress and no later write can land.
func (t *regionTable) write(rg Region, off uint64, p []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.regions[rg.Key]
	if r == nil {
		return fmt.Errorf("write %d bytes with key 0x%08x: %w: unknown or deregistered key", len(p), rg.Key, ErrRegion)
	}
	addr := rg.Addr + off
	end := addr + uint64(len(p))
	if addr < rg.Addr || end < addr || addr < r.base || end > r.base+uint64(len(r.mem)) {
		return fmt.Errorf("write [0x%x, 0x%x) with key 0x%08x: %w: outside registered [0x%x, 0x%x)",
			addr, end, rg.Key, ErrRegion, r.base, r.base+uint64(len(r.mem)))
	}
	copy(r.mem[addr-r.base:], p)
	return nil
}
