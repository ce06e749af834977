package webdataset

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// The in-memory fast path: a tar held whole in memory (ResetBytes) is
// walked header by header here instead of through archive/tar, which
// allocates a Header per member and checks things WebDataset does not use
// (a large share of the CPU of iterating a zstd shard; figures in
// docs/PERFORMANCE-NOTES.md, shards/iterator). Only headers that
// archive/tar reads in exactly the same simple way qualify: a valid
// checksum, USTAR or GNU magic, plain octal numbers, a regular or
// header-only type, and the whole member inside the buffer. At the first
// header that does not (the end-of-archive zeros, PAX or GNU long-name
// records, sparse files, base-256 numbers, V7 or STAR headers, truncation)
// the Reader hands that header and the rest of the shard to archive/tar,
// so every case archive/tar handles is still handled by it, and errors are
// its errors. A differential fuzz test holds the two paths equal.

const tarBlock = 512

// simpleHeader is what the fast path takes from one header block.
type simpleHeader struct {
	name     string
	typeflag byte  // after archive/tar's TypeRegA conversion
	size     int64 // the size field
	data     int64 // payload bytes that follow the header in the archive
}

// parseSimpleHeader parses blk (one 512-byte header) when archive/tar would
// read it the same way and without special handling; ok is false otherwise.
func parseSimpleHeader(blk []byte) (h simpleHeader, ok bool) {
	if len(blk) != tarBlock {
		return h, false
	}
	sum, ok := strictOctal(blk[148:156])
	if !ok || !checksumMatches(blk, sum) {
		return h, false
	}
	magic, version, trailer := blk[257:263], blk[263:265], blk[508:512]
	var prefix []byte
	switch {
	case string(magic) == "ustar\x00" && string(trailer) != "tar\x00":
		prefix = cString(blk[345:500])
	case string(magic) == "ustar " && string(version) == " \x00":
		// GNU: archive/tar parses atime and ctime only when set, with a
		// fallback for old Go writers; leave those to it.
		if blk[345] != 0 || blk[357] != 0 {
			return h, false
		}
	default:
		return h, false // V7, STAR, or something else
	}
	for _, f := range [][2]int{{100, 108}, {108, 116}, {116, 124}, {136, 148}, {329, 337}, {337, 345}} {
		if !octalOK(blk[f[0]:f[1]]) {
			return h, false // mode, uid, gid, mtime, devmajor, devminor
		}
	}
	if h.size, ok = strictOctal(blk[124:136]); !ok {
		return h, false
	}
	name := cString(blk[0:100])
	if len(prefix) > 0 {
		h.name = string(prefix) + "/" + string(name)
	} else {
		h.name = string(name)
	}
	h.typeflag = blk[156]
	switch h.typeflag {
	case '\x00': // TypeRegA: legacy directories end in a slash
		h.typeflag = '0'
		if len(h.name) > 0 && h.name[len(h.name)-1] == '/' {
			h.typeflag = '5'
		}
	case '0', '7', '1', '2', '3', '4', '5', '6':
	default:
		return h, false // PAX, GNU long names, sparse, vendor types
	}
	h.data = h.size
	if h.typeflag >= '1' && h.typeflag <= '6' {
		h.data = 0 // header-only types: links, devices, directories, FIFOs
	}
	return h, true
}

// cString is b up to its first NUL, as archive/tar's parseString.
func cString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// strictOctal parses a numeric field that is plain octal digits, padded
// with spaces or NULs at either end: the subset on which archive/tar's
// parser gives the same value without error. Anything else (base-256,
// inner spaces or NULs, other characters) is refused.
func strictOctal(b []byte) (int64, bool) {
	if len(b) == 0 || b[0]&0x80 != 0 {
		return 0, false
	}
	// Spaces and NULs around the digits are ignored (bytes.Trim(b, " \x00"),
	// written out: Trim builds its byte set on every call, and this runs
	// at least twice a header, for the checksum and the size).
	for len(b) > 0 && (b[0] == ' ' || b[0] == 0) {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == 0) {
		b = b[:len(b)-1]
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '7' {
			return 0, false
		}
		v = v<<3 | int64(c-'0')
	}
	return v, true // fields are at most 12 bytes: 36 bits, no overflow
}

// octalOK reports whether strictOctal accepts b, without a loop for the
// layout writers use: octal digits up to a last byte that is a NUL or a
// space ("0000644\x00"). Anything else goes to strictOctal.
func octalOK(b []byte) bool {
	// c&0xf8 == '0' holds for '0' to '7' alone. The field's first and last
	// eight bytes are tested (the same eight in an 8-byte field), the last
	// byte set to '0' first: it is checked apart.
	const mask, digits = 0xf8f8f8f8f8f8f8f8, 0x3030303030303030
	if n := len(b); n == 8 || n == 12 { // mode, uid, gid, devmajor, devminor; mtime
		tail := binary.LittleEndian.Uint64(b[n-8:])&^(0xff<<56) | '0'<<56
		head := tail
		if n == 12 {
			head = binary.LittleEndian.Uint64(b)
		}
		if head&mask == digits && tail&mask == digits && (b[n-1] == 0 || b[n-1] == ' ') {
			return true
		}
	}
	_, ok := strictOctal(b)
	return ok
}

// checksumMatches tells whether want is the header's unsigned or signed
// byte sum with the checksum field (bytes 148..155) counted as spaces
// (archive/tar accepts either). The whole block is summed eight bytes at
// a time, then the field's own bytes are swapped for spaces. The signed
// sum, which writers almost never use, is worked out only when the
// unsigned one does not match.
func checksumMatches(blk []byte, want int64) bool {
	const lanes = 0x00ff00ff00ff00ff
	blk = blk[:tarBlock]
	var acc uint64
	for i := 0; i < tarBlock; i += 8 {
		x := binary.LittleEndian.Uint64(blk[i:])
		acc += x&lanes + (x>>8)&lanes
	}
	unsigned := int64(acc&0xffff + (acc>>16)&0xffff + (acc>>32)&0xffff + acc>>48)
	field := blk[148:156]
	for _, c := range field {
		unsigned += ' ' - int64(c)
	}
	if want == unsigned {
		return true
	}
	// Each byte with its high bit set counts 256 less when signed; the
	// spaces that stand for the field have none.
	var high int
	for i := 0; i < tarBlock; i += 8 {
		high += bits.OnesCount64(binary.LittleEndian.Uint64(blk[i:]) & 0x8080808080808080)
	}
	high -= bits.OnesCount64(binary.LittleEndian.Uint64(field) & 0x8080808080808080)
	return want == unsigned-256*int64(high)
}
