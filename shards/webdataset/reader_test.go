package webdataset

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gdsload/gdsload/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goTar writes members with archive/tar (for error cases tools refuse to
// produce).
func goTar(t testing.TB, ms []tmember) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range ms {
		h := &tar.Header{Name: m.Name, Mode: 0o644, Size: int64(len(m.Data)), Typeflag: tar.TypeReg}
		if m.Dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		require.NoError(t, tw.WriteHeader(h))
		_, err := tw.Write(m.Data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func TestReaderErrors(t *testing.T) {
	big := tmember{Name: "a.bin", Data: make([]byte, 2000)}
	for _, tc := range []struct {
		name    string
		tar     []byte
		opts    []Option
		want    error
		member  string
		atIndex int // samples read successfully before the error
	}{
		{"member cap", goTar(t, []tmember{{Name: "x.txt", Data: []byte("ok")}, big}), []Option{WithMaxMemberBytes(1000)}, ErrMemberTooLarge, "a.bin", 1},
		{"sample cap", goTar(t, []tmember{{Name: "a.txt", Data: make([]byte, 600)}, {Name: "a.json", Data: make([]byte, 600)}}), []Option{WithMaxSampleBytes(1000)}, ErrSampleTooLarge, "a.json", 0},
		{"duplicate ext", goTar(t, []tmember{{Name: "a.TXT", Data: []byte("1")}, {Name: "a.txt", Data: []byte("2")}}), nil, ErrDuplicateField, "a.txt", 0},
		{"truncated payload", goTar(t, []tmember{{Name: "x.txt", Data: []byte("ok")}, big})[:512*4+100], nil, io.ErrUnexpectedEOF, "a.bin", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, skip := range []bool{false, true} {
				opts := append([]Option{WithName("shard-7.tar")}, tc.opts...)
				rd, err := NewReader(bytes.NewReader(tc.tar), None, opts...)
				require.NoError(t, err)
				n := 0
				for {
					if skip {
						_, _, err = rd.Skip()
					} else {
						_, err = rd.Next()
					}
					if err != nil {
						break
					}
					n++
				}
				if skip && tc.want == io.ErrUnexpectedEOF {
					// Skipping never reads the truncated payload; the tar
					// reader reports the short stream when seeking past it.
					require.ErrorIs(t, err, io.ErrUnexpectedEOF, "skip: %v after %d samples, want unexpected EOF naming the shard after %d", err, n, tc.atIndex)
					require.EqualValues(t, tc.atIndex, n, "skip: %v after %d samples, want unexpected EOF naming the shard after %d", err, n, tc.atIndex)
					require.ErrorContains(t, err, "shard-7.tar", "skip: %v after %d samples, want unexpected EOF naming the shard after %d", err, n, tc.atIndex)
					continue
				}
				var we *Error
				require.ErrorIs(t, err, tc.want, "skip=%v: error %v, want %v as *Error", skip, err, tc.want)
				require.ErrorAs(t, err, &we, "skip=%v: error %v, want %v as *Error", skip, err, tc.want)
				require.Equal(t, "shard-7.tar", we.Shard, "skip=%v: error %+v after %d samples; want shard-7.tar, member %q, offset > 0, after %d", skip, we, n, tc.member, tc.atIndex)
				require.Equal(t, tc.member, we.Member, "skip=%v: error %+v after %d samples; want shard-7.tar, member %q, offset > 0, after %d", skip, we, n, tc.member, tc.atIndex)
				require.Greater(t, we.Offset, int64(0), "skip=%v: error %+v after %d samples; want shard-7.tar, member %q, offset > 0, after %d", skip, we, n, tc.member, tc.atIndex)
				require.Equal(t, tc.atIndex, n, "skip=%v: error %+v after %d samples; want shard-7.tar, member %q, offset > 0, after %d", skip, we, n, tc.member, tc.atIndex)
				require.ErrorContains(t, err, "shard-7.tar", "message %q does not name shard and member", err)
				require.ErrorContains(t, err, tc.member, "message %q does not name shard and member", err)
				_, again := rd.Next()
				require.Equal(t, err, again, "error not sticky: %v then %v", err, again)
			}
		})
	}
}

func TestReaderNotTar(t *testing.T) {
	two := goTar(t, []tmember{{Name: "a.txt", Data: []byte("1")}, {Name: "b.txt", Data: []byte("2")}})
	junk := strings.Repeat("not a tar file at all ", 40)
	for _, tc := range []struct {
		name, data string
		c          Compression
		notTar     bool // the error says the file is not a tar archive
	}{
		{"junk", junk, None, true},
		{"junk, compression detected", junk, Auto, true},
		{"shorter than a header", "hello", None, true},
		{"cut in its second header", string(two[:512*2+100]), None, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readAll(strings.NewReader(tc.data), tc.c, WithName("junk.tar"))
			var we *Error
			require.ErrorAs(t, err, &we, "error %v, want *Error naming junk.tar", err)
			require.EqualValues(t, "junk.tar", we.Shard, "error %v, want *Error naming junk.tar", err)
			got := strings.Contains(err.Error(), "not a tar archive")
			require.Equal(t, tc.notTar, got, "error %q: says not a tar archive: %v, want %v", err, got, tc.notTar)
		})
	}
	_, err := readAll(strings.NewReader("\x1f\x8bnot gzip really"), Auto, WithName("bad.tgz"))
	require.Error(t, err, "corrupt gzip: error %v, want one naming bad.tgz", err)
	require.ErrorContains(t, err, "bad.tgz", "corrupt gzip: error %v, want one naming bad.tgz", err)
}

func TestReaderEmptyStream(t *testing.T) {
	got, err := readAll(bytes.NewReader(nil), None)
	require.NoError(t, err, "empty stream: %d samples, %v", len(got), err)
	require.Len(t, got, 0, "empty stream: %d samples, %v", len(got), err)
}

func TestSkipMatchesNext(t *testing.T) {
	data := goTar(t, testMembers(true))
	want := expectSamples(testMembers(true))
	rd, err := NewReader(bytes.NewReader(data), None)
	require.NoError(t, err)
	for i, w := range want {
		if i%2 == 0 {
			key, size, err := rd.Skip()
			require.NoError(t, err, "Skip %d: %q, %d, %v; want %q, %d", i, key, size, err, w.Key, w.Size())
			require.EqualValues(t, w.Key, key, "Skip %d: %q, %d, %v; want %q, %d", i, key, size, err, w.Key, w.Size())
			require.EqualValues(t, w.Size(), size, "Skip %d: %q, %d, %v; want %q, %d", i, key, size, err, w.Key, w.Size())
			continue
		}
		s, err := rd.Next()
		require.NoError(t, err)
		equalSamples(t, []Sample{*s}, []Sample{w})
	}
	_, err = rd.Next()
	require.Equal(t, io.EOF, err, "after last sample: %v, want io.EOF", err)
	require.Len(t, want, rd.Index(), "Index %d, want %d", rd.Index(), len(want))
}

// A sample's fields slice has room for as many fields as the sample
// before it, up to maxFieldsHint: one sample of many fields does not make
// the samples after it hold room for as many.
func TestFieldsRoomFollowsTheLastSample(t *testing.T) {
	var ms []tmember
	for i := range 3 * maxFieldsHint {
		ms = append(ms, tmember{Name: fmt.Sprintf("wide.f%03d", i), Data: []byte{byte(i)}})
	}
	ms = append(ms, tmember{Name: "narrow.a", Data: []byte("a")},
		tmember{Name: "pair.a", Data: []byte("a")}, tmember{Name: "pair.b", Data: []byte("b")},
		tmember{Name: "pair2.a", Data: []byte("a")}, tmember{Name: "pair2.b", Data: []byte("b")})
	data := goTar(t, ms)
	for _, slowOnly := range []bool{false, true} {
		rd, _ := NewReader(bytes.NewReader(nil), None)
		rd.slowOnly = slowOnly
		rd.ResetBytes(data, "fields.tar")
		for _, want := range []struct {
			key          string
			fields, room int
		}{{"wide", 3 * maxFieldsHint, 3 * maxFieldsHint}, {"narrow", 1, maxFieldsHint}, {"pair", 2, 2}, {"pair2", 2, 2}} {
			s, err := rd.Next()
			require.NoError(t, err, "slowOnly %v: %s: %v", slowOnly, want.key, err)
			require.EqualValues(t, want.key, s.Key, "slowOnly %v: got %s with %d fields, want %s with %d", slowOnly, s.Key, len(s.Fields), want.key, want.fields)
			require.Len(t, s.Fields, want.fields, "slowOnly %v: got %s with %d fields, want %s with %d", slowOnly, s.Key, len(s.Fields), want.key, want.fields)
			assert.False(t, want.key != "wide" && cap(s.Fields) > want.room, "slowOnly %v: %s has room for %d fields, want at most %d", slowOnly, s.Key, cap(s.Fields), want.room)
		}
	}
}

func TestReaderResetReusesDecoders(t *testing.T) {
	plain := goTar(t, testMembers(false))
	want := expectSamples(testMembers(false))
	rd, err := NewReader(bytes.NewReader(nil), None)
	require.NoError(t, err)
	defer rd.Close()
	for _, tool := range []string{"zstd", "gzip", "zstd", "gzip"} {
		data := compressWith(t, tool, plain)
		require.NoError(t, rd.Reset(bytes.NewReader(data), Auto, tool+".tar"))
		var got []Sample
		for {
			s, err := rd.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			got = append(got, *s)
		}
		equalSamples(t, got, want)
	}
}

func TestZstdWindowCap(t *testing.T) {
	plain := goTar(t, []tmember{{Name: "a.bin", Data: bytes.Repeat([]byte("0123456789abcdef"), 1<<17)}})
	data := compressWith(t, "zstd", plain) // 2 MiB input: window of 2 MiB
	_, err := readAll(bytes.NewReader(data), Zstd, WithName("w.tar.zst"), WithMaxZstdWindow(64<<10))
	require.Error(t, err, "frame beyond window cap: %v, want an error naming the shard", err)
	require.ErrorContains(t, err, "w.tar.zst", "frame beyond window cap: %v, want an error naming the shard", err)
	_, err = readAll(bytes.NewReader(data), Zstd)
	require.NoError(t, err, "default cap")
}

func TestDetectCompression(t *testing.T) {
	for _, tc := range []struct {
		name string
		head []byte
		want Compression
	}{
		{"x.tar", []byte{0x28, 0xb5, 0x2f, 0xfd}, Zstd}, // magic beats the name
		{"x.tar.zst", []byte("a/b/"), None},
		{"x.tgz", []byte{0x1f, 0x8b, 8, 0}, Gzip},
		{"x.tar.gz", nil, Gzip},
		{"x.tar.zst", []byte{0x28}, Zstd},
		{"x.TZST", nil, Zstd},
		{"x.tar", nil, None},
	} {
		got := DetectCompression(tc.name, tc.head)
		assert.Equal(t, tc.want, got, "DetectCompression(%q, %x) = %v, want %v", tc.name, tc.head, got, tc.want)
	}
}

func TestDecompressorCaps(t *testing.T) {
	plain := goTar(t, []tmember{{Name: "a.bin", Data: bytes.Repeat([]byte("z"), 3<<20)}})
	for _, lib := range []bool{true, false} {
		for _, tool := range []string{"gzip", "zstd"} {
			data := compressWith(t, tool, plain)
			d, err := newDecompressor(5<<19, 0, lib) // above zstd -3's 2 MiB window, below the output
			require.NoError(t, err)
			_, err = d.Decompress(nil, data, Auto, "big."+tool)
			assert.ErrorIs(t, err, ErrShardTooLarge, "%s (%s) beyond the cap: %v, want ErrShardTooLarge naming the shard", tool, d.ZstdDecoder(), err)
			assert.ErrorContains(t, err, "big."+tool, "%s (%s) beyond the cap: %v, want ErrShardTooLarge naming the shard", tool, d.ZstdDecoder(), err)
			d.Close()
			d, _ = newDecompressor(0, 0, lib)
			for _, verified := range []bool{false, true} {
				decompress := d.Decompress
				if verified {
					decompress = d.DecompressVerified
				}
				out, err := decompress(make([]byte, 0, 10), data, Auto, "ok."+tool)
				assert.NoError(t, err, "%s (%s, verified %v): %d bytes, %v; want the tar back", tool, d.ZstdDecoder(), verified, len(out), err)
				assert.True(t, bytes.Equal(out, plain), "%s (%s, verified %v): %d bytes, %v; want the tar back", tool, d.ZstdDecoder(), verified, len(out), err)
			}
			// A damaged frame checksum fails, unless the bytes were verified.
			if tool == "zstd" {
				bad := bytes.Clone(data)
				bad[len(bad)-1] ^= 1
				_, err := d.Decompress(nil, bad, Zstd, "sum.tar.zst")
				assert.Error(t, err, "%s: a wrong frame checksum was accepted", d.ZstdDecoder())
				out, err := d.DecompressVerified(nil, bad, Zstd, "sum.tar.zst")
				assert.NoError(t, err, "%s: verified bytes: %d bytes, %v", d.ZstdDecoder(), len(out), err)
				assert.True(t, bytes.Equal(out, plain), "%s: verified bytes: %d bytes, %v", d.ZstdDecoder(), len(out), err)
			}
			d.Close()
		}
	}
	d, _ := NewDecompressor(0, 0)
	defer d.Close()
	_, err := exec.LookPath("zstd")
	assert.False(t, err == nil && !strings.HasPrefix(d.ZstdDecoder(), "libzstd"), "zstd is installed, and with it libzstd.so.1, but the Decompressor uses %s", d.ZstdDecoder())
}

// TestDecompressorUsesLibdeflate: where the dynamic linker knows
// libdeflate.so.0, whole .tar.gz shards are inflated by it.
func TestDecompressorUsesLibdeflate(t *testing.T) {
	testenv.Library(t, "libdeflate.so.0", "libdeflate0 (apt-get install libdeflate0)")
	if os.Getenv("GDSLOAD_LIBDEFLATE") == "off" {
		t.Skip("GDSLOAD_LIBDEFLATE=off in the environment")
	}
	d, err := NewDecompressor(0, 0)
	require.NoError(t, err)
	defer d.Close()
	require.Equal(t, "libdeflate", d.GzipDecoder(), "libdeflate.so.0 is installed, but the Decompressor does not use it")
}
