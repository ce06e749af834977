package rdmafs

import (
	"context"
	"net"
)

// tcpSocketBuffer is the socket buffer size asked for: large enough that a
// connection keeps several chunks in flight on fast links.
const tcpSocketBuffer = 4 << 20

type tcpTransport struct{}

// TCP returns the stream transport: frames and data on one TCP connection
// per client connection. It works everywhere.
func TCP() Transport { return tcpTransport{} }

func (tcpTransport) Name() string { return "tcp" }

func (tcpTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(ctx, "tcp", addr)
}

func (tcpTransport) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tuneTCP(c)
	return c, nil
}

// tuneTCP asks for larger buffers; failures only cost throughput.
func tuneTCP(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(tcpSocketBuffer)
		_ = tc.SetWriteBuffer(tcpSocketBuffer)
	}
}
