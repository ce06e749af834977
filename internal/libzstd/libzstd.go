// Package libzstd decodes whole zstd streams with the system's libzstd
// (libzstd.so.1, what the zstd command uses), loaded at run time with
// dlopen as gdsload loads CUDA: no build dependency, and a machine without
// it still runs (callers fall back to github.com/klauspost/compress/zstd).
//
// Why: on text-like data the pure-Go decoder takes more CPU time than
// libzstd does for the same frames (measured on scripts/bench-iterate.sh's
// shards; docs/PERFORMANCE-NOTES.md, shards/iterator), and decoding is
// most of what reading a .tar.zst shard costs.
//
// Only stable libzstd entry points are called, plus two experimental
// decoder parameters that have kept their numbers since 1.4.x
// (ZSTD_d_stableOutBuffer, ZSTD_d_forceIgnoreChecksum); a libzstd that
// refuses them still decodes, with a copy more or the checksum checked.
// Each call runs in one cgo call: libzstd keeps no pointer to Go memory
// that it uses after a call returns.
package libzstd

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>

typedef struct { const void *src; size_t size; size_t pos; } gd_zin;
typedef struct { void *dst; size_t size; size_t pos; } gd_zout;

typedef struct {
	void *(*createDCtx)(void);
	size_t (*freeDCtx)(void *);
	size_t (*setParameter)(void *, int, int);
	size_t (*reset)(void *, int);
	size_t (*decompressStream)(void *, gd_zout *, gd_zin *);
	unsigned (*isError)(size_t);
	const char *(*getErrorName)(size_t);
	unsigned (*versionNumber)(void);
	unsigned (*getErrorCode)(size_t);
	void *dctx;
} gd_zstd;

// gd_zstd_load fills z from h; it returns the name of a missing symbol,
// or NULL.
static const char *gd_zstd_load(gd_zstd *z, void *h) {
#define SYM(field, name) if ((*(void **)(&z->field) = dlsym(h, name)) == NULL) return name;
	SYM(createDCtx, "ZSTD_createDCtx")
	SYM(freeDCtx, "ZSTD_freeDCtx")
	SYM(setParameter, "ZSTD_DCtx_setParameter")
	SYM(reset, "ZSTD_DCtx_reset")
	SYM(decompressStream, "ZSTD_decompressStream")
	SYM(isError, "ZSTD_isError")
	SYM(getErrorName, "ZSTD_getErrorName")
	SYM(versionNumber, "ZSTD_versionNumber")
	SYM(getErrorCode, "ZSTD_getErrorCode")
#undef SYM
	return NULL;
}

static int gd_zstd_create(gd_zstd *z) { z->dctx = z->createDCtx(); return z->dctx != NULL; }
static void gd_zstd_free(gd_zstd *z) { if (z->dctx) z->freeDCtx(z->dctx); free(z); }
static unsigned gd_zstd_version(gd_zstd *z) { return z->versionNumber(); }
static const char *gd_zstd_error_name(gd_zstd *z, size_t code) { return z->getErrorName(code); }
static unsigned gd_zstd_is_error(gd_zstd *z, size_t code) { return z->isError(code); }
static unsigned gd_zstd_error_code(gd_zstd *z, size_t code) { return z->getErrorCode(code); }

enum {
	GD_ZSTD_RESET_SESSION = 1,       // ZSTD_reset_session_only
	GD_ZSTD_WINDOW_LOG_MAX = 100,    // ZSTD_d_windowLogMax
	GD_ZSTD_STABLE_OUT = 1001,       // ZSTD_d_stableOutBuffer
	GD_ZSTD_IGNORE_CHECKSUM = 1002,  // ZSTD_d_forceIgnoreChecksum
};

