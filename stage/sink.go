package stage

import (
	"context"
	"fmt"
	"hash"
	"sync"

	"github.com/gdsload/gdsload/internal/crc32c"
	"github.com/gdsload/gdsload/internal/durable"
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
// taken in the loader's checksum pass (the sink is a loader.ChecksumHasher:
// the CRC reads each piece right after the digest did, from the cache) and
// again by the writer once its write completed, so a buffer that changed
// in between fails the file; the chunks' CRCs combined in order are the
// file's written digest.
type sink struct {
	out     *durable.AtomicFile
	ring    *loader.Ring
	w       *writers
	align   int64
	tee     *teeHash       // the loader's checksum, which also sums each chunk
	pending sync.WaitGroup // writes queued and not yet done

	mu      sync.Mutex
	crc     uint32 // CRC32C of the bytes committed, in order
	next    int64  // the offset the next commit must start at
	written int64  // bytes whose write completed
	err     error  // the first failed write
}

func newSink(out *durable.AtomicFile, ring *loader.Ring, w *writers) *sink {
	return &sink{out: out, ring: ring, w: w, align: out.Alignment()}
}

// NewChecksum makes the loader's checksum of the file one that also takes
// the CRC32C of each chunk in the same pass.
func (s *sink) NewChecksum(c loader.Checksum) hash.Hash {
	h := c.NewHash()
	if h == nil {
		return nil
	}
	s.tee = &teeHash{Hash: h}
	return s.tee
}

// teeHash feeds a digest and a CRC32C of the bytes since the last take,
// a cache-sized piece at a time, so the CRC reads bytes the digest has
// just brought into the cache.
type teeHash struct {
	hash.Hash
	crc uint32
	n   int64
}

// teePiece is the size of the pieces fed to both sums in turn.
const teePiece = 64 << 10

func (t *teeHash) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		piece := rest[:min(len(rest), teePiece)]
		t.Hash.Write(piece)
		t.crc = crc32c.Update(t.crc, piece)
		rest = rest[len(piece):]
	}
	t.n += int64(len(p))
	return len(p), nil
}

// take returns the CRC32C of the bytes written since the last take, and
// how many there were.
func (t *teeHash) take() (uint32, int64) {
	c, n := t.crc, t.n
	t.crc, t.n = 0, 0
	return c, n
}

// Kind names the destination.
func (s *sink) Kind() string { return "file" }

// Len is the file's size: the loader refuses jobs past it.
func (s *sink) Len() int64 { return s.out.Size() }

// Flush returns the first failed write so far. It does not wait for the
// writes still queued: the loader returns once every chunk is committed,
// so the next batch's reads start while this one's last chunks are
// written, and the disk is never left idle between batches. The file is
// drained by wait, before it is synced (run.verify) or removed
// (batch.abort).
func (s *sink) Flush(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// wait waits for the file's queued writes and returns the first error.
func (s *sink) wait() error {
	s.pending.Wait()
	return s.Flush(context.Background())
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
	// The loader wrote exactly this chunk to the checksum just before the
	// commit; anything else (no checksum) is summed here.
	var sum uint32
	if got, gotN := s.takeCRC(); gotN == n {
		sum = got
	} else {
		sum = crc32c.Checksum(b)
	}
	s.crc = crc32c.Combine(s.crc, sum, n)
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

// takeCRC is the CRC32C the checksum pass took of the chunk being
// committed, and its length (0 when there is no checksum pass).
func (s *sink) takeCRC() (uint32, int64) {
	if s.tee == nil {
		return 0, 0
	}
	return s.tee.take()
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
