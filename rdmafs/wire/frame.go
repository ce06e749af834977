// Package wire defines the rdmafs wire protocol: the fixed frame header, the
// message payloads and their binary encoding. docs/PROTOCOL.md is the
// normative description; this package is its executable twin.
//
// All integers are big-endian. Decoders never allocate more than the
// payload-length cap, which is checked before any allocation.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Version is the protocol version this package speaks. A peer that sees any
// other version in a header refuses the frame.
const Version = 1

// Magic is the two-byte frame marker "RF" (0x52 0x46).
const Magic uint16 = 0x5246

// HeaderSize is the size of the fixed frame header in bytes.
const HeaderSize = 12

// MaxPayload is the hard cap on a frame's payload length. Bulk data on a
// stream transport travels after a DATA frame, outside the payload, and is
// bounded by the request instead.
const MaxPayload = 64 << 10

// MaxNameLen bounds a path name in any request, in bytes.
const MaxNameLen = 4096

// Type identifies a message.
type Type uint8

// Message types. See docs/PROTOCOL.md for direction and payload layout.
const (
	TypeHello     Type = 1  // client → server: nonce, flags
	TypeChallenge Type = 2  // server → client: auth mode, nonce, server proof
	TypeAuth      Type = 3  // client → server: client proof
	TypeWelcome   Type = 4  // server → client: credits and limits
	TypeError     Type = 5  // server → client: code and message
	TypeStat      Type = 6  // client → server: name
	TypeStatOK    Type = 7  // server → client: file info
	TypeList      Type = 8  // client → server: cursor, directory name
	TypeListOK    Type = 9  // server → client: entries, next cursor
	TypeRead      Type = 10 // client → server: name, offset, length, flags, region
	TypeData      Type = 11 // server → client: offset, n; n raw bytes follow (stream transports)
	TypeReadDone  Type = 12 // server → client: n, eof, crc32c
	TypeGoodbye   Type = 13 // server → client: server is draining; no new requests
)

var typeNames = [...]string{
	TypeHello: "HELLO", TypeChallenge: "CHALLENGE", TypeAuth: "AUTH", TypeWelcome: "WELCOME",
	TypeError: "ERROR", TypeStat: "STAT", TypeStatOK: "STAT_OK", TypeList: "LIST",
	TypeListOK: "LIST_OK", TypeRead: "READ", TypeData: "DATA", TypeReadDone: "READ_DONE",
	TypeGoodbye: "GOODBYE",
}

func (t Type) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return fmt.Sprintf("TYPE(%d)", uint8(t))
}

// Header is the fixed 12-byte frame header:
//
//	offset 0: magic   u16 = 0x5246 ("RF")
//	offset 2: version u8  = 1
//	offset 3: type    u8
//	offset 4: request id  u32
//	offset 8: payload length u32 (≤ MaxPayload)
type Header struct {
	Type   Type
	ID     uint32
	Length uint32
}

// Errors returned by the decoders. They are protocol violations: the peer
// that sees one closes the connection.
var (
	ErrMagic     = errors.New("bad magic (not an rdmafs peer?)")
	ErrVersion   = errors.New("unsupported rdmafs protocol version")
	ErrTooLarge  = errors.New("frame payload length exceeds the limit")
	ErrMalformed = errors.New("malformed frame payload")
)

// PutHeader encodes h into b, which must be at least HeaderSize long.
func PutHeader(b []byte, h Header) {
	binary.BigEndian.PutUint16(b[0:], Magic)
	b[2] = Version
	b[3] = byte(h.Type)
	binary.BigEndian.PutUint32(b[4:], h.ID)
	binary.BigEndian.PutUint32(b[8:], h.Length)
}

// ParseHeader decodes and validates a header. It checks magic, version and
// the payload cap max (callers pass MaxPayload or a smaller limit) so that
// no caller allocates for an oversize frame.
func ParseHeader(b []byte, max uint32) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: header is %d bytes, want %d", ErrMalformed, len(b), HeaderSize)
	}
	if m := binary.BigEndian.Uint16(b[0:]); m != Magic {
		return Header{}, fmt.Errorf("%w: got 0x%04x", ErrMagic, m)
	}
	if v := b[2]; v != Version {
		return Header{}, fmt.Errorf("%w: peer speaks %d, this build speaks %d", ErrVersion, v, Version)
	}
	h := Header{Type: Type(b[3]), ID: binary.BigEndian.Uint32(b[4:]), Length: binary.BigEndian.Uint32(b[8:])}
	if h.Length > max {
		return h, fmt.Errorf("%w: %s frame of %d bytes, limit %d", ErrTooLarge, h.Type, h.Length, max)
	}
	return h, nil
}

// ReadFrame reads one header and its payload from r into buf, which must
// have capacity for max bytes; it returns the header and the payload slice
// (aliasing buf). Oversize frames are refused before their payload is read.
func ReadFrame(r io.Reader, buf []byte, max uint32) (Header, []byte, error) {
	var hb [HeaderSize]byte
	if _, err := io.ReadFull(r, hb[:]); err != nil {
		return Header{}, nil, err
	}
	h, err := ParseHeader(hb[:], max)
	if err != nil {
		return h, nil, err
	}
	if int(h.Length) > cap(buf) {
		return h, nil, fmt.Errorf("%w: %d bytes, buffer %d", ErrTooLarge, h.Length, cap(buf))
	}
	p := buf[:h.Length]
	if _, err := io.ReadFull(r, p); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return h, nil, err
	}
	return h, p, nil
}

// AppendFrame appends a header for a payload of len(payload) bytes and the
// payload itself to dst.
func AppendFrame(dst []byte, t Type, id uint32, payload []byte) []byte {
	var hb [HeaderSize]byte
	PutHeader(hb[:], Header{Type: t, ID: id, Length: uint32(len(payload))})
	dst = append(dst, hb[:]...)
	return append(dst, payload...)
}
