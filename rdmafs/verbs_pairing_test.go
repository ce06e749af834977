package rdmafs

import (
	"bytes"
	"testing"

	"github.com/gdsload/gdsload/rdmafs/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPairingSession(t *testing.T) {
	var cn, sn, sn2 [wire.NonceSize]byte
	cn[0], sn[0], sn2[0] = 1, 2, 3
	a := newPairingSession(testTok, &cn, &sn)
	require.EqualValues(t, newPairingSession(testTok, &cn, &sn), a, "the same handshake gives two sessions")
	assert.True(t, bytes.Equal(a.id[:], sn[:pairIDSize]), "session id %x is not the server nonce's first half", a.id)
	for name, b := range map[string]pairingSession{
		"other token":        newPairingSession([]byte("another-token-0123456789"), &cn, &sn),
		"no token":           newPairingSession(nil, &cn, &sn),
		"other server nonce": newPairingSession(testTok, &cn, &sn2),
		"nonces swapped":     newPairingSession(testTok, &sn, &cn),
	} {
		assert.NotEqualValues(t, a.tag, b.tag, "%s: same tag", name)
	}
	// The tag is not a handshake proof of either direction.
	assert.NotEqual(t, clientProof(testTok, &cn, &sn), a.tag, "the pairing tag equals a handshake proof")
	assert.NotEqual(t, serverProof(testTok, &cn, &sn), a.tag, "the pairing tag equals a handshake proof")
	enc := a.encode()
	require.Len(t, enc, pairSize, "private data of %d bytes; rdma_cm over InfiniBand carries 56", len(enc))
	require.LessOrEqual(t, pairSize, 56, "private data of %d bytes; rdma_cm over InfiniBand carries 56", len(enc))
	for _, tc := range []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"exact", enc, true},
		{"InfiniBand padding", append(append([]byte(nil), enc...), make([]byte, 56-pairSize)...), true},
		{"non-zero after", append(append([]byte(nil), enc...), 0, 7), false},
		{"short", enc[:pairSize-1], false},
		{"other magic", append([]byte("RFQ2"), enc[4:]...), false},
		{"empty", nil, false},
	} {
		got, err := parsePairing(tc.b)
		assert.Equal(t, tc.ok, (err == nil), "%s: %v, %v", tc.name, got, err)
		assert.False(t, tc.ok && got != a, "%s: %v, %v", tc.name, got, err)
	}
	for _, tc := range []struct {
		b      []byte
		reason byte
		ok     bool
	}{
		{encodeReject(rejectAuth), rejectAuth, true},
		{append(encodeReject(rejectClosing), make([]byte, 143)...), rejectClosing, true},
		{append(encodeReject(rejectAuth), 1), 0, false},
		{[]byte("RFQ1\x00"), 0, false},
		{[]byte("RFQ"), 0, false},
		{nil, 0, false},
	} {
		r, ok := parseReject(tc.b)
		assert.Equal(t, tc.ok, ok, "parseReject(%q) = %d, %v", tc.b, r, ok)
		assert.Equal(t, tc.reason, r, "parseReject(%q) = %d, %v", tc.b, r, ok)
	}
}

// FuzzPairingData: the decoders of rdma_cm private data accept exactly
// what the encoders write, zero padded, and nothing else.
func FuzzPairingData(f *testing.F) {
	var cn, sn [wire.NonceSize]byte
	s := newPairingSession(testTok, &cn, &sn)
	f.Add(s.encode())
	f.Add(append(s.encode(), make([]byte, 4)...))
	f.Add(encodeReject(rejectResources))
	f.Add([]byte(pairMagic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if p, err := parsePairing(b); err == nil {
			require.True(t, bytes.Equal(p.encode(), b[:pairSize]), "parsePairing accepted %x as %x", b, p.encode())
			require.True(t, bytes.Equal(b[pairSize:], make([]byte, len(b)-pairSize)), "parsePairing accepted %x as %x", b, p.encode())
		}
		if r, ok := parseReject(b); ok {
			n := len(encodeReject(r))
			require.NotEqualValues(t, 0, r, "parseReject accepted %x as reason %d", b, r)
			require.True(t, bytes.Equal(encodeReject(r), b[:n]), "parseReject accepted %x as reason %d", b, r)
			require.True(t, bytes.Equal(b[n:], make([]byte, len(b)-n)), "parseReject accepted %x as reason %d", b, r)
		}
	})
}
