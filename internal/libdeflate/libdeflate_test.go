package libdeflate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os/exec"
	"runtime"
	"testing"

	"github.com/gdsload/gdsload/internal/testenv"
	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newDecoder returns a libdeflate decoder, skipping where the dynamic
// linker does not know libdeflate.so.0 (CI installs libdeflate0). Where it
// does, a decoder that fails to load fails the test.
func newDecoder(t testing.TB) *Decoder {
	t.Helper()
	testenv.Library(t, "libdeflate.so.0", "libdeflate0 (apt-get install libdeflate0)")
	d, err := NewDecoder()
	require.NoError(t, err, "libdeflate.so.0 is installed, but NewDecoder failed")
	t.Cleanup(d.Close)
	return d
}

// gzipCLI compresses data with the gzip command and the given flags.
func gzipCLI(t *testing.T, data []byte, flags ...string) []byte {
	t.Helper()
	cmd := exec.Command(testenv.Tool(t, "gzip", "gzip"), append([]string{"-c"}, flags...)...)
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	require.NoError(t, err, "gzip %v", flags)
	return out
}

// goGzip compresses data with the pure-Go encoder, naming the member.
func goGzip(data []byte, name string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Name = name
	w.Write(data)
	w.Close()
	return b.Bytes()
}

func testData(n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha ", "beta ", "gamma ", "delta ", "epsilon "}
	var b bytes.Buffer
	for b.Len() < n/2 {
		b.WriteString(words[rng.IntN(len(words))])
	}
	for b.Len() < n {
		b.WriteByte(byte(rng.Uint32()))
	}
	return b.Bytes()
}

// withSize returns a copy of the member src whose trailer claims size.
func withSize(src []byte, size uint32) []byte {
	c := bytes.Clone(src)
	binary.LittleEndian.PutUint32(c[len(c)-4:], size)
	return c
}

func TestGunzipMatchesTheCLI(t *testing.T) {
	d := newDecoder(t)
	plain := testData(3 << 20)
	for _, tt := range []struct {
		name string
		src  []byte
		want []byte
	}{
		{"level 1", gzipCLI(t, plain, "-1"), plain},
		{"level 9", gzipCLI(t, plain, "-9"), plain},
		{"stored", gzipCLI(t, testData(1 << 20)[1<<19:], "-1"), testData(1 << 20)[1<<19:]},
		{"named, Go encoder", goGzip(plain, "shard.tar"), plain},
		{"two members", append(gzipCLI(t, plain[:1000]), gzipCLI(t, plain[1000:])...), plain},
		{"empty member first", append(gzipCLI(t, nil), gzipCLI(t, plain)...), plain},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, size := range []int{0, 100, len(tt.want) + 10} {
				out, err := d.Gunzip(make([]byte, 0, size), tt.src, 1<<30)
				require.NoError(t, err, "dst cap %d: %d bytes, %v; want the %d bytes back", size, len(out), err, len(tt.want))
				require.True(t, bytes.Equal(out, tt.want), "dst cap %d: %d bytes, %v; want the %d bytes back", size, len(out), err, len(tt.want))
			}
			// Cut in the middle: refused.
			cut := tt.src[:len(tt.src)/2]
			_, err := d.Gunzip(nil, cut, 1<<30)
			require.ErrorIs(t, err, ErrBadData, "input cut at %d of %d bytes", len(cut), len(tt.src))
		})
	}
	out, err := d.Gunzip(nil, nil, 1<<20)
	assert.NoError(t, err, "empty input: %d bytes, %v", len(out), err)
	assert.Empty(t, out, "empty input: %d bytes, %v", len(out), err)
}

