package rdmafs

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"syscall"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

// Pairing ties a verbs queue pair to the TCP session that authenticated.
// After WELCOME the client connects its queue pair through rdma_cm with
// this private data:
//
//	"RFQ1" | session id (16 bytes) | tag (32 bytes)
//
// The session id is the first half of the server's handshake nonce; the
// tag is HMAC-SHA256(token, "rdmafs/1 queue pair" ‖ nonce_c ‖ nonce_s). The
// server looks the session up, compares tags in constant time and only
// then allocates anything for the queue pair. A session pairs once, within
// the pairing timeout; the server caps how many wait. Over InfiniBand the
// private data arrives padded with zeros (56 bytes), which is accepted.
//
// Without a token (--insecure-no-token) the tag is keyed with the empty
// key: it still proves knowledge of both nonces, which only the two ends
// of the TCP stream and whoever can read it have.
//
// A server refusing a queue pair says why in its reject private data:
// "RFQ1" | reason (1 byte).

const (
	pairMagic   = "RFQ1"
	pairIDSize  = 16
	pairTagSize = 32
	pairSize    = len(pairMagic) + pairIDSize + pairTagSize
	pairLabel   = "rdmafs/1 queue pair"
)

type pairingID [pairIDSize]byte

// pairingSession is what both ends derive from the handshake.
type pairingSession struct {
	id  pairingID
	tag [pairTagSize]byte
}

func newPairingSession(token []byte, clientNonce, serverNonce *[wire.NonceSize]byte) pairingSession {
	var s pairingSession
	copy(s.id[:], serverNonce[:pairIDSize])
	m := hmac.New(sha256.New, token)
	m.Write([]byte(pairLabel))
	m.Write(clientNonce[:])
	m.Write(serverNonce[:])
	copy(s.tag[:], m.Sum(nil))
	return s
}

// encode is the connect request's private data.
func (s pairingSession) encode() []byte {
	b := make([]byte, 0, pairSize)
	b = append(b, pairMagic...)
	b = append(b, s.id[:]...)
	return append(b, s.tag[:]...)
}

var errPairing = errors.New("not rdmafs queue-pair pairing data")

// parsePairing decodes connect-request private data: exactly pairSize
// bytes, then nothing but zero padding.
func parsePairing(b []byte) (pairingSession, error) {
	var s pairingSession
	if len(b) < pairSize || string(b[:len(pairMagic)]) != pairMagic {
		return s, errPairing
	}
	for _, c := range b[pairSize:] {
		if c != 0 {
			return s, errPairing
		}
	}
	copy(s.id[:], b[len(pairMagic):])
	copy(s.tag[:], b[len(pairMagic)+pairIDSize:])
	return s, nil
}

// Reasons a server refuses a queue pair.
const (
	rejectAuth      byte = 1 // unknown or expired session, or wrong tag
	rejectResources byte = 2 // the server could not set the queue pair up
	rejectClosing   byte = 3 // the server is shutting down
)

func encodeReject(reason byte) []byte { return append([]byte(pairMagic), reason) }

// parseReject decodes a server's reject private data (zero padded over
// InfiniBand); ok is false for anything else.
func parseReject(b []byte) (reason byte, ok bool) {
	if len(b) < len(pairMagic)+1 || string(b[:len(pairMagic)]) != pairMagic || b[len(pairMagic)] == 0 {
		return 0, false
	}
	if !bytes.Equal(b[len(pairMagic)+1:], make([]byte, len(b)-len(pairMagic)-1)) {
		return 0, false
	}
	return b[len(pairMagic)], true
}

func rejectText(reason byte) string {
	switch reason {
	case rejectAuth:
		return "the server does not know this session (pairing expired or not authenticated)"
	case rejectResources:
		return "the server could not set up the queue pair (see its log: often the locked-memory limit)"
	case rejectClosing:
		return "the server is shutting down"
	}
	return fmt.Sprintf("reason %d", reason)
}

// queuePairServer is implemented by server connections whose transport
// pairs a queue pair with the authenticated session (verbs).
type queuePairServer interface {
	// expectQueuePair registers the session before WELCOME goes out, so
	// the client's connect request cannot arrive first; wait then blocks
	// until the queue pair is established or deadline passes, cancel
	// withdraws the session.
	expectQueuePair(s pairingSession) (wait func(deadline time.Time) error, cancel func(), err error)
}

// queuePairClient is implemented by client connections of such
// transports.
type queuePairClient interface {
	// connectQueuePair connects the queue pair of session s (after
	// WELCOME).
	connectQueuePair(ctx context.Context, s pairingSession) error
}

// expectQueuePair is the server handshake's hook: a no-op for transports
// without a queue pair.
func (sc *serverConn) expectQueuePair(clientNonce, serverNonce *[wire.NonceSize]byte) (func(time.Time) error, func(), error) {
	qs, ok := sc.c.(queuePairServer)
	if !ok {
		return func(time.Time) error { return nil }, func() {}, nil
	}
	return qs.expectQueuePair(newPairingSession(sc.s.cfg.Token, clientNonce, serverNonce))
}

// connectQueuePair is the client handshake's hook: a no-op for transports
// without a queue pair.
func connectQueuePair(ctx context.Context, c any, token []byte, clientNonce, serverNonce *[wire.NonceSize]byte) error {
	qc, ok := c.(queuePairClient)
	if !ok {
		return nil
	}
	return qc.connectQueuePair(ctx, newPairingSession(token, clientNonce, serverNonce))
}

// queuePairErr classifies a failure to connect the queue pair for the
// client: this machine cannot (no device, locked-memory limit) is not
// worth retrying; anything else may pass, like a lost connection.
func queuePairErr(err error) error {
	if errors.Is(err, syscall.ENOMEM) || errors.Is(err, errNoDevice) {
		return ErrNoRDMA
	}
	return ErrServerGone
}

// bufferRegistrar is implemented by listeners that register the server's
// buffer pool with their devices before serving (verbs).
type bufferRegistrar interface {
	prepare(pool [][]byte, log *slog.Logger) error
}
