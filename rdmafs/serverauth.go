package rdmafs

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

// handshake runs HELLO → CHALLENGE → AUTH → WELCOME under HandshakeTimeout.
// No request is read before it succeeds.
func (sc *serverConn) handshake() error {
	cfg := &sc.s.cfg
	deadline := time.Now().Add(cfg.HandshakeTimeout)
	_ = sc.c.SetDeadline(deadline)
	defer sc.c.SetDeadline(time.Time{})
	// Handshake frames are tiny: a 256-byte cap refuses anything else early.
	buf := make([]byte, 256)
	h, p, err := wire.ReadFrame(sc.c, buf, uint32(len(buf)))
	if err != nil {
		return sc.handshakeFail(wire.CodeProtocol, fmt.Errorf("read HELLO: %w", err))
	}
	if h.Type != wire.TypeHello {
		return sc.handshakeFail(wire.CodeProtocol, fmt.Errorf("expected HELLO, got %s", h.Type))
	}
	hello, err := wire.DecodeHello(p)
	if err != nil {
		return sc.handshakeFail(wire.CodeProtocol, err)
	}
	ch := wire.Challenge{Mode: wire.AuthNone, Nonce: newNonce()}
	if len(cfg.Token) > 0 {
		ch.Mode = wire.AuthHMAC
		ch.ServerProof = serverProof(cfg.Token, &hello.Nonce, &ch.Nonce)
	}
	if err := sc.sendMsg(wire.TypeChallenge, 0, ch.Append(nil)); err != nil {
		return err
	}
	h, p, err = wire.ReadFrame(sc.c, buf, uint32(len(buf)))
	if err != nil {
		if ch.Mode == wire.AuthHMAC && hungUp(err) {
			// A client checks the server's proof before it answers: one
			// whose token differs, or that has none, hangs up here, and
			// this is the only sign of a failed login the server gets.
			return sc.handshakeFail(wire.CodeAuth, errors.New("client hung up after the challenge without authenticating: its token differs from the server's, or it has none"))
		}
		return sc.handshakeFail(wire.CodeProtocol, fmt.Errorf("read AUTH: %w", err))
	}
	if h.Type != wire.TypeAuth {
		return sc.handshakeFail(wire.CodeAuth, fmt.Errorf("expected AUTH, got %s", h.Type))
	}
	auth, err := wire.DecodeAuth(p)
	if err != nil {
		return sc.handshakeFail(wire.CodeProtocol, err)
	}
	if ch.Mode == wire.AuthHMAC && !proofEqual(auth.Proof, clientProof(cfg.Token, &hello.Nonce, &ch.Nonce)) {
		return sc.handshakeFail(wire.CodeAuth, errors.New("client proof does not match: wrong or missing token"))
	}
	w := wire.Welcome{
		Credits:    uint32(cfg.Credits),
		MaxPayload: wire.MaxPayload,
		MaxRead:    uint32(cfg.MaxRead),
		Chunk:      uint32(cfg.BufferSize),
		// Grant what the client asked for and this server knows; other
		// bits are ignored, as servers always have.
		Flags: hello.Flags & wire.KnownFlags,
	}
	sc.flags = w.Flags
	// A transport with a queue pair (verbs) learns of the session before
	// WELCOME, so the client's queue pair cannot arrive first, and no
	// request is read before the queue pair is up.
	waitQP, cancelQP, err := sc.expectQueuePair(&hello.Nonce, &ch.Nonce)
	if err != nil {
		return sc.fail(0, wire.CodeBusy, err)
	}
	if err := sc.sendMsg(wire.TypeWelcome, 0, w.Append(nil)); err != nil {
		cancelQP()
		return err
	}
	return waitQP(deadline)
}

func (sc *serverConn) handshakeFail(code wire.Code, err error) error {
	if code == wire.CodeAuth {
		sc.s.metrics.authFail.Add(1)
		if ok, suppressed := sc.s.authLog.allow(time.Now()); ok {
			attrs := []any{"err", err}
			if suppressed > 0 {
				attrs = append(attrs, "suppressed", suppressed)
			}
			sc.log.Warn("rdmafs login failed", attrs...)
		}
		// The client learns only that authentication failed, not why.
		sc.sendError(0, code, "authentication failed: check that the client's token is the server's")
		return err
	}
	return sc.fail(0, code, err)
}

// hungUp reports whether err means the peer closed or reset the connection
// (as opposed to a timeout or a malformed frame).
func hungUp(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed) {
		return true
	}
	return false
}
