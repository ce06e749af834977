// Package libdeflate decodes whole gzip streams held in memory with the
// system's libdeflate (libdeflate.so.0, Debian's libdeflate0), loaded at
// run time with dlopen as gdsload loads CUDA and libzstd: no build
// dependency, and a machine without it still runs (callers fall back to
// github.com/klauspost/compress/gzip).
//
// Why: a .tar.gz shard is read whole into memory before it is iterated,
// and inflating it is nearly all the CPU time that reading it costs.
// libdeflate inflates a buffer into a buffer in one call, in less than
// half the CPU time of the pure-Go decoder and of zlib (scripts/
// bench-iterate.sh's .tar.gz rows, docs/PERFORMANCE.md). It cannot
// stream: it needs room for a member's whole output, which the gzip
// trailer's size field lets us guess.
//
// Each call runs in one cgo call: libdeflate keeps no pointer to Go
// memory after a call returns.
package libdeflate

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>

typedef struct {
	void *(*alloc)(void);
	void (*freed)(void *);
	int (*gunzip)(void *, const void *, size_t, void *, size_t, size_t *, size_t *);
	void *dec;
} gd_deflate;

// gd_deflate_load fills z from h; it returns the name of a missing
// symbol, or NULL.
static const char *gd_deflate_load(gd_deflate *z, void *h) {
#define SYM(field, name) if ((*(void **)(&z->field) = dlsym(h, name)) == NULL) return name;
	SYM(alloc, "libdeflate_alloc_decompressor")
	SYM(freed, "libdeflate_free_decompressor")
	SYM(gunzip, "libdeflate_gzip_decompress_ex")
#undef SYM
	return NULL;
}

static int gd_deflate_create(gd_deflate *z) { z->dec = z->alloc(); return z->dec != NULL; }
static void gd_deflate_free(gd_deflate *z) { if (z->dec) z->freed(z->dec); free(z); }

// gd_deflate_gunzip decodes the gzip member at the start of src into dst
// and returns libdeflate's result.
static int gd_deflate_gunzip(gd_deflate *z, const void *src, size_t srcSize, void *dst, size_t dstCap,
                             size_t *inUsed, size_t *outUsed) {
	return z->gunzip(z->dec, src, srcSize, dst, dstCap, inUsed, outUsed);
}
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/gdsload/gdsload/internal/dl"
)

// names are tried in order by NewDecoder; GDSLOAD_LIBDEFLATE, when set, is
// tried instead ("off" disables libdeflate).
var names = []string{"libdeflate.so.0", "libdeflate.so"}

// libdeflate's results (enum libdeflate_result, stable since 1.0).
const (
	resultSuccess           = 0
	resultBadData           = 1
	resultInsufficientSpace = 3
)

// maxRatio bounds what deflate can expand to: 258 bytes per 2-bit
// length/distance pair at best, 1032 to 1.
const maxRatio = 1032

// ErrOutputFull reports output beyond the cap Gunzip was given.
var ErrOutputFull = errors.New("decoded output exceeds the cap")

// ErrBadData is libdeflate's verdict on a stream it cannot decode: a bad
// header, a bad block, a wrong CRC-32 or size in the trailer, input that
// ends inside a member, or bytes after the last member that are not one.
// It does not say which; callers that need to (for a message) decode the
// same bytes again with a streaming decoder.
var ErrBadData = errors.New("gzip data libdeflate cannot decode")

// Decoder is a libdeflate decompressor. It is not safe for concurrent
// use; Close frees it.
type Decoder struct {
	z *C.gd_deflate
}

