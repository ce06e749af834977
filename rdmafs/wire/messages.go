package wire

import "fmt"

// NonceSize and ProofSize are the sizes of handshake nonces and HMAC-SHA256
// proofs.
const (
	NonceSize = 32
	ProofSize = 32
)

// Auth modes announced in CHALLENGE.
const (
	AuthNone uint8 = 0 // server started with --insecure-no-token
	AuthHMAC uint8 = 1 // HMAC-SHA256 challenge-response, both directions
)

// Hello opens a connection (client → server).
type Hello struct {
	Nonce [NonceSize]byte
	Flags uint32 // features the client asks for (FlagFileID); servers ignore bits they do not know
}

// Feature flags a client asks for in HELLO and a server grants in WELCOME.
// Servers have always ignored HELLO flag bits they do not know, so a client
// may ask any server; one that does not grant a flag answers as before it.
const (
	// FlagFileID: STAT_OK and LIST_OK entries carry the file's change
	// time, device and inode (FileInfo.HasID).
	FlagFileID uint32 = 1 << 0

	// KnownFlags are the flags this package encodes and decodes.
	KnownFlags = FlagFileID
)

// Challenge answers Hello (server → client). ServerProof proves the server
// knows the token (zero when Mode is AuthNone).
type Challenge struct {
	Mode        uint8
	Nonce       [NonceSize]byte
	ServerProof [ProofSize]byte
}

// Auth carries the client's proof (client → server).
type Auth struct {
	Proof [ProofSize]byte
}

// Welcome ends a successful handshake (server → client).
type Welcome struct {
	Credits    uint32 // most requests the client may have outstanding
	MaxPayload uint32 // largest frame payload the server accepts
	MaxRead    uint32 // largest READ length the server accepts
	Chunk      uint32 // size of the pieces a READ is served in
	// Flags are the HELLO flags the server grants. The field is on the
	// wire only when non-zero, which it is only for a client that asked,
	// so a client that asked for nothing gets the 16-byte WELCOME it
	// always got.
	Flags uint32
}

// ErrorMsg reports a failed request, or a connection-level failure when the
// request id is 0 (server → client).
type ErrorMsg struct {
	Code    Code
	Message string
}

// MaxMessage bounds ErrorMsg.Message in bytes.
const MaxMessage = 1024

// Stat asks for one file's metadata.
type Stat struct{ Name string }

// FileInfo describes one file or directory.
type FileInfo struct {
	Name  string // base name in LIST_OK; empty in STAT_OK
	Size  uint64
	Mtime int64  // Unix nanoseconds
	Mode  uint32 // io/fs.FileMode bits
	// HasID says Ctime, Dev and Ino follow: the server granted FlagFileID.
	// In a LIST_OK it is the page's (ListOK.HasID), for every entry.
	HasID bool
	Ctime int64  // status change time, Unix nanoseconds
	Dev   uint64 // device and inode on the server: a file replaced
	Ino   uint64 // (by rename) has another inode
}

// FileInfoSize and FileIDSize are the encoded sizes of a STAT_OK payload
// and of the identity fields a granted FlagFileID adds to it.
const (
	FileInfoSize = 8 + 8 + 4
	FileIDSize   = 8 + 8 + 8
)

// List asks for the entries of a directory, starting at Cursor (0 first).
type List struct {
	Cursor uint32
	Name   string
}

// ListOK carries one page of entries, sorted by name. More is set when
// another LIST with Next as cursor returns further entries. HasID says
// every entry carries its change time, device and inode (FlagFileID); the
// entries' own HasID is ignored when encoding and set from it decoding.
type ListOK struct {
	Next    uint32
	More    bool
	HasID   bool
	Entries []FileInfo
}

// LIST_OK flag bits (the byte after next).
const (
	listMore  uint8 = 1 << 0
	listHasID uint8 = 1 << 1
)

// Read flags.
const (
	ReadCRC    uint8 = 1 << 0 // server returns CRC32C of the data in READ_DONE
	ReadRegion uint8 = 1 << 1 // Region is present: write the data there
)

// Region is a client memory region the server may write into (RDMA
// semantics): Addr and Len in the client's address space, Key its remote key.
type Region struct {
	Addr uint64
	Len  uint64
	Key  uint32
}

// Read asks for Length bytes of Name at Offset.
type Read struct {
	Offset uint64
	Length uint32
	Flags  uint8
	Region Region // valid when Flags&ReadRegion
	Name   string
}

// Data announces N raw bytes at Offset within the request's data; on a
// stream transport they follow the frame immediately.
type Data struct {
	Offset uint32
	N      uint32
}

// ReadDone completes a READ: N bytes were delivered; EOF is set when the
// file ended before Length; CRC is the CRC32C (Castagnoli) of the N bytes
// when HasCRC.
type ReadDone struct {
	N      uint32
	EOF    bool
	HasCRC bool
	CRC    uint32
}

