package webdataset

import (
	"archive/tar"
	"bufio"
	"compress/bzip2"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Reader streams the samples of one WebDataset shard. It is not safe for
// concurrent use. Reset lets one Reader (and its decompressors) serve many
// shards in turn.
type Reader struct {
	o    options
	comp Compression
	src  countingReader
	br   *bufio.Reader
	gz   *gzip.Reader
	zd   *zstd.Decoder
	tr   *tar.Reader
	mem  *sliceReader // set by ResetBytes: fields alias mem.b

	// The in-memory fast path (fasttar.go): while fast is set, headers are
	// parsed from mem.b at fastOff, not by tr; slowOnly turns it off (tests).
	fast     bool
	fastOff  int64 // where the next header starts, while fast
	slowOnly bool

	pending    member // first member of the next sample, payload unread
	havePend   bool   // pending is set
	index      int    // samples returned or skipped so far
	lastSize   int64  // field bytes of the sample last returned or skipped
	lastFields int    // fields of the sample last returned or skipped
	err        error  // sticky: io.EOF or the first failure
}

// maxFieldsHint caps the room Next gives a sample's fields before it
// reads them (see next).
const maxFieldsHint = 16

type member struct {
	name     string
	size     int64
	sparse   bool // a GNU sparse file: its payload is read through tr
	key, ext string
	offset   int64 // data offset in the tar stream
}

// NewReader returns a Reader of the shard stream r, decompressed as c (Auto
// detects it from the first bytes).
func NewReader(r io.Reader, c Compression, opts ...Option) (*Reader, error) {
	o, err := resolveOptions(opts)
	if err != nil {
		return nil, err
	}
	rd := &Reader{o: o}
	if err := rd.Reset(r, c, o.name); err != nil {
		return nil, err
	}
	return rd, nil
}

// Reset makes the Reader read a new shard stream src, compressed as c,
// reusing its decompressors; name is the shard name errors report.
func (r *Reader) Reset(src io.Reader, c Compression, name string) error {
	r.o.name = name
	r.havePend, r.index, r.err = false, 0, nil
	if c == Auto {
		if r.br == nil {
			r.br = bufio.NewReaderSize(src, 64<<10)
		} else {
			r.br.Reset(src)
		}
		head, _ := r.br.Peek(len(zstdMagic))
		c = DetectCompression(r.o.name, head)
		src = r.br
	}
	r.comp = c
	r.mem, r.fast = nil, false
	var stream io.Reader
	switch c {
	case None:
		stream = src
	case Gzip:
		var err error
		if r.gz == nil {
			r.gz, err = gzip.NewReader(src)
		} else {
			err = r.gz.Reset(src)
		}
		if err != nil {
			return r.fail("", 0, fmt.Errorf("gzip header: %w", err))
		}
		stream = r.gz
	case Zstd:
		var err error
		if r.zd == nil {
			r.zd, err = zstd.NewReader(src,
				zstd.WithDecoderConcurrency(r.o.zstdConcurrency),
				zstd.WithDecoderMaxWindow(r.o.maxZstdWindow),
				zstd.WithDecoderMaxMemory(r.o.maxZstdWindow))
		} else {
			err = r.zd.Reset(src)
		}
		if err != nil {
			return r.fail("", 0, fmt.Errorf("zstd: %w", err))
		}
		stream = r.zd
	case Bzip2:
		// A bzip2 decoder holds one block (at most 900 kB) at a time.
		stream = bzip2.NewReader(src)
	default:
		return fmt.Errorf("shard %s: unknown compression %v", r.o.name, c)
	}
	r.src = countingReader{r: stream}
	r.tr = tar.NewReader(&r.src)
	return nil
}

// ResetBytes makes the Reader read an uncompressed tar held in memory
// (see Decompressor). Fields returned by Next then alias tarData instead of
// being copied, so they stay valid only as long as the caller keeps
// tarData unchanged; skipped payloads are not even touched.
func (r *Reader) ResetBytes(tarData []byte, name string) {
	r.o.name = name
	r.havePend, r.index, r.err = false, 0, nil
	r.comp = None
	r.mem = &sliceReader{b: tarData}
	r.tr = nil
	r.fast, r.fastOff = !r.slowOnly, 0
	if !r.fast {
		r.tr = tar.NewReader(r.mem)
	}
}

// Compression returns the compression of the current stream (after Auto
// detection).
func (r *Reader) Compression() Compression { return r.comp }

// Next returns the next sample, or io.EOF after the last one. The sample's
// field slices are freshly allocated and owned by the caller. After an error
// other than io.EOF the Reader keeps returning that error.
func (r *Reader) Next() (*Sample, error) {
	return r.next(true)
}

// Skip passes over the next sample without copying its payloads, returning
// its key and its total field bytes. It checks the same caps and rules as
// Next, so a shard fails at the same sample whether it is read or skipped.
func (r *Reader) Skip() (key string, size int64, err error) {
	s, err := r.next(false)
	if err != nil {
		return "", 0, err
	}
	return s.Key, r.lastSize, nil
}

// Index returns how many samples Next and Skip have produced so far.
func (r *Reader) Index() int { return r.index }

func (r *Reader) next(read bool) (*Sample, error) {
	if r.err != nil {
		return nil, r.err
	}
	m, err := r.nextMember()
	if err != nil {
		return nil, err
	}
	// Samples of a shard mostly have the same fields: room for as many as
	// the last one had saves growing the slice field by field. The hint is
	// capped, so that one sample of many fields does not make every sample
	// after it hold room for as many.
	s := &Sample{Key: m.key, Fields: make([]Field, 0, min(max(r.lastFields, 1), maxFieldsHint))}
	var total int64
	for {
		// Caps are checked here, once the member is known to belong to this
		// sample, so the previous sample is still returned intact.
		if m.size > r.o.maxMember {
			return nil, r.fail(m.name, m.offset, fmt.Errorf("%w: %d bytes, cap %d", ErrMemberTooLarge, m.size, r.o.maxMember))
		}
		total += m.size
		if total > r.o.maxSample {
			return nil, r.fail(m.name, m.offset, fmt.Errorf("%w: sample %q reaches %d bytes, cap %d", ErrSampleTooLarge, s.Key, total, r.o.maxSample))
		}
		for _, f := range s.Fields {
			if f.Ext == m.ext {
				return nil, r.fail(m.name, m.offset, fmt.Errorf("%w: sample %q has two %q members", ErrDuplicateField, s.Key, m.ext))
			}
		}
		f := Field{Ext: m.ext}
		if read && r.mem != nil && !m.sparse {
			end := m.offset + m.size
			if end > int64(len(r.mem.b)) {
				return nil, r.fail(m.name, m.offset, fmt.Errorf("reading %d bytes: %w", m.size, io.ErrUnexpectedEOF))
			}
			f.Data = r.mem.b[m.offset:end:end]
		} else if read {
			f.Data = make([]byte, m.size)
			if _, err := io.ReadFull(r.tr, f.Data); err != nil {
				return nil, r.fail(m.name, m.offset, fmt.Errorf("reading %d bytes: %w", m.size, eofIsUnexpected(err)))
			}
		}
		s.Fields = append(s.Fields, f)
		m, err = r.nextMember()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if m.key != s.Key {
			r.pending, r.havePend = m, true
			break
		}
	}
	r.index++
	r.lastSize, r.lastFields = total, len(s.Fields)
	return s, nil
}

// nextMember returns the next member that belongs to a sample, skipping
// what WebDataset skips: non-regular members, metadata names and names
// without a key.
func (r *Reader) nextMember() (member, error) {
	if r.havePend {
		r.havePend = false
		return r.pending, nil
	}
	if r.fast {
		if m, ok := r.nextFast(); ok {
			return m, nil
		}
	}
	for {
		before := r.offset()
		hdr, err := r.tr.Next()
		if err == io.EOF {
			if err := r.drain(); err != nil {
				return member{}, r.fail("", r.offset(), fmt.Errorf("checking the end of the %v stream after the tar archive: %w (the shard is damaged: copy or write it again)", r.comp, err))
			}
			r.err = io.EOF
			return member{}, io.EOF
		}
		if err != nil {
			err = fmt.Errorf("tar header: %w", eofIsUnexpected(err))
			if before == 0 {
				// Not even a first header: the file is something else.
				err = fmt.Errorf("not a tar archive (%w)", err)
			}
			return member{}, r.fail("", before, err)
		}
		if m, ok := sampleMember(hdr.Name, hdr.Typeflag, hdr.Size, r.offset()); ok {
			return m, nil
		}
	}
}

// drain reads a streamed shard to the end of its decompressed stream once
// the tar archive has ended, so the decompressor reaches the trailer and
// checks it (gzip's CRC-32 and size, zstd's frame checksum): a flipped
// payload byte decompresses fine and only the trailer tells. What follows
// the end-of-archive blocks (GNU tar pads to a 10 KiB record) is
// discarded. A shard held in memory (ResetBytes) was checked whole by its
// Decompressor.
func (r *Reader) drain() error {
	if r.mem != nil {
		return nil
	}
	_, err := io.Copy(io.Discard, &r.src)
	return err
}

// sampleMember is the member a tar entry gives a sample, and false for
// what WebDataset skips: non-regular entries, metadata names and names
// without a key. off is where its data starts.
func sampleMember(name string, typeflag byte, size, off int64) (member, bool) {
	if !isRegular(typeflag) || isMeta(name) {
		return member{}, false
	}
	key, ext, ok := SplitKey(name)
	if !ok {
		return member{}, false
	}
	return member{name: name, size: size, sparse: typeflag == tar.TypeGNUSparse, key: key, ext: strings.ToLower(ext), offset: off}, true
}

// nextFast walks simple headers in memory (see fasttar.go). When it meets
// one archive/tar must read, it hands over: tr starts at that header and
// ok is false.
func (r *Reader) nextFast() (m member, ok bool) {
	b := r.mem.b
	for {
		off := r.fastOff
		if off+tarBlock > int64(len(b)) {
			break
		}
		h, simple := parseSimpleHeader(b[off : off+tarBlock])
		end := off + tarBlock + (h.data+tarBlock-1)/tarBlock*tarBlock
		if !simple || end > int64(len(b)) {
			break
		}
		r.fastOff = end
		if m, ok := sampleMember(h.name, h.typeflag, h.size, off+tarBlock); ok {
			return m, true
		}
	}
	r.fast = false
	r.mem.off = r.fastOff
	r.tr = tar.NewReader(r.mem)
	return member{}, false
}

// isRegular matches Python tarfile's isreg(), which WebDataset uses.
func isRegular(t byte) bool {
	switch t {
	case tar.TypeReg, '\x00', tar.TypeCont, tar.TypeGNUSparse:
		return true
	}
	return false
}

func (r *Reader) fail(memberName string, off int64, err error) error {
	r.err = &Error{Shard: r.o.name, Member: memberName, Offset: off, Err: err}
	return r.err
}

// Close releases the decompressors. The Reader cannot be used afterwards.
func (r *Reader) Close() error {
	if r.zd != nil {
		r.zd.Close()
		r.zd = nil
	}
	var err error
	if r.gz != nil {
		err = r.gz.Close()
		r.gz = nil
	}
	r.err = errors.New("reader closed")
	return err
}

func eofIsUnexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// offset is the position in the uncompressed tar stream.
func (r *Reader) offset() int64 {
	if r.mem != nil {
		return r.mem.off
	}
	return r.src.n
}
