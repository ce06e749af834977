package rdmafs

import (
	"context"
	"fmt"
	"net"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

// Transport establishes rdmafs connections. The control stream (every frame)
// is a net.Conn; how bulk data travels depends on the connection:
//
//   - a stream transport (tcp) sends the data on the stream after each DATA
//     frame;
//   - a region transport (verbs, loopback) returns connections that
//     implement RegionWriter on the server side and RegionRegistrar on the
//     client side: the client registers its destination buffer, the server
//     writes into it, then sends READ_DONE, which the connection delivers
//     behind the data (verbs: every server frame travels on the queue
//     pair, after the RDMA WRITEs).
//
// Implementations must be safe for concurrent use.
type Transport interface {
	// Name identifies the transport: "tcp", "verbs" or "loopback".
	Name() string
	// Listen accepts connections on addr.
	Listen(ctx context.Context, addr string) (net.Listener, error)
	// Dial connects to a server listening on addr.
	Dial(ctx context.Context, addr string) (net.Conn, error)
}

// RegionWriter is implemented by server-side connections of region
// transports.
type RegionWriter interface {
	// WriteRegion writes p into the client region r at byte offset off
	// (RDMA WRITE) and returns once the write completed; whatever it
	// returns, the device is done with p, which the caller may reuse. The
	// data is placed in the client's memory before any frame the server
	// writes on the connection afterwards reaches the client. A range
	// outside the region yields an error wrapping ErrRegion and writes
	// nothing; a key the client's device refuses (wrong, deregistered)
	// yields ErrRegion too, and the connection is dropped (the queue pair
	// has failed).
	WriteRegion(r Region, off uint64, p []byte) error
}

// RegionRegistrar is implemented by client-side connections of region
// transports.
type RegionRegistrar interface {
	// Register makes p writable by the peer and returns its region. p must
	// not be used by the caller until Deregister returns.
	Register(p []byte) (Region, error)
	// Deregister revokes the region. After it returns the peer can no
	// longer write into the memory, even if a write was requested earlier.
	Deregister(r Region) error
}

// TransportByName returns the transport named name: "tcp" always;
// "verbs" (or "rdma") where rdma-core loads and an RDMA device exists,
// else an error wrapping ErrNoRDMA.
func TransportByName(name string) (Transport, error) {
	switch name {
	case "", "tcp":
		return TCP(), nil
	case "verbs", "rdma":
		return Verbs()
	default:
		return nil, fmt.Errorf("unknown rdmafs transport %q: use tcp or verbs", name)
	}
}

// Region is a client memory region a server may write into: address and
// length in the client's address space and the remote key that grants
// access.
type Region = wire.Region
