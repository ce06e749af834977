package rdmafs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

// dialFailure says what failed to connect: the transport's error alone
// where it names the address already (net.OpError: "dial tcp ADDR: ..."),
// else prefixed with the transport and the address.
func dialFailure(transport, addr string, err error) string {
	if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Addr != nil {
		return err.Error()
	}
	return fmt.Sprintf("%s %s: %v", transport, addr, err)
}

// dialConn connects, authenticates and starts the reader.
func dialConn(ctx context.Context, cfg *clientConfig, addr string) (*clientConn, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	c, err := cfg.transport.Dial(ctx, addr)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, ctx.Err()
		}
		return nil, &Error{Op: "dial", Msg: dialFailure(cfg.transport.Name(), addr, err) + "; is the server (gdsload serve) running there?", Err: ErrServerGone}
	}
	// A server gives up on a handshake after its HandshakeTimeout (10 s
	// by default): waiting longer only delays the error.
	hctx, hcancel := context.WithTimeout(ctx, clientHandshakeTimeout)
	defer hcancel()
	if dl, ok := hctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	// Let ctx cancellation interrupt a stuck handshake.
	stop := context.AfterFunc(hctx, func() { _ = c.SetDeadline(time.Now()) })
	w, nonces, err := clientHandshake(c, cfg.token)
	if err == nil {
		// Transports with a queue pair (verbs) connect it now, proving the
		// session with the handshake's nonces.
		if err = connectQueuePair(hctx, c, cfg.token, &nonces[0], &nonces[1]); err != nil {
			err = &Error{Op: "handshake", Msg: fmt.Sprintf("%s %s: %v", cfg.transport.Name(), addr, err), Err: queuePairErr(err)}
		}
	}
	stop()
	if err != nil {
		c.Close()
		var e *Error
		if errors.As(err, &e) {
			return nil, err
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(ctx.Err(), context.Canceled) {
			return nil, &Error{Op: "handshake", Err: fmt.Errorf("%w: %v", ErrServerGone, err),
				Msg: fmt.Sprintf("%s accepted the connection but did not answer the rdmafs handshake within %s: is gdsload serve listening on that port, or another program?",
					addr, min(cfg.timeout, clientHandshakeTimeout))}
		}
		return nil, &Error{Op: "handshake", Msg: addr, Err: fmt.Errorf("%w: %v", ErrServerGone, err)}
	}
	_ = c.SetDeadline(time.Time{})
	cc := &clientConn{
		c:       c,
		r:       newStreamReader(c),
		welcome: w,
		credits: make(chan struct{}, min(int(w.Credits), cfg.perConn)),
		timeout: cfg.timeout,
		pending: map[uint32]*call{},
		dead:    make(chan struct{}),
	}
	if rr, ok := c.(RegionRegistrar); ok {
		cc.regions = rr
	}
	go cc.readLoop()
	return cc, nil
}

// clientHandshakeTimeout bounds the handshake on the client, as the
// server's default HandshakeTimeout bounds it there.
const clientHandshakeTimeout = 10 * time.Second

// clientHandshake runs HELLO → CHALLENGE → AUTH → WELCOME. The client
// checks the server's proof before revealing its own. It returns the
// client's and the server's nonces too.
func clientHandshake(c net.Conn, token []byte) (wire.Welcome, [2][wire.NonceSize]byte, error) {
	var nonces [2][wire.NonceSize]byte
	w, err := clientHandshakeNonces(c, token, &nonces)
	return w, nonces, err
}

