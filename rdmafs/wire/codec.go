package wire

import (
	"encoding/binary"
	"fmt"
)

// dec reads fixed-layout fields from a payload; the first failure sticks so
// a decoder checks err once at the end.
type dec struct {
	b   []byte
	err error
}

func (d *dec) need(n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.err = fmt.Errorf("%w: need %d more bytes, have %d", ErrMalformed, n, len(d.b))
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *dec) u8() uint8 {
	if p := d.need(1); p != nil {
		return p[0]
	}
	return 0
}

func (d *dec) u16() uint16 {
	if p := d.need(2); p != nil {
		return binary.BigEndian.Uint16(p)
	}
	return 0
}

func (d *dec) u32() uint32 {
	if p := d.need(4); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

func (d *dec) u64() uint64 {
	if p := d.need(8); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

func (d *dec) bytes(n int) []byte { return d.need(n) }

// str reads a u16-length-prefixed string no longer than max bytes.
func (d *dec) str(max int) string {
	n := int(d.u16())
	if d.err == nil && n > max {
		d.err = fmt.Errorf("%w: string of %d bytes exceeds %d", ErrMalformed, n, max)
		return ""
	}
	return string(d.need(n))
}

// done reports the sticky error, or an error when bytes are left over:
// trailing garbage is a protocol violation, not something to ignore.
func (d *dec) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(d.b))
	}
	return d.err
}

func putU16(b []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(b, v) }
func putU32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }
func putU64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

func putStr(b []byte, s string) []byte {
	b = putU16(b, uint16(len(s)))
	return append(b, s...)
}

// maxWireString is the most a u16 length prefix can announce. Request names
// up to this length decode, so the server can refuse names over MaxNameLen
// with a per-request error instead of dropping the connection.
const maxWireString = 0xffff