// Goodbye tells the client the server is draining: in-flight requests
// finish, new ones are not read. The client reconnects later.
type Goodbye struct{ Reason Code }

// Marshal encodings: each Append method appends the payload to b.

// Append encodes m.
func (m Hello) Append(b []byte) []byte { return putU32(append(b, m.Nonce[:]...), m.Flags) }

// Append encodes m.
func (m Challenge) Append(b []byte) []byte {
	b = append(b, m.Mode)
	b = append(b, m.Nonce[:]...)
	return append(b, m.ServerProof[:]...)
}

// Append encodes m.
func (m Auth) Append(b []byte) []byte { return append(b, m.Proof[:]...) }

// Append encodes m.
func (m Welcome) Append(b []byte) []byte {
	b = putU32(putU32(putU32(putU32(b, m.Credits), m.MaxPayload), m.MaxRead), m.Chunk)
	if m.Flags != 0 {
		b = putU32(b, m.Flags)
	}
	return b
}

// Append encodes m; an over-long message is truncated.
func (m ErrorMsg) Append(b []byte) []byte {
	msg := m.Message
	if len(msg) > MaxMessage {
		msg = msg[:MaxMessage]
	}
	return putStr(putU16(b, uint16(m.Code)), msg)
}

// Append encodes m.
func (m Stat) Append(b []byte) []byte { return putStr(b, m.Name) }

func appendInfo(b []byte, fi FileInfo, withName, withID bool) []byte {
	if withName {
		b = putStr(b, fi.Name)
	}
	b = putU32(putU64(putU64(b, fi.Size), uint64(fi.Mtime)), fi.Mode)
	if withID {
		b = putU64(putU64(putU64(b, uint64(fi.Ctime)), fi.Dev), fi.Ino)
	}
	return b
}

// Append encodes m as a STAT_OK payload: FileInfoSize bytes, and
// FileIDSize more when m.HasID.
func (m FileInfo) Append(b []byte) []byte { return appendInfo(b, m, false, m.HasID) }

// Append encodes m.
func (m List) Append(b []byte) []byte { return putStr(putU32(b, m.Cursor), m.Name) }

// ListEntrySize is the encoded size of one LIST_OK entry named name,
// without the identity fields (FileIDSize more each when ListOK.HasID).
func ListEntrySize(name string) int { return 2 + len(name) + FileInfoSize }

// ListHeaderSize is the encoded size of a LIST_OK payload without entries.
const ListHeaderSize = 4 + 1 + 2

// Append encodes m.
func (m ListOK) Append(b []byte) []byte {
	b = putU32(b, m.Next)
	var flags uint8
	if m.More {
		flags |= listMore
	}
	if m.HasID {
		flags |= listHasID
	}
	b = putU16(append(b, flags), uint16(len(m.Entries)))
	for _, e := range m.Entries {
		b = appendInfo(b, e, true, m.HasID)
	}
	return b
}

// Append encodes m.
func (m Read) Append(b []byte) []byte {
	b = append(putU32(putU64(b, m.Offset), m.Length), m.Flags)
	if m.Flags&ReadRegion != 0 {
		b = putU32(putU64(putU64(b, m.Region.Addr), m.Region.Len), m.Region.Key)
	}
	return putStr(b, m.Name)
}

// Append encodes m.
func (m Data) Append(b []byte) []byte { return putU32(putU32(b, m.Offset), m.N) }

// Append encodes m.
func (m ReadDone) Append(b []byte) []byte {
	var f uint8
	if m.EOF {
		f |= 1
	}
	if m.HasCRC {
		f |= 2
	}
	return putU32(append(putU32(b, m.N), f), m.CRC)
}

// Append encodes m.
func (m Goodbye) Append(b []byte) []byte { return putU16(b, uint16(m.Reason)) }

// Decoders: each parses a whole payload and refuses trailing bytes.

// DecodeHello parses a HELLO payload.
func DecodeHello(p []byte) (m Hello, err error) {
	d := dec{b: p}
	copy(m.Nonce[:], d.bytes(NonceSize))
	m.Flags = d.u32()
	return m, d.done()
}

// DecodeChallenge parses a CHALLENGE payload.
func DecodeChallenge(p []byte) (m Challenge, err error) {
	d := dec{b: p}
	m.Mode = d.u8()
	copy(m.Nonce[:], d.bytes(NonceSize))
	copy(m.ServerProof[:], d.bytes(ProofSize))
	return m, d.done()
}

// DecodeAuth parses an AUTH payload.
func DecodeAuth(p []byte) (m Auth, err error) {
	d := dec{b: p}
	copy(m.Proof[:], d.bytes(ProofSize))
	return m, d.done()
}

