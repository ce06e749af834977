package stage

import (
	"context"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/gdsload/gdsload/loader"
)

// sink is the loader.Destination of one staged file: Span lends a buffer
// of the shared ring; Commit hashes it and queues it to the shared writer
// pool, which writes it with pwrite at the same offset into the file's
// AtomicFile and only then returns it to the ring. Like loader.Ring it
// allocates nothing per chunk.
//
// With a checksum set, the loader hashes each file's chunks in order and
// commits them after hashing, in order, under a per-file lock; queuing the
// write instead of writing in Commit keeps the disk busy with writes of one
// file while its next chunks are hashed, and reads overlap with both.
//
// The bytes written are checked against the bytes the loader hashed with
// CRC32C, at a tenth of the CPU time of a SHA-256 pass: each chunk's CRC is
// taken at commit, right after the loader hashed it, and again by the
// writer once its write completed, so a buffer that changed in between
// fails the file; the in-order CRC of all chunks is the file's written
// digest.
type sink struct {
	out     *loader.AtomicFile
	ring    *loader.Ring
	w       *writers
	align   int64
	pending sync.WaitGroup // writes queued and not yet done

	mu      sync.Mutex
	crc     uint32 // CRC32C of the bytes committed, in order
	next    int64  // the offset the next commit must start at
	written int64  // bytes whose write completed
	err     error  // the first failed write
}

func newSink(out *loader.AtomicFile, ring *loader.Ring, w *writers) *sink {
	return &sink{out: out, ring: ring, w: w, align: out.Alignment()}
}

// crcTable is CRC32C's; crc32.MakeTable caches it.
func crcTable() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) }

// Kind names the destination.
func (s *sink) Kind() string { return "file" }

// Len is the file's size: the loader refuses jobs past it.
func (s *sink) Len() int64 { return s.out.Size() }

// Flush waits for the file's queued writes and returns the first error.
func (s *sink) Flush(context.Context) error {
	s.pending.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Span lends a ring buffer for file bytes [off, off+n).
func (s *sink) Span(ctx context.Context, off, n int64) (loader.Span, error) {
	sp, err := s.ring.Span(ctx, off, n)
	if err != nil {
		return loader.Span{}, err
	}
	return loader.Span{
		Buf:    sp.Buf,
		Commit: func(ctx context.Context) error { return s.commit(ctx, off, sp) },
		Abort:  sp.Abort,
	}, nil
}

// commit hashes the chunk (commits come in order) and queues its write.
// A tail shorter than the alignment is padded with zeros to a whole block,
// from the spare capacity of the ring buffer, so O_DIRECT stays legal;
// AtomicFile.Sync truncates the padding.
func (s *sink) commit(ctx context.Context, off int64, sp loader.Span) error {
	b := sp.Buf
	n := int64(len(b))
	s.mu.Lock()
	err := s.err
	if err == nil && off != s.next {
		err = fmt.Errorf("chunk at offset %d committed out of order (expected %d); the written digest would not match", off, s.next)
	}
	if err != nil {
		s.mu.Unlock()
		sp.Abort()
		return err
	}
	sum := crc32.Checksum(b, crcTable())
	s.crc = crc32.Update(s.crc, crcTable(), b)
	s.next += n
	s.mu.Unlock()

	full := b
	if rem := n % s.align; rem != 0 {
		padded := n + s.align - rem
		if int64(cap(b)) < padded {
			sp.Abort()
			return fmt.Errorf("chunk of %d bytes at offset %d: buffer too small to pad to %d", n, off, padded)
		}
		full = b[:padded]
		clear(full[n:])
	}
	s.pending.Add(1)
	if err := s.w.queue(ctx, writeReq{s: s, off: off, buf: full, n: n, crc: sum, done: func() { _ = sp.Commit(ctx) }}); err != nil {
		s.pending.Done()
		sp.Abort()
		return err
	}
	return nil
}

// wrote records the outcome of a queued write.
func (s *sink) wrote(n int64, err error) {
	s.mu.Lock()
	if err != nil && s.err == nil {
		s.err = err
	}
	if err == nil {
		s.written += n
	}
	s.mu.Unlock()
	s.pending.Done()
}

// writtenDigest is the CRC32C of the bytes written, as loader.FileResult
// prints one, and how many bytes were written.
func (s *sink) writtenDigest() (string, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%08x", s.crc), s.written
}