func TestGunzipRefuses(t *testing.T) {
	d := newDecoder(t)
	plain := testData(3 << 20)
	src := gzipCLI(t, plain, "-6")
	badCRC := bytes.Clone(src)
	badCRC[len(badCRC)-8] ^= 1 // the CRC-32 precedes the size
	for _, tt := range []struct {
		name   string
		src    []byte
		maxOut int64
		want   error
	}{
		{"truncated", src[:len(src)/2], 1 << 30, ErrBadData},
		{"header only", src[:10], 1 << 30, ErrBadData},
		{"wrong CRC-32", badCRC, 1 << 30, ErrBadData},
		{"wrong size", withSize(src, uint32(len(plain)+1)), 1 << 30, ErrBadData},
		{"trailing garbage", append(bytes.Clone(src), "garbage!"...), 1 << 30, ErrBadData},
		{"trailing zeros", append(bytes.Clone(src), make([]byte, 512)...), 1 << 30, ErrBadData},
		{"not gzip", []byte("plain tar bytes, not a member"), 1 << 30, ErrBadData},
		{"output over the cap", src, 1 << 20, ErrOutputFull},
		{"over the cap, size field lies", withSize(src, 100), 1 << 20, ErrOutputFull},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A dst with room beyond the cap must not lift it.
			for _, dst := range [][]byte{nil, make([]byte, 0, 8<<20)} {
				out, err := d.Gunzip(dst, tt.src, tt.maxOut)
				require.ErrorIs(t, err, tt.want, "dst of cap %d: accepted, %d bytes", cap(dst), len(out))
				require.LessOrEqual(t, int64(len(out)), tt.maxOut, "dst of cap %d: %d bytes out, cap %d", cap(dst), len(out), tt.maxOut)
			}
		})
	}
	// A trailer whose size field lies makes room for less than the output
	// (it grows and decodes again) or for more, bounded by what deflate
	// can expand the input to: either way the bytes come back, and a
	// small input claiming 4 GiB allocates far less.
	for _, size := range []uint32{1, 999, 1 << 31, 1<<32 - 1} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		small := gzipCLI(t, plain[:1000])
		_, err := d.Gunzip(nil, withSize(small, size), 1<<40)
		assert.ErrorIs(t, err, ErrBadData, "size field %d on a 1000-byte member", size)
		runtime.ReadMemStats(&after)
		grew := after.TotalAlloc - before.TotalAlloc
		assert.LessOrEqual(t, grew, uint64(len(small))*maxRatio+1<<20, "size field %d: allocated %d bytes", size, grew)
	}
	// The decoder is usable after failures.
	out, err := d.Gunzip(nil, src, 1<<30)
	assert.NoError(t, err, "after failures: %d bytes, %v", len(out), err)
	assert.True(t, bytes.Equal(out, plain), "after failures: %d bytes, %v", len(out), err)
}

func TestDisabledByEnvironment(t *testing.T) {
	t.Setenv("GDSLOAD_LIBDEFLATE", "off")
	d, err := NewDecoder()
	require.Error(t, err, "NewDecoder with GDSLOAD_LIBDEFLATE=off: %v, %v", d, err)
	require.ErrorContains(t, err, "GDSLOAD_LIBDEFLATE", "NewDecoder with GDSLOAD_LIBDEFLATE=off: %v, %v", d, err)
	t.Setenv("GDSLOAD_LIBDEFLATE", "libnothing-such.so.9")
	_, err = NewDecoder()
	require.Error(t, err, "a missing library: %v", err)
	require.ErrorContains(t, err, "libnothing-such", "a missing library: %v", err)
	t.Setenv("GDSLOAD_LIBDEFLATE", "libc.so.6") // loads, lacks the symbols
	_, err = NewDecoder()
	require.ErrorContains(t, err, "lacks libdeflate_", "a library without libdeflate's symbols: %v", err)
}

// FuzzMatchesPureGo cross-checks libdeflate with the pure-Go decoder:
// where both accept a stream they give the same bytes, and the cap holds.
// libdeflate accepts some streams the others refuse (an incomplete
// Huffman code, a header CRC it does not check); the member's CRC-32 and
// size, which it does check, still vouch for the bytes (testdata/fuzz
// keeps one such stream that zlib refuses too).
func FuzzMatchesPureGo(f *testing.F) {
	for _, s := range [][]byte{nil, []byte("a"), testData(1000), bytes.Repeat([]byte("xyz"), 5000)} {
		f.Add(goGzip(s, ""))
		f.Add(goGzip(s, "name.tar"))
	}
	const maxOut = 1 << 20
	d := newDecoder(f) // the fuzz function runs one input at a time
	f.Fuzz(func(t *testing.T, src []byte) {
		got, err := d.Gunzip(nil, src, maxOut)
		require.LessOrEqual(t, len(got), maxOut, "%d bytes out, cap %d", len(got), maxOut)
		require.False(t, err != nil && !errors.Is(err, ErrBadData) && !errors.Is(err, ErrOutputFull), "error %v is neither ErrBadData nor ErrOutputFull", err)
		r, rerr := gzip.NewReader(bytes.NewReader(src))
		if err != nil || rerr != nil {
			return
		}
		want, rerr := io.ReadAll(io.LimitReader(r, maxOut+1))
		require.False(t, rerr == nil && !bytes.Equal(got, want), "libdeflate and the pure-Go decoder disagree: %d and %d bytes", len(got), len(want))
	})
}
