package libzstd

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/gdsload/gdsload/internal/testenv"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newDecoder returns a libzstd decoder, skipping where the dynamic
// linker does not know libzstd.so.1 (CI installs zstd, which brings it).
// Where it does, a decoder that fails to load fails the test.
func newDecoder(t testing.TB) *Decoder {
	t.Helper()
	testenv.Library(t, "libzstd.so.1", "libzstd1 (apt-get install zstd)")
	d, err := NewDecoder()
	require.NoError(t, err, "libzstd.so.1 is installed, but NewDecoder failed")
	t.Cleanup(d.Close)
	return d
}

// zstdCLI compresses data with the zstd command and the given flags.
func zstdCLI(t *testing.T, data []byte, flags ...string) []byte {
	t.Helper()
	cmd := exec.Command(testenv.Tool(t, "zstd", "zstd"), append([]string{"-q", "-c"}, flags...)...)
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	require.NoError(t, err, "zstd %v", flags)
	return out
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

func TestDecodeAllMatchesTheCLI(t *testing.T) {
	d := newDecoder(t)
	plain := testData(3 << 20)
	enc, _ := zstd.NewWriter(nil)
	defer enc.Close()
	for _, tt := range []struct {
		name string
		src  []byte
	}{
		{"level 3", zstdCLI(t, plain, "-3")},
		{"no checksum", zstdCLI(t, plain, "--no-check")},
		{"level 19 long", zstdCLI(t, plain, "-19", "--long=24")},
		{"content size unknown", zstdCLI(t, plain, "--no-content-size")},
		{"two frames", append(zstdCLI(t, plain[:1000]), zstdCLI(t, plain[1000:])...)},
		{"skippable frame", append([]byte{0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 'a', 'b', 'c'}, zstdCLI(t, plain)...)},
		{"Go encoder", enc.EncodeAll(plain, nil)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, size := range []int{0, 100, len(plain) + 10} {
				out, err := d.DecodeAll(make([]byte, 0, size), tt.src, 128<<20, 1<<30, false)
				require.NoError(t, err, "dst cap %d: %d bytes, %v; want the %d bytes back", size, len(out), err, len(plain))
				require.True(t, bytes.Equal(out, plain), "dst cap %d: %d bytes, %v; want the %d bytes back", size, len(out), err, len(plain))
				// DecodeAllFunc: the same output, and every input byte
				// handed over once, in order, before libzstd read it.
				var seen []byte
				out, err = d.DecodeAllFunc(make([]byte, 0, size), tt.src, 128<<20, 1<<30, true, func(p []byte) { seen = append(seen, p...) })
				require.NoError(t, err, "DecodeAllFunc, dst cap %d: %d bytes, %v; want the %d bytes back", size, len(out), err, len(plain))
				require.True(t, bytes.Equal(out, plain), "DecodeAllFunc, dst cap %d: %d bytes, %v; want the %d bytes back", size, len(out), err, len(plain))
				require.True(t, bytes.Equal(seen, tt.src), "DecodeAllFunc, dst cap %d: onInput saw %d bytes, not the %d of the input in order", size, len(seen), len(tt.src))
			}
			// Cut in the middle: both fail, fed whole or a piece at a time.
			cut := tt.src[:len(tt.src)/2]
			_, err := d.DecodeAll(nil, cut, 128<<20, 1<<30, false)
			_, err2 := d.DecodeAllFunc(nil, cut, 128<<20, 1<<30, true, func([]byte) {})
			require.Error(t, err, "input cut at %d of %d bytes: DecodeAll %v, DecodeAllFunc %v; want errors", len(cut), len(tt.src), err, err2)
			require.Error(t, err2, "input cut at %d of %d bytes: DecodeAll %v, DecodeAllFunc %v; want errors", len(cut), len(tt.src), err, err2)
		})
	}
	out, err := d.DecodeAll(nil, nil, 1<<20, 1<<20, false)
	assert.NoError(t, err, "empty input: %d bytes, %v", len(out), err)
	assert.Empty(t, out, "empty input: %d bytes, %v", len(out), err)
}

