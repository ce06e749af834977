package wire

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		msg    interface{ Append([]byte) []byte }
		decode func([]byte) (any, error)
	}{
		{"hello", Hello{Nonce: [32]byte{1, 2}, Flags: 0}, func(p []byte) (any, error) { return DecodeHello(p) }},
		{"challenge", Challenge{Mode: AuthHMAC, Nonce: [32]byte{3}, ServerProof: [32]byte{4}}, func(p []byte) (any, error) { return DecodeChallenge(p) }},
		{"auth", Auth{Proof: [32]byte{9}}, func(p []byte) (any, error) { return DecodeAuth(p) }},
		{"welcome", Welcome{Credits: 16, MaxPayload: MaxPayload, MaxRead: 1 << 26, Chunk: 1 << 20}, func(p []byte) (any, error) { return DecodeWelcome(p) }},
		{"error", ErrorMsg{Code: CodeNotFound, Message: "nope"}, func(p []byte) (any, error) { return DecodeError(p) }},
		{"stat", Stat{Name: "a/b"}, func(p []byte) (any, error) { return DecodeStat(p) }},
		{"statok", FileInfo{Size: 5, Mtime: -3, Mode: 0o644}, func(p []byte) (any, error) { return DecodeFileInfo(p) }},
		{"list", List{Cursor: 7, Name: "d"}, func(p []byte) (any, error) { return DecodeList(p) }},
		{"listok", ListOK{Next: 2, More: true, Entries: []FileInfo{{Name: "x", Size: 1}, {Name: "y", Mode: 1 << 31}}}, func(p []byte) (any, error) { return DecodeListOK(p) }},
		{"read", Read{Offset: 1 << 40, Length: 4096, Flags: ReadCRC, Name: "f"}, func(p []byte) (any, error) { return DecodeRead(p) }},
		{"read region", Read{Offset: 1, Length: 2, Flags: ReadRegion | ReadCRC, Region: Region{Addr: 0x1000, Len: 2, Key: 42}, Name: "f"}, func(p []byte) (any, error) { return DecodeRead(p) }},
		{"data", Data{Offset: 4096, N: 100}, func(p []byte) (any, error) { return DecodeData(p) }},
		{"readdone", ReadDone{N: 3, EOF: true, HasCRC: true, CRC: 0xdeadbeef}, func(p []byte) (any, error) { return DecodeReadDone(p) }},
		{"goodbye", Goodbye{Reason: CodeShuttingDown}, func(p []byte) (any, error) { return DecodeGoodbye(p) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.msg.Append(nil)
			got, err := tc.decode(p)
			require.NoError(t, err)
			require.Equal(t, tc.msg, got, "round trip: got %+v, want %+v", got, tc.msg)
			if len(p) > 0 {
				_, err := tc.decode(p[:len(p)-1])
				require.ErrorIs(t, err, ErrMalformed, "truncated payload: err = %v, want ErrMalformed", err)
			}
			_, err = tc.decode(append(p, 0))
			require.ErrorIs(t, err, ErrMalformed, "trailing byte: err = %v, want ErrMalformed", err)
		})
	}
}

func TestParseHeader(t *testing.T) {
	var good [HeaderSize]byte
	PutHeader(good[:], Header{Type: TypeRead, ID: 5, Length: 100})
	tests := []struct {
		name string
		mod  func(b []byte) []byte
		max  uint32
		want error
	}{
		{"good", func(b []byte) []byte { return b }, MaxPayload, nil},
		{"short", func(b []byte) []byte { return b[:5] }, MaxPayload, ErrMalformed},
		{"magic", func(b []byte) []byte { b[0] = 'X'; return b }, MaxPayload, ErrMagic},
		{"version", func(b []byte) []byte { b[2] = 2; return b }, MaxPayload, ErrVersion},
		{"too large", func(b []byte) []byte { return b }, 99, ErrTooLarge},
	}
	for _, tc := range tests {
		b := append([]byte(nil), good[:]...)
		h, err := ParseHeader(tc.mod(b), tc.max)
		assert.ErrorIs(t, err, tc.want, "%s: err = %v, want %v", tc.name, err, tc.want)
		assert.False(t, tc.want == nil && (h != Header{Type: TypeRead, ID: 5, Length: 100}), "%s: header %+v", tc.name, h)
	}
}

func TestReadFrameRefusesBeforeAllocating(t *testing.T) {
	var hb [HeaderSize]byte
	PutHeader(hb[:], Header{Type: TypeStat, ID: 1, Length: 1 << 31})
	// The reader holds only the header: if ReadFrame tried to read the
	// payload it would fail with EOF, not ErrTooLarge.
	_, _, err := ReadFrame(bytes.NewReader(hb[:]), make([]byte, 16), MaxPayload)
	require.ErrorIs(t, err, ErrTooLarge, "err = %v, want ErrTooLarge", err)
}

func TestListOKRefusesImpossibleCount(t *testing.T) {
	p := []byte{0, 0, 0, 0, 0, 0xff, 0xff} // 65535 entries, no bytes for them
	_, err := DecodeListOK(p)
	require.ErrorIs(t, err, ErrMalformed, "err = %v, want ErrMalformed", err)
}
