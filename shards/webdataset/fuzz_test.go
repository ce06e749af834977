package webdataset

import (
	"bytes"
	"runtime"
	"testing"
	"unsafe"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
)

// Caps used by the fuzz targets: small, so a violation shows.
const (
	fuzzMember = 64 << 10
	fuzzSample = 96 << 10
	fuzzWindow = 256 << 10
	// Decoder state (zstd history up to the window, block buffers, tables)
	// and bookkeeping allowed on top of one sample per Next call.
	fuzzOverhead = 4*fuzzWindow + 2<<20
)

// fuzzRead reads every sample of data, checking that no Next call allocates
// beyond the caps and that every returned sample respects them.
func fuzzRead(t *testing.T, data []byte, c Compression) {
	rd, err := NewReader(bytes.NewReader(data), c,
		WithMaxMemberBytes(fuzzMember), WithMaxSampleBytes(fuzzSample), WithMaxZstdWindow(fuzzWindow))
	if err != nil {
		return
	}
	defer rd.Close()
	var ms runtime.MemStats
	for range 200 {
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		s, err := rd.Next()
		runtime.ReadMemStats(&ms)
		grew := ms.TotalAlloc - before
		require.LessOrEqual(t, grew, uint64(fuzzSample+fuzzOverhead), "one Next call allocated %d bytes, caps allow %d", grew, fuzzSample+fuzzOverhead)
		if err != nil {
			return
		}
		require.LessOrEqual(t, s.Size(), int64(fuzzSample), "sample %q has %d bytes, cap %d", s.Key, s.Size(), fuzzSample)
		for _, f := range s.Fields {
			require.LessOrEqual(t, len(f.Data), fuzzMember, "member %q.%s has %d bytes, cap %d", s.Key, f.Ext, len(f.Data), fuzzMember)
		}
	}
}

func fuzzSeeds(f *testing.F) [][]byte {
	return [][]byte{
		goTar(f, testMembers(true)),
		goTar(f, []tmember{{Name: "a.x", Data: make([]byte, fuzzMember+1)}}),
		goTar(f, []tmember{{Name: "a.x", Data: make([]byte, fuzzMember)}, {Name: "a.y", Data: make([]byte, fuzzMember)}}),
		goTar(f, []tmember{{Name: "a.x", Data: []byte("1")}, {Name: "a.X", Data: []byte("2")}}),
	}
}

func FuzzReaderTar(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
		f.Add(s[:len(s)/2])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRead(t, data, None)
		fuzzRead(t, data, Auto)
		// In memory, fields alias the input: they must lie within it.
		rd, _ := NewReader(bytes.NewReader(nil), None, WithMaxMemberBytes(fuzzMember), WithMaxSampleBytes(fuzzSample))
		rd.ResetBytes(data, "fuzz.tar")
		for range 200 {
			s, err := rd.Next()
			if err != nil {
				return
			}
			for _, fl := range s.Fields {
				require.LessOrEqual(t, len(fl.Data), fuzzMember, "field %q.%s (%d bytes) is not a slice of the input", s.Key, fl.Ext, len(fl.Data))
				require.False(t, len(fl.Data) > 0 && !within(data, fl.Data), "field %q.%s (%d bytes) is not a slice of the input", s.Key, fl.Ext, len(fl.Data))
			}
		}
	})
}

func FuzzReaderGzip(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(s)
		w.Close()
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRead(t, data, Gzip)
	})
}

func FuzzReaderZstd(f *testing.F) {
	enc, err := zstd.NewWriter(nil, zstd.WithWindowSize(fuzzWindow))
	require.NoError(f, err)
	for _, s := range fuzzSeeds(f) {
		f.Add(enc.EncodeAll(s, nil))
	}
	big, _ := zstd.NewWriter(nil, zstd.WithWindowSize(8<<20))
	f.Add(big.EncodeAll(bytes.Repeat([]byte("window beyond the cap "), 1<<19), nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRead(t, data, Zstd)
	})
}

// within reports whether part lies inside whole's memory.
func within(whole, part []byte) bool {
	if len(part) == 0 || len(whole) == 0 {
		return len(part) == 0
	}
	start := uintptr(unsafe.Pointer(&whole[0]))
	p := uintptr(unsafe.Pointer(&part[0]))
	return p >= start && p+uintptr(len(part)) <= start+uintptr(len(whole))
}

func FuzzDecompressor(f *testing.F) {
	enc, _ := zstd.NewWriter(nil)
	for _, s := range fuzzSeeds(f) {
		f.Add(enc.EncodeAll(s, nil), true)
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(s)
		w.Close()
		f.Add(buf.Bytes(), false)
	}
	const maxOut = 1 << 20
	// libzstd where installed, and the pure-Go decoders: the fuzz
	// function runs one input at a time, so they are made once.
	lib, err := NewDecompressor(maxOut, fuzzWindow)
	require.NoError(f, err)
	defer lib.Close()
	pure, err := newDecompressor(maxOut, fuzzWindow, false)
	require.NoError(f, err)
	defer pure.Close()
	f.Fuzz(func(t *testing.T, data []byte, isZstd bool) {
		c := Gzip
		if isZstd {
			c = Zstd
		}
		out, err := lib.Decompress(nil, data, c, "fuzz")
		require.False(t, err == nil && len(out) > maxOut, "%d bytes out, cap %d", len(out), maxOut)
		// Where both accept a stream they agree on its bytes.
		ref, rerr := pure.Decompress(nil, data, c, "fuzz")
		require.False(t, err == nil && rerr == nil && !bytes.Equal(out, ref), "%s and the pure-Go decoder disagree: %d and %d bytes", lib.ZstdDecoder(), len(out), len(ref))
	})
}