// DecodeWelcome parses a WELCOME payload and checks the limits are usable.
// The granted flags are optional: 16 bytes grant none, 20 bytes carry
// them, non-zero and known.
func DecodeWelcome(p []byte) (m Welcome, err error) {
	d := dec{b: p}
	m.Credits, m.MaxPayload, m.MaxRead, m.Chunk = d.u32(), d.u32(), d.u32(), d.u32()
	if d.err == nil && len(d.b) != 0 {
		if m.Flags = d.u32(); d.err == nil && (m.Flags == 0 || m.Flags&^KnownFlags != 0) {
			return m, fmt.Errorf("%w: WELCOME grants flags 0x%x (known: 0x%x, and zero is sent as no field)", ErrMalformed, m.Flags, KnownFlags)
		}
	}
	if err := d.done(); err != nil {
		return m, err
	}
	if m.Credits == 0 || m.MaxRead == 0 || m.Chunk == 0 || m.MaxPayload < 256 {
		return m, fmt.Errorf("%w: unusable limits %+v", ErrMalformed, m)
	}
	return m, nil
}

// DecodeError parses an ERROR payload.
func DecodeError(p []byte) (m ErrorMsg, err error) {
	d := dec{b: p}
	m.Code = Code(d.u16())
	m.Message = d.str(MaxMessage)
	return m, d.done()
}

// DecodeStat parses a STAT payload.
func DecodeStat(p []byte) (m Stat, err error) {
	d := dec{b: p}
	m.Name = d.str(maxWireString)
	return m, d.done()
}

func decodeInfo(d *dec, withName, withID bool) (fi FileInfo) {
	if withName {
		fi.Name = d.str(MaxNameLen)
	}
	fi.Size = d.u64()
	fi.Mtime = int64(d.u64())
	fi.Mode = d.u32()
	if withID {
		fi.HasID = true
		fi.Ctime = int64(d.u64())
		fi.Dev = d.u64()
		fi.Ino = d.u64()
	}
	return fi
}

// DecodeFileInfo parses a STAT_OK payload: FileInfoSize bytes, or
// FileInfoSize+FileIDSize with the identity fields (HasID).
func DecodeFileInfo(p []byte) (FileInfo, error) {
	d := dec{b: p}
	fi := decodeInfo(&d, false, len(p) == FileInfoSize+FileIDSize)
	return fi, d.done()
}

// DecodeList parses a LIST payload.
func DecodeList(p []byte) (m List, err error) {
	d := dec{b: p}
	m.Cursor = d.u32()
	m.Name = d.str(maxWireString)
	return m, d.done()
}

// DecodeListOK parses a LIST_OK payload.
func DecodeListOK(p []byte) (m ListOK, err error) {
	d := dec{b: p}
	m.Next = d.u32()
	flags := d.u8()
	if flags&^(listMore|listHasID) != 0 && d.err == nil {
		return m, fmt.Errorf("%w: unknown LIST_OK flags 0x%02x", ErrMalformed, flags)
	}
	m.More, m.HasID = flags&listMore != 0, flags&listHasID != 0
	n := int(d.u16())
	// Each entry takes at least 22 bytes (46 with identities): refuse
	// counts the payload cannot hold before allocating for them.
	least := ListEntrySize("")
	if m.HasID {
		least += FileIDSize
	}
	if d.err == nil && n*least > len(d.b) {
		return m, fmt.Errorf("%w: %d entries cannot fit in %d bytes", ErrMalformed, n, len(d.b))
	}
	m.Entries = make([]FileInfo, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		m.Entries = append(m.Entries, decodeInfo(&d, true, m.HasID))
	}
	return m, d.done()
}

// DecodeRead parses a READ payload.
func DecodeRead(p []byte) (m Read, err error) {
	d := dec{b: p}
	m.Offset = d.u64()
	m.Length = d.u32()
	m.Flags = d.u8()
	if m.Flags&^(ReadCRC|ReadRegion) != 0 && d.err == nil {
		return m, fmt.Errorf("%w: unknown READ flags 0x%02x", ErrMalformed, m.Flags)
	}
	if m.Flags&ReadRegion != 0 {
		m.Region = Region{Addr: d.u64(), Len: d.u64(), Key: d.u32()}
	}
	m.Name = d.str(maxWireString)
	return m, d.done()
}

// DecodeData parses a DATA payload.
func DecodeData(p []byte) (m Data, err error) {
	d := dec{b: p}
	m.Offset, m.N = d.u32(), d.u32()
	return m, d.done()
}

// DecodeReadDone parses a READ_DONE payload.
func DecodeReadDone(p []byte) (m ReadDone, err error) {
	d := dec{b: p}
	m.N = d.u32()
	f := d.u8()
	if f&^3 != 0 && d.err == nil {
		return m, fmt.Errorf("%w: unknown READ_DONE flags 0x%02x", ErrMalformed, f)
	}
	m.EOF, m.HasCRC = f&1 != 0, f&2 != 0
	m.CRC = d.u32()
	return m, d.done()
}

// DecodeGoodbye parses a GOODBYE payload.
func DecodeGoodbye(p []byte) (m Goodbye, err error) {
	d := dec{b: p}
	m.Reason = Code(d.u16())
	return m, d.done()
}