// gd_zstd_setup resets d for a new stream and sets its parameters. It
// returns 0, or a libzstd error code for the window cap (the others are
// optional: bit 1 of *missing is set when the stable output buffer was
// refused, bit 2 when ignoring checksums was).
static size_t gd_zstd_setup(gd_zstd *z, int windowLog, int stableOut, int ignoreChecksum, int *missing) {
	size_t r = z->reset(z->dctx, GD_ZSTD_RESET_SESSION);
	if (z->isError(r)) return r;
	r = z->setParameter(z->dctx, GD_ZSTD_WINDOW_LOG_MAX, windowLog);
	if (z->isError(r)) return r;
	*missing = 0;
	if (z->isError(z->setParameter(z->dctx, GD_ZSTD_STABLE_OUT, stableOut))) *missing |= 1;
	if (z->isError(z->setParameter(z->dctx, GD_ZSTD_IGNORE_CHECKSUM, ignoreChecksum))) *missing |= 2;
	return 0;
}

// gd_zstd_decode decodes src[*inPos:] into dst[*outPos:dstCap] until the
// input is consumed or the output is full, calling libzstd at least once
// (to learn whether a frame is still open). It returns libzstd's last
// result: an error code, 0 when the last frame ended exactly, or a hint
// that a frame is unfinished.
static size_t gd_zstd_decode(gd_zstd *z, void *dst, size_t dstCap, size_t *outPos,
                             const void *src, size_t srcSize, size_t *inPos) {
	gd_zout out = { dst, dstCap, *outPos };
	gd_zin in = { src, srcSize, *inPos };
	size_t r;
	do {
		size_t before = out.pos, consumed = in.pos;
		r = z->decompressStream(z->dctx, &out, &in);
		if (z->isError(r)) break;
		if (out.pos == out.size && r != 0) break;         // output full
		if (out.pos == before && in.pos == consumed) break; // no progress: input ended mid-frame
	} while (in.pos < in.size || r != 0);
	*outPos = out.pos;
	*inPos = in.pos;
	return r;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"unsafe"

	"github.com/gdsload/gdsload/internal/dl"
)

// names are tried in order by NewDecoder; GDSLOAD_LIBZSTD, when set, is
// tried instead ("off" disables libzstd).
var names = []string{"libzstd.so.1", "libzstd.so"}

// ErrOutputFull reports output beyond the cap DecodeAll was given.
var ErrOutputFull = errors.New("decoded output exceeds the cap")

// zstdErrorDstSizeTooSmall is ZSTD_error_dstSize_tooSmall (error codes
// are pinned since libzstd 1.3.1).
const zstdErrorDstSizeTooSmall = 70

// Decoder is a libzstd decompression context. It is not safe for
// concurrent use; Close frees it.
type Decoder struct {
	z       *C.gd_zstd
	version uint
}