// NewDecoder maps libdeflate (once: it stays mapped, internal/dl) and
// allocates a decompressor. The error says why libdeflate cannot be used;
// callers then decode another way.
func NewDecoder() (*Decoder, error) {
	var z *C.gd_deflate
	_, err := dl.OpenFirst("GDSLOAD_LIBDEFLATE", "the system's libdeflate", names, func(l *dl.Lib) error {
		z = (*C.gd_deflate)(C.calloc(1, C.sizeof_gd_deflate))
		if missing := C.gd_deflate_load(z, l.Handle); missing != nil {
			C.free(unsafe.Pointer(z))
			return fmt.Errorf("%s lacks %s (libdeflate 1.5 or later has it)", l.Path, C.GoString(missing))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	d := &Decoder{z: z}
	if C.gd_deflate_create(z) == 0 {
		d.Close()
		return nil, errors.New("libdeflate_alloc_decompressor failed")
	}
	return d, nil
}

// Close frees the decompressor; safe to call twice.
func (d *Decoder) Close() {
	if d.z != nil {
		C.gd_deflate_free(d.z)
		d.z = nil
	}
}

// Gunzip decodes the gzip stream src (one or more members, as gzip
// concatenates them) and appends the output to dst[:0]. Every member's
// CRC-32 and size are checked. Output beyond maxOut bytes fails with
// ErrOutputFull; anything libdeflate refuses fails with ErrBadData. Empty
// input is an empty stream.
//
// A member is decoded straight into dst's spare capacity when its output
// fits there. The room made for it is guessed from the last member's size
// field (a lie costs a retry, never more than deflate can expand the input
// to): size dst for the expected output to spare the guess.
func (d *Decoder) Gunzip(dst, src []byte, maxOut int64) ([]byte, error) {
	if d.z == nil {
		return nil, errors.New("gzip decoder closed")
	}
	out := dst[:0]
	for in := src; len(in) > 0; {
		if g := guess(in, maxOut-int64(len(out))); int64(cap(out)-len(out)) < g {
			out = grow(out, g)
		}
		// The room libdeflate may fill ends at maxOut, whatever dst's
		// capacity beyond it.
		room := out[len(out):int(min(int64(cap(out)), max(maxOut, int64(len(out)))))]
		used, n, r := d.member(in, room)
		switch r {
		case resultSuccess:
			out = out[:len(out)+n]
			in = in[used:]
		case resultInsufficientSpace: // grow, and decode the member again
			had := int64(len(room))
			if int64(len(out))+had >= maxOut {
				return out, fmt.Errorf("%w (%d bytes)", ErrOutputFull, maxOut)
			}
			out = grow(out, min(max(2*had, 1<<20), maxOut-int64(len(out))))
		default:
			return out, ErrBadData
		}
	}
	return out, nil
}

// member decodes the member at the start of in into room (its length).
func (d *Decoder) member(in, room []byte) (used, n int, result int) {
	var inUsed, outUsed C.size_t
	var dp unsafe.Pointer
	if len(room) > 0 {
		dp = unsafe.Pointer(unsafe.SliceData(room))
	}
	r := C.gd_deflate_gunzip(d.z, unsafe.Pointer(unsafe.SliceData(in)), C.size_t(len(in)), dp, C.size_t(len(room)), &inUsed, &outUsed)
	runtime.KeepAlive(in)
	runtime.KeepAlive(room)
	return int(inUsed), int(outUsed), int(r)
}

// guess is the room to make for the members in in: the last member's
// size field (its output modulo 4 GiB), bounded by what deflate can expand
// in to and by limit. Of several members it is only the last one's size,
// and growing covers the rest.
func guess(in []byte, limit int64) int64 {
	g := int64(64 << 10)
	if len(in) >= 18 { // the smallest member: 10-byte header, empty block, trailer
		g = max(g, int64(binary.LittleEndian.Uint32(in[len(in)-4:])))
	}
	return max(min(g, int64(len(in))*maxRatio, limit), 0)
}

// grow returns out with room for exactly extra more bytes (not
// slices.Grow, which may round up): the room is what libdeflate may fill,
// so it must stay within maxOut.
func grow(out []byte, extra int64) []byte {
	g := make([]byte, len(out), int64(len(out))+extra)
	copy(g, out)
	return g
}
