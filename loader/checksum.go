package loader

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"
	"sync"

	"github.com/gdsload/gdsload/internal/crc32c"
)

// Checksum names the digest computed over the bytes as they landed.
type Checksum string

// Checksums.
const (
	ChecksumNone   Checksum = "none"
	ChecksumSHA256 Checksum = "sha256"
	ChecksumCRC32C Checksum = "crc32c"
)

// ParseChecksum validates a checksum name.
func ParseChecksum(s string) (Checksum, error) {
	s = strings.ToLower(s)
	switch Checksum(s) {
	case "", ChecksumNone:
		return ChecksumNone, nil
	case ChecksumSHA256, ChecksumCRC32C:
		return Checksum(s), nil
	}
	return ChecksumNone, fmt.Errorf("checksum %q: want none, sha256 or crc32c", s)
}

// NewHash returns a fresh hash computing c, nil for ChecksumNone.
func (c Checksum) NewHash() hash.Hash { return c.newHash() }

// ChecksumHasher is an optional capability of a Destination that wants to
// see each chunk's bytes in the pass that checksums them, while they are in
// the CPU's cache: the loader checksums the job's bytes with the hash
// NewChecksum returns (nil: its own), writing each chunk to it whole and
// in source order, then committing that chunk before writing the next.
type ChecksumHasher interface {
	NewChecksum(c Checksum) hash.Hash
}

func (c Checksum) newHash() hash.Hash {
	switch c {
	case ChecksumSHA256:
		return sha256.New()
	case ChecksumCRC32C:
		return crc32c.New()
	}
	return nil
}

// digestHex renders a finished hash; CRC32C as 8 hex digits, big endian,
// as crc32c tools print it.
func digestHex(h hash.Hash) string {
	sum := h.Sum(nil)
	if len(sum) == 4 {
		return fmt.Sprintf("%08x", binary.BigEndian.Uint32(sum))
	}
	return hex.EncodeToString(sum)
}

// orderedHasher hashes a job's chunks in source order although workers
// finish them in any order. A chunk that arrives early keeps its span until
// its predecessors are hashed; its memory is committed only after hashing,
// so a ring buffer is never recycled with unhashed bytes. The loader takes
// spans in chunk order, so the earliest unhashed chunk always holds memory
// and the wait cannot deadlock.
//
// One worker at a time hashes a job: the one whose chunk is next, and it
// goes on with the chunks that arrived meanwhile. The others leave their
// chunk and return to reading at once, never waiting for a hash, so the
// reads run ahead into the next jobs, whose hashes then run on other cores.
type orderedHasher struct {
	mu      sync.Mutex
	h       hash.Hash
	next    int
	hashing bool // a worker is in the loop of land
	pending map[int]Span
}

func newOrderedHasher(c Checksum, dst Destination) *orderedHasher {
	h := c.newHash()
	if ch, ok := dst.(ChecksumHasher); ok {
		if dh := ch.NewChecksum(c); dh != nil {
			h = dh
		}
	}
	return &orderedHasher{h: h, pending: make(map[int]Span)}
}

// land leaves chunk i and, unless another worker is hashing the job,
// hashes and commits the chunks in order as far as they have arrived.
func (o *orderedHasher) land(ctx context.Context, i int, s Span) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pending[i] = s
	if o.hashing {
		return nil // that worker takes this chunk in turn
	}
	o.hashing = true
	defer func() { o.hashing = false }()
	for {
		s, ok := o.pending[o.next]
		if !ok {
			return nil
		}
		delete(o.pending, o.next)
		o.next++
		o.mu.Unlock()
		o.h.Write(s.Buf)
		err := s.Commit(ctx)
		o.mu.Lock()
		if err != nil {
			return err
		}
	}
}

// abort returns the memory of chunks still waiting.
func (o *orderedHasher) abort() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, s := range o.pending {
		s.Abort()
		delete(o.pending, i)
	}
}

func (o *orderedHasher) digest() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return digestHex(o.h)
}

// readBackDigest hashes destination bytes [off, off+n) copied back from a
// destination the host cannot read directly.
func readBackDigest(ctx context.Context, rb ReadBacker, c Checksum, off, n int64, buf []byte) (string, error) {
	h := c.newHash()
	for done := int64(0); done < n; {
		k := min(int64(len(buf)), n-done)
		if err := rb.ReadBack(ctx, off+done, buf[:k]); err != nil {
			return "", fmt.Errorf("copying back bytes [%d, %d) to checksum them: %w", off+done, off+done+k, err)
		}
		h.Write(buf[:k])
		done += k
	}
	return digestHex(h), nil
}