func clientHandshakeNonces(c net.Conn, token []byte, nonces *[2][wire.NonceSize]byte) (wire.Welcome, error) {
	// Ask for file identities in STAT_OK and LIST_OK (change time,
	// device, inode), which File.Verify compares; a server that does not
	// grant them (one from before they existed ignores the flag) answers
	// as it always did, and Verify compares type, size and mtime alone.
	hello := wire.Hello{Nonce: newNonce(), Flags: wire.FlagFileID}
	nonces[0] = hello.Nonce
	if _, err := c.Write(wire.AppendFrame(nil, wire.TypeHello, 0, hello.Append(nil))); err != nil {
		return wire.Welcome{}, err
	}
	buf := make([]byte, 2048)
	h, p, err := wire.ReadFrame(c, buf, uint32(len(buf)))
	if err != nil {
		return wire.Welcome{}, handshakeReadErr("CHALLENGE", err)
	}
	if h.Type == wire.TypeError {
		return wire.Welcome{}, handshakeServerErr(p)
	}
	if h.Type != wire.TypeChallenge {
		return wire.Welcome{}, &Error{Op: "handshake", Msg: fmt.Sprintf("expected CHALLENGE, got %s", h.Type), Err: ErrProtocol}
	}
	ch, err := wire.DecodeChallenge(p)
	if err != nil {
		return wire.Welcome{}, &Error{Op: "handshake", Err: fmt.Errorf("%w: %v", ErrProtocol, err)}
	}
	nonces[1] = ch.Nonce
	var auth wire.Auth
	switch {
	case ch.Mode == wire.AuthNone && len(token) > 0:
		return wire.Welcome{}, &Error{Op: "handshake", Err: ErrAuth,
			Msg: "server does not authenticate (it runs without a token) but this client has a token; refusing an unauthenticated server. Drop the token to connect anyway"}
	case ch.Mode == wire.AuthHMAC && len(token) == 0:
		return wire.Welcome{}, &Error{Op: "handshake", Err: ErrAuth,
			Msg: "server requires a token; give the client the server's token (or set GDSLOAD_TOKEN)"}
	case ch.Mode == wire.AuthHMAC:
		if !proofEqual(ch.ServerProof, serverProof(token, &hello.Nonce, &ch.Nonce)) {
			return wire.Welcome{}, &Error{Op: "handshake", Err: ErrAuth,
				Msg: "server could not prove it knows the token: the tokens differ, or this is not the server you meant"}
		}
		auth.Proof = clientProof(token, &hello.Nonce, &ch.Nonce)
	case ch.Mode != wire.AuthNone:
		return wire.Welcome{}, &Error{Op: "handshake", Msg: fmt.Sprintf("unknown auth mode %d", ch.Mode), Err: ErrProtocol}
	}
	if _, err := c.Write(wire.AppendFrame(nil, wire.TypeAuth, 0, auth.Append(nil))); err != nil {
		return wire.Welcome{}, err
	}
	h, p, err = wire.ReadFrame(c, buf, uint32(len(buf)))
	if err != nil {
		return wire.Welcome{}, handshakeReadErr("WELCOME", err)
	}
	if h.Type == wire.TypeError {
		return wire.Welcome{}, handshakeServerErr(p)
	}
	if h.Type != wire.TypeWelcome {
		return wire.Welcome{}, &Error{Op: "handshake", Msg: fmt.Sprintf("expected WELCOME, got %s", h.Type), Err: ErrProtocol}
	}
	w, err := wire.DecodeWelcome(p)
	if err != nil {
		return wire.Welcome{}, &Error{Op: "handshake", Err: fmt.Errorf("%w: %v", ErrProtocol, err)}
	}
	if extra := w.Flags &^ hello.Flags; extra != 0 {
		return wire.Welcome{}, &Error{Op: "handshake", Msg: fmt.Sprintf("server granted flags 0x%x that were not asked for", extra), Err: ErrProtocol}
	}
	return w, nil
}

// isPeerMismatch tells whether a frame read failed because the peer does
// not speak this version of the protocol.
func isPeerMismatch(err error) bool {
	return errors.Is(err, wire.ErrMagic) || errors.Is(err, wire.ErrVersion) || errors.Is(err, wire.ErrTooLarge)
}

func handshakeReadErr(what string, err error) error {
	if isPeerMismatch(err) {
		return &Error{Op: "handshake", Msg: "reading " + what + ": not an rdmafs server of this version?", Err: fmt.Errorf("%w: %v", ErrProtocol, err)}
	}
	return fmt.Errorf("reading %s: %w", what, err)
}

func handshakeServerErr(p []byte) error { return connErr("handshake", p) }

// connErr is the error an ERROR frame for the whole connection (id 0)
// carries, during op.
func connErr(op string, p []byte) error {
	m, err := wire.DecodeError(p)
	if err != nil {
		return &Error{Op: op, Err: fmt.Errorf("%w: %v", ErrProtocol, err)}
	}
	return &Error{Op: op, Code: m.Code, Msg: m.Message, Err: connCodeErr(m.Code)}
}
