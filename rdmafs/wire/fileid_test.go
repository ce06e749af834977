package wire

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The identity fields a granted FlagFileID adds round-trip in STAT_OK,
// LIST_OK and WELCOME, and refuse truncation and trailing bytes.
func TestFileIDRoundTrip(t *testing.T) {
	id := FileInfo{Size: 5, Mtime: -3, Mode: 0o644, HasID: true, Ctime: 1_700_000_000_123_456_789, Dev: 0x803, Ino: 1 << 40}
	named := id
	named.Name = "x"
	for _, tc := range []struct {
		name   string
		msg    interface{ Append([]byte) []byte }
		size   int
		decode func([]byte) (any, error)
	}{
		{"statok with id", id, FileInfoSize + FileIDSize, func(p []byte) (any, error) { return DecodeFileInfo(p) }},
		{"listok with ids", ListOK{Next: 1, More: true, HasID: true, Entries: []FileInfo{named}},
			ListHeaderSize + ListEntrySize("x") + FileIDSize, func(p []byte) (any, error) { return DecodeListOK(p) }},
		{"listok with ids, empty", ListOK{HasID: true, Entries: []FileInfo{}}, ListHeaderSize, func(p []byte) (any, error) { return DecodeListOK(p) }},
		{"welcome granting ids", Welcome{Credits: 1, MaxPayload: MaxPayload, MaxRead: 1, Chunk: 1, Flags: FlagFileID}, 20, func(p []byte) (any, error) { return DecodeWelcome(p) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.msg.Append(nil)
			require.Len(t, p, tc.size)
			got, err := tc.decode(p)
			require.NoError(t, err)
			assert.Equal(t, tc.msg, got)
			_, err = tc.decode(p[:len(p)-1])
			require.ErrorIs(t, err, ErrMalformed, "truncated")
			_, err = tc.decode(append(p, 0))
			require.ErrorIs(t, err, ErrMalformed, "trailing byte")
		})
	}
}

// A peer that was not granted FlagFileID gets, byte for byte, the version 1
// layouts it always got: a client from before file identities never sees
// a field it cannot decode.
func TestFileIDAbsentKeepsVersion1Layout(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  interface{ Append([]byte) []byte }
		want string
	}{
		{"welcome", Welcome{Credits: 16, MaxPayload: MaxPayload, MaxRead: 1 << 20, Chunk: 1 << 18},
			"00000010" + "00010000" + "00100000" + "00040000"},
		{"statok", FileInfo{Size: 5, Mtime: 7, Mode: 0o644},
			"0000000000000005" + "0000000000000007" + "000001a4"},
		{"listok", ListOK{Next: 1, More: true, Entries: []FileInfo{{Name: "a", Size: 5, Mtime: 7, Mode: 0o644}}},
			"00000001" + "01" + "0001" + "000161" + "0000000000000005" + "0000000000000007" + "000001a4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, hex.EncodeToString(tc.msg.Append(nil)))
		})
	}
}

// The optional fields are refused when they are not canonical: a WELCOME
// flags field that grants nothing (zero is sent as no field) or grants an
// unknown flag, and unknown LIST_OK flag bits.
func TestFileIDRefusesNonCanonical(t *testing.T) {
	base := Welcome{Credits: 1, MaxPayload: MaxPayload, MaxRead: 1, Chunk: 1}.Append(nil)
	for _, tc := range []struct {
		name   string
		p      []byte
		decode func([]byte) error
	}{
		{"welcome flags zero", putU32(append([]byte(nil), base...), 0), func(p []byte) error { _, err := DecodeWelcome(p); return err }},
		{"welcome unknown flag", putU32(append([]byte(nil), base...), 1<<7), func(p []byte) error { _, err := DecodeWelcome(p); return err }},
		{"listok unknown flag", []byte{0, 0, 0, 0, 1 << 2, 0, 0}, func(p []byte) error { _, err := DecodeListOK(p); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, tc.decode(tc.p), ErrMalformed)
		})
	}
	// A page that says its entries carry identities but holds a version 1
	// entry is short.
	p := ListOK{Entries: []FileInfo{{Name: "a"}}}.Append(nil)
	p[4] |= listHasID
	_, err := DecodeListOK(p)
	require.ErrorIs(t, err, ErrMalformed)
}