func TestDecodeAllRefuses(t *testing.T) {
	d := newDecoder(t)
	plain := testData(3 << 20)
	src := zstdCLI(t, plain, "-3")
	// The frame checksum is the last 4 bytes.
	badSum := bytes.Clone(src)
	badSum[len(badSum)-1] ^= 1
	_, err := d.DecodeAll(nil, badSum, 128<<20, 1<<30, false)
	assert.Error(t, err, "a wrong frame checksum was accepted")
	out, err := d.DecodeAll(nil, badSum, 128<<20, 1<<30, true)
	assert.NoError(t, err, "ignoring checksums: %d bytes, %v", len(out), err)
	assert.True(t, bytes.Equal(out, plain), "ignoring checksums: %d bytes, %v", len(out), err)
	for _, tt := range []struct {
		name      string
		src       []byte
		maxWindow uint64
		maxOut    int64
		want      string
	}{
		{"truncated", src[:len(src)/2], 128 << 20, 1 << 30, "ends inside a frame"},
		{"truncated header", src[:3], 128 << 20, 1 << 30, ""},
		{"trailing garbage", append(bytes.Clone(src), "garbage!"...), 128 << 20, 1 << 30, ""},
		{"not zstd", []byte("plain tar bytes, not a frame"), 128 << 20, 1 << 30, ""},
		{"window over the cap", zstdCLI(t, plain, "--long=22"), 1 << 20, 1 << 30, "memory"},
		{"output over the cap", src, 128 << 20, 1 << 20, "exceeds the cap"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := d.DecodeAll(nil, tt.src, tt.maxWindow, tt.maxOut, false)
			require.Error(t, err, "accepted, %d bytes", len(out))
			require.ErrorContains(t, err, tt.want, "error %q does not say %q", err, tt.want)
			require.False(t, strings.Contains(tt.want, "cap") && !errors.Is(err, ErrOutputFull), "error %v is not ErrOutputFull", err)
			require.LessOrEqual(t, int64(len(out)), tt.maxOut, "%d bytes out, cap %d", len(out), tt.maxOut)
		})
	}
	// A damaged frame header claiming a huge size allocates nothing for
	// it: output grows as it arrives, and the cap holds.
	// The CLI's frame of piped input has no content size: its descriptor
	// is followed by the window byte. Claim 1 TiB: an 8-byte size after it.
	small := zstdCLI(t, plain[:1000], "-3")
	require.Zero(t, small[4]&0xe3, "unexpected frame header % x", small[:8])
	huge := append(append(append([]byte{}, small[:4]...), small[4]|0xc0, small[5]), 0, 0, 0, 0, 0, 1, 0, 0)
	huge = append(huge, small[6:]...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = d.DecodeAll(nil, huge, 128<<20, 1<<40, false)
	assert.Error(t, err, "a frame claiming 1 TiB of content was accepted")
	runtime.ReadMemStats(&after)
	grew := after.TotalAlloc - before.TotalAlloc
	assert.LessOrEqual(t, grew, uint64(64<<20), "decoding a frame that claims a huge size allocated %d bytes", grew)
	// The decoder is usable after failures.
	out, err = d.DecodeAll(nil, src, 128<<20, 1<<30, false)
	assert.NoError(t, err, "after failures: %d bytes, %v", len(out), err)
	assert.True(t, bytes.Equal(out, plain), "after failures: %d bytes, %v", len(out), err)
}

func TestDisabledByEnvironment(t *testing.T) {
	t.Setenv("GDSLOAD_LIBZSTD", "off")
	d, err := NewDecoder()
	require.Error(t, err, "NewDecoder with GDSLOAD_LIBZSTD=off: %v, %v", d, err)
	require.ErrorContains(t, err, "GDSLOAD_LIBZSTD", "NewDecoder with GDSLOAD_LIBZSTD=off: %v, %v", d, err)
	t.Setenv("GDSLOAD_LIBZSTD", "libnothing-such.so.9")
	_, err = NewDecoder()
	require.Error(t, err, "a missing library: %v", err)
	require.ErrorContains(t, err, "libnothing-such", "a missing library: %v", err)
}

// FuzzMatchesPureGo cross-checks libzstd with the pure-Go decoder, as
// klauspost/compress's own fuzz tests check it against the reference:
// where both accept a stream they give the same bytes, and the caps hold.
func FuzzMatchesPureGo(f *testing.F) {
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	for _, s := range [][]byte{nil, []byte("a"), testData(1000), bytes.Repeat([]byte("xyz"), 5000)} {
		f.Add(enc.EncodeAll(s, nil))
	}
	const maxOut, maxWindow = 1 << 20, 1 << 20
	d := newDecoder(f) // the fuzz function runs one input at a time
	ref, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxWindow), zstd.WithDecoderMaxMemory(maxOut))
	defer ref.Close()
	f.Fuzz(func(t *testing.T, src []byte) {
		got, err := d.DecodeAll(nil, src, maxWindow, maxOut, false)
		require.LessOrEqual(t, len(got), maxOut, "%d bytes out, cap %d", len(got), maxOut)
		want, rerr := ref.DecodeAll(src, nil)
		require.False(t, err == nil && rerr == nil && !bytes.Equal(got, want), "libzstd and the pure-Go decoder disagree: %d and %d bytes", len(got), len(want))
		// Fed a piece at a time, the same result; what onInput saw is
		// the input's start (all of it, on success).
		var seen []byte
		got2, err2 := d.DecodeAllFunc(nil, src, maxWindow, maxOut, false, func(p []byte) { seen = append(seen, p...) })
		require.Equal(t, (err2 == nil), (err == nil), "DecodeAllFunc: %d bytes, %v; DecodeAll: %d bytes, %v", len(got2), err2, len(got), err)
		require.True(t, bytes.Equal(got, got2), "DecodeAllFunc: %d bytes, %v; DecodeAll: %d bytes, %v", len(got2), err2, len(got), err)
		require.True(t, bytes.HasPrefix(src, seen), "onInput saw %d bytes of %d, not the input in order", len(seen), len(src))
		require.False(t, err2 == nil && len(seen) != len(src), "onInput saw %d bytes of %d, not the input in order", len(seen), len(src))
	})
}
