package rdmafs

import (
	"context"
	"net"
)

// loopback is the verbs transport over an RDMA fabric modelled in process,
// for tests. It runs the verbs transport's own code (pairing, queue pairs,
// completions, registrations, teardown) against a model of the hardware
// with the behaviour that code must survive: work requests stay in flight
// until their completion is polled, WRITE data becomes visible only when a
// later message on the same queue pair forces it, a failed work request
// fails the queue pair and flushes everything outstanding, registrations
// count against a locked-memory budget, keys are guessable as on real
// devices, and misuse of the verbs API (use after destroy, wrong teardown
// order) is recorded.
//
// The control connection is real TCP: listen on 127.0.0.1:0 (the queue
// pairs then pair on port + 1 of the model). A loopback is safe for
// concurrent use. Unlike verbs it does not register GPU memory.
type loopback struct {
	v   *verbsTransport
	fab *simFabric
}

// newLoopback returns a loopback transport with one modelled device.
func newLoopback() *loopback {
	fab := newSimFabric()
	return &loopback{v: newVerbsTransport("loopback", fab), fab: fab}
}

// Name returns "loopback".
func (*loopback) Name() string { return "loopback" }

// Listen listens on addr, a TCP address.
func (l *loopback) Listen(ctx context.Context, addr string) (net.Listener, error) {
	return l.v.Listen(ctx, addr)
}

// Dial connects to a server listening on addr.
func (l *loopback) Dial(ctx context.Context, addr string) (net.Conn, error) {
	return l.v.Dial(ctx, addr)
}
