package rdmafs

import (
	"context"
	"fmt"
	"math"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

// ReadAtDevice reads n bytes at off straight into GPU memory [ptr, ptr+n)
// by RDMA: for each piece the client registers the GPU range (dma-buf if
// the drivers allow, else nvidia-peermem; see Client.DeviceRegistration),
// advertises it in the READ, waits for READ_DONE and deregisters it, so
// the server's access ends with the piece. Once every piece is done it
// flushes the RDMA writes (DeviceMemory.FlushRDMAWrites), so GPU work
// launched after ReadAtDevice returns sees the data.
//
// It needs the verbs transport and WithDeviceMemory; otherwise, and when
// neither registration method works, the error wraps ErrNoGPUDirect and
// nothing was read: read into pinned host memory and copy instead. Like
// ReadAt, when it returns fewer than n bytes the error says why (io.EOF at
// end of file). WithCRC does not apply: the host cannot read GPU memory,
// so the data is protected only by the RDMA link's own checksums.
// Concurrent calls are allowed; ptr must stay allocated until it returns.
func (f *File) ReadAtDevice(ctx context.Context, ptr uintptr, n int64, off int64) (int, error) {
	fail := func(msg string, err error) (int, error) {
		return 0, &Error{Op: "read", Name: f.name, Offset: off, Msg: msg, Err: err}
	}
	switch {
	case off < 0:
		return fail("negative offset", ErrInvalid)
	case n < 0 || n > math.MaxInt || uint64(n) > math.MaxUint64-uint64(ptr):
		return fail(fmt.Sprintf("GPU destination [0x%x, +%d) is not a valid range", ptr, n), ErrInvalid)
	case n == 0:
		return 0, nil
	}
	if _, ok := f.cl.cfg.transport.(deviceTransport); !ok {
		return fail(fmt.Sprintf("GPU destinations need the verbs transport and this client uses %s; "+
			"over %[1]s read into pinned host memory and copy to the GPU (the bounce path)", f.cl.cfg.transport.Name()), ErrNoGPUDirect)
	}
	dm := f.deviceMemory()
	if dm == nil {
		return fail("the client has no DeviceMemory to register GPU memory with: pass WithDeviceMemory (cufile.NewRDMAMemory) to Dial, or use File.WithDeviceMemory", ErrNoGPUDirect)
	}
	t := newDeviceTarget(dm, ptr, n)
	got, err := f.readChunks(int(n), func(lo, hi int) (int, bool, error) {
		return f.readDevicePiece(ctx, t, int64(lo), int64(hi), off+int64(lo))
	})
	t.close()
	reg, chosen := t.outcome()
	if chosen {
		f.cl.devReg.Store(&reg)
	}
	if reg.Method != "" {
		// Writes may have landed even if a later piece failed.
		if ferr := dm.FlushRDMAWrites(); ferr != nil && (err == nil || got > 0) {
			return 0, &Error{Op: "read", Name: f.name, Offset: off, Err: ErrNoGPUDirect,
				Msg: fmt.Sprintf("flushing RDMA writes into the GPU failed, so the %d bytes read may not be visible to it: %v", got, ferr)}
		}
	}
	return got, err
}

// deviceMemory is the file's DeviceMemory, else the client's.
func (f *File) deviceMemory() DeviceMemory {
	if f.dm != nil {
		return f.dm
	}
	return f.cl.cfg.device
}

// WithDeviceMemory returns a handle on the same file whose ReadAtDevice
// registers GPU memory through dm, whatever the client was dialled with:
// the GPU a read lands in is the destination's business, known only when
// a load lays out its jobs. f is unchanged.
func (f *File) WithDeviceMemory(dm DeviceMemory) *File {
	g := *f
	g.dm = dm
	return &g
}

// DeviceReads reports whether ReadAtDevice can work at all on this file:
// the client's transport registers GPU memory (verbs). Over tcp it cannot,
// and a GPU destination reads into pinned host memory instead.
func (f *File) DeviceReads() bool {
	_, ok := f.cl.cfg.transport.(deviceTransport)
	return ok
}

// DeviceRegistration reports how the latest ReadAtDevice that registered
// GPU memory did it (dma-buf or nvidia-peermem) and why, or why neither
// worked. The zero value means no device read has registered memory yet.
func (cl *Client) DeviceRegistration() DeviceRegistration {
	if r := cl.devReg.Load(); r != nil {
		return *r
	}
	return DeviceRegistration{}
}

// readDevicePiece reads bytes [lo, hi) of t, at file offset off, with
// retries.
func (f *File) readDevicePiece(ctx context.Context, t *deviceTarget, lo, hi, off int64) (n int, eof bool, err error) {
	err = f.cl.retry(ctx, func(cc *clientConn) error {
		var e error
		n, eof, e = cc.readDevice(ctx, f.name, t, lo, hi, off)
		return e
	})
	return n, eof, err
}

// readDevice issues one READ whose destination is bytes [lo, hi) of t,
// registered on this connection for the request's lifetime.
func (cc *clientConn) readDevice(ctx context.Context, name string, t *deviceTarget, lo, hi, off int64) (int, bool, error) {
	conn, ok := cc.regions.(deviceRegistrar)
	if !ok {
		return 0, false, &Error{Op: "read", Name: name, Offset: off, Err: ErrNoGPUDirect,
			Msg: "this connection cannot register GPU memory; read into pinned host memory and copy (the bounce path)"}
	}
	r, err := t.register(conn, lo, hi)
	if err != nil {
		return 0, false, &Error{Op: "read", Name: name, Offset: off, Msg: "register GPU destination", Err: err}
	}
	defer conn.Deregister(r)
	m := wire.Read{Offset: uint64(off), Length: uint32(hi - lo), Flags: wire.ReadRegion, Region: r, Name: name}
	d, _, err := cc.readRequest(ctx, m, nil)
	if err != nil {
		return 0, false, err
	}
	return int(d.N), d.EOF, nil
}