// NewDecoder maps libzstd (once: it stays mapped, internal/dl) and makes a
// context. The error says why libzstd cannot be used; callers then decode
// another way.
func NewDecoder() (*Decoder, error) {
	var z *C.gd_zstd
	var version uint
	_, err := dl.OpenFirst("GDSLOAD_LIBZSTD", "the system's libzstd", names, func(l *dl.Lib) error {
		z = (*C.gd_zstd)(C.calloc(1, C.sizeof_gd_zstd))
		if missing := C.gd_zstd_load(z, l.Handle); missing != nil {
			C.free(unsafe.Pointer(z))
			return fmt.Errorf("%s lacks %s", l.Path, C.GoString(missing))
		}
		if version = uint(C.gd_zstd_version(z)); version < 10400 {
			C.free(unsafe.Pointer(z))
			return fmt.Errorf("%s is version %d, want 1.4.0 or later", l.Path, version)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	d := &Decoder{z: z, version: version}
	if C.gd_zstd_create(z) == 0 {
		d.Close()
		return nil, errors.New("ZSTD_createDCtx failed")
	}
	return d, nil
}

// Version returns libzstd's version number (major*10000 + minor*100 +
// release).
func (d *Decoder) Version() uint { return d.version }

// Close frees the context; safe to call twice.
func (d *Decoder) Close() {
	if d.z != nil {
		C.gd_zstd_free(d.z)
		d.z = nil
	}
}

// DecodeAll decodes the zstd stream src (one or more frames, skippable
// frames skipped) and appends the output to dst[:0]. Frames whose window
// exceeds maxWindow fail, output beyond maxOut bytes fails with
// ErrOutputFull, and so do input that ends inside a frame and bytes after
// the last frame that are not a frame. ignoreChecksum skips the frames'
// content checksums (see the package documentation).
//
// Output that fits dst's capacity is decoded straight into it. When it
// does not, decoding starts over through libzstd's own window buffer into
// a buffer that grows as output arrives (so a damaged frame header that
// claims a huge size allocates nothing for it): size dst for the expected
// output.
func (d *Decoder) DecodeAll(dst, src []byte, maxWindow uint64, maxOut int64, ignoreChecksum bool) ([]byte, error) {
	return d.DecodeAllFunc(dst, src, maxWindow, maxOut, ignoreChecksum, nil)
}

// inputPiece is how much input DecodeAllFunc hands to onInput, and then
// to libzstd, at a time: small enough to be still in the CPU's cache when
// libzstd reads it.
const inputPiece = 256 << 10

// DecodeAllFunc is DecodeAll that also hands every byte of src to onInput
// (unless nil), once and in order, a cache-sized piece at a time just
// before libzstd reads that piece: a digest of the input taken there
// costs one pass over memory fewer than one taken before decoding. If
// decoding fails, onInput may not have seen all of src.
func (d *Decoder) DecodeAllFunc(dst, src []byte, maxWindow uint64, maxOut int64, ignoreChecksum bool, onInput func([]byte)) ([]byte, error) {
	if d.z == nil {
		return nil, errors.New("zstd decoder closed")
	}
	windowLog := min(max(bits.Len64(maxWindow)-1, 10), 31)
	ign := C.int(0)
	if ignoreChecksum {
		ign = 1
	}
	out := dst[:0]
	if len(src) == 0 {
		return out, nil // no frames, as the pure-Go decoder has it
	}
	summed := 0
	for _, stable := range []C.int{1, 0} {
		var missing C.int
		if r := C.gd_zstd_setup(d.z, C.int(windowLog), stable, ign, &missing); C.gd_zstd_is_error(d.z, r) != 0 {
			return nil, d.err(r)
		}
		var outPos, inPos C.size_t
		for {
			// Input is fed to libzstd up to fed, which onInput has seen
			// (summed: how far it has seen, over both passes).
			fed := len(src)
			if onInput != nil {
				fed = min(len(src), int(inPos)+inputPiece)
				if fed > summed {
					onInput(src[summed:fed])
					summed = fed
				}
			}
			var dp, sp unsafe.Pointer
			if cap(out) > 0 {
				dp = unsafe.Pointer(unsafe.SliceData(out[:cap(out)]))
			}
			if len(src) > 0 {
				sp = unsafe.Pointer(unsafe.SliceData(src))
			}
			r := C.gd_zstd_decode(d.z, dp, C.size_t(cap(out)), &outPos, sp, C.size_t(fed), &inPos)
			runtime.KeepAlive(out)
			runtime.KeepAlive(src)
			n := int(outPos)
			isErr := C.gd_zstd_is_error(d.z, r) != 0
			// Out of room: libzstd says so, or filled the buffer with a
			// frame still open.
			full := isErr && C.gd_zstd_error_code(d.z, r) == zstdErrorDstSizeTooSmall || !isErr && r != 0 && n == cap(out)
			switch {
			case isErr && !full:
				return out[:n], d.err(r)
			case !isErr && r == 0 && int(inPos) == len(src):
				return out[:n], nil
			case !isErr && !full && int(inPos) == fed && fed < len(src):
				continue // the piece fed is decoded: feed the next
			case !full:
				return out[:n], errors.New("the zstd input ends inside a frame")
			case stable == 0 && int64(n) >= maxOut:
				return out[:n], fmt.Errorf("%w (%d bytes)", ErrOutputFull, maxOut)
			}
			if stable == 1 || isErr {
				break // start over without the stable output buffer
			}
			// Out of room: grow by what has arrived and go on.
			grown := make([]byte, n, min(max(2*int64(cap(out)), 1<<20), maxOut))
			copy(grown, out[:n])
			out = grown
		}
	}
	return nil, errors.New("zstd output does not fit and decoding cannot go on")
}

func (d *Decoder) err(r C.size_t) error {
	return fmt.Errorf("zstd decoding: %s", C.GoString(C.gd_zstd_error_name(d.z, r)))
}
