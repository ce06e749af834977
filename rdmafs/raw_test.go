package rdmafs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
	"github.com/stretchr/testify/require"
)

// raw speaks frames to a server directly, bypassing the client, so tests
// can send what a well-behaved client never would.
type raw struct {
	t testing.TB
	c net.Conn
	// nonces are the client's and the server's from the last handshake.
	nonces [2][wire.NonceSize]byte
}

func rawDial(t testing.TB, addr string) *raw {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &raw{t: t, c: c}
}

func (r *raw) send(typ wire.Type, id uint32, payload []byte) {
	r.t.Helper()
	r.sendBytes(wire.AppendFrame(nil, typ, id, payload))
}

func (r *raw) sendBytes(b []byte) {
	r.t.Helper()
	_ = r.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := r.c.Write(b)
	require.NoError(r.t, err, "raw write")
}

// recv reads one frame; DATA bytes that follow are read and returned too.
func (r *raw) recv() (wire.Header, []byte, error) {
	_ = r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, wire.MaxPayload)
	h, p, err := wire.ReadFrame(r.c, buf, wire.MaxPayload)
	if err != nil {
		return h, nil, err
	}
	if h.Type == wire.TypeData {
		d, err := wire.DecodeData(p)
		if err != nil {
			return h, nil, err
		}
		data := make([]byte, d.N)
		_, err = io.ReadFull(r.c, data)
		return h, data, err
	}
	return h, p, nil
}

// handshake authenticates with token (nil: send an all-zero proof) and
// returns the server's first reply after AUTH.
func (r *raw) handshake(token []byte) (wire.Header, []byte) {
	r.t.Helper()
	hello := wire.Hello{Nonce: newNonce()}
	r.send(wire.TypeHello, 0, hello.Append(nil))
	h, p, err := r.recv()
	require.NoError(r.t, err, "expected CHALLENGE, got %s, %v", h.Type, err)
	require.Equal(r.t, wire.TypeChallenge, h.Type, "expected CHALLENGE, got %s, %v", h.Type, err)
	ch, err := wire.DecodeChallenge(p)
	require.NoError(r.t, err)
	r.nonces = [2][wire.NonceSize]byte{hello.Nonce, ch.Nonce}
	var a wire.Auth
	if token != nil {
		a.Proof = clientProof(token, &hello.Nonce, &ch.Nonce)
	}
	r.send(wire.TypeAuth, 0, a.Append(nil))
	h, p, err = r.recv()
	require.NoError(r.t, err, "after AUTH")
	return h, p
}

func (r *raw) mustWelcome(token []byte) {
	r.t.Helper()
	h, p := r.handshake(token)
	require.Equal(r.t, wire.TypeWelcome, h.Type, "expected WELCOME, got %s %q", h.Type, p)
}

// read sends a READ of n bytes of name as request id and returns the bytes
// of its DATA frames once its READ_DONE arrives; any other reply fails
// the test.
func (r *raw) read(id uint32, name string, n uint32) []byte {
	r.t.Helper()
	r.send(wire.TypeRead, id, wire.Read{Length: n, Name: name}.Append(nil))
	var got []byte
	for {
		h, p, err := r.recv()
		require.NoError(r.t, err, "READ %s", name)
		switch h.Type {
		case wire.TypeData:
			got = append(got, p...)
		case wire.TypeReadDone:
			return got
		default:
			require.FailNow(r.t, "unexpected frame", "READ %s: got %s after %d bytes", name, h.Type, len(got))
		}
	}
}

// expectError reads frames until an ERROR and returns its code.
func (r *raw) expectError() (wire.Header, wire.ErrorMsg) {
	r.t.Helper()
	for {
		h, p, err := r.recv()
		require.NoError(r.t, err, "expected ERROR, got")
		if h.Type == wire.TypeData {
			continue
		}
		require.Equal(r.t, wire.TypeError, h.Type, "expected ERROR, got %s", h.Type)
		m, err := wire.DecodeError(p)
		require.NoError(r.t, err)
		return h, m
	}
}

// expectClosed checks the server closes the connection.
func (r *raw) expectClosed() {
	r.t.Helper()
	require.NoError(r.t, drainUntilClosed(r.c, 5*time.Second))
}

// drainUntilClosed reads c until the peer closes it (EOF or reset), and
// fails if that takes longer than d. It calls no testing function, so it
// may run on a goroutine of its own.
func drainUntilClosed(c net.Conn, d time.Duration) error {
	_ = c.SetReadDeadline(time.Now().Add(d))
	var b [64 << 10]byte
	for {
		_, err := c.Read(b[:])
		if err == nil {
			continue
		}
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			return fmt.Errorf("the server neither finished nor closed the connection within %v", d)
		}
		return nil
	}
}

func headerBytes(magic uint16, version, typ uint8, id, length uint32) []byte {
	b := make([]byte, wire.HeaderSize)
	binary.BigEndian.PutUint16(b, magic)
	b[2], b[3] = version, typ
	binary.BigEndian.PutUint32(b[4:], id)
	binary.BigEndian.PutUint32(b[8:], length)
	return b
}
