package webdataset

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readListing reads data in memory with the fast path on or off and lists what
// came out: each sample (or skipped sample's key and size), then the error.
func readListing(t *testing.T, data []byte, slowOnly bool, skipEvery int) (out []string, err error) {
	t.Helper()
	rd, nerr := NewReader(bytes.NewReader(nil), None, WithMaxMemberBytes(fuzzMember), WithMaxSampleBytes(fuzzSample))
	require.NoError(t, nerr)
	rd.slowOnly = slowOnly
	rd.ResetBytes(data, "diff.tar")
	for i := range 300 {
		if skipEvery > 0 && i%skipEvery == 0 {
			key, size, err := rd.Skip()
			if err != nil {
				return out, err
			}
			out = append(out, "skip "+key+" "+string(rune('0'+size%10)))
			continue
		}
		s, err := rd.Next()
		if err != nil {
			return out, err
		}
		line := s.Key
		for _, f := range s.Fields {
			line += " " + f.Ext + "=" + string(f.Data)
		}
		out = append(out, line)
	}
	return out, nil
}

// sameFailure compares two Reader errors by what they say, leaving out the
// offset of header errors (archive/tar counts from where it stood).
func sameFailure(a, b error) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	if a == nil || errors.Is(a, b) {
		return true
	}
	var ea, eb *Error
	if !errors.As(a, &ea) || !errors.As(b, &eb) {
		return a.Error() == b.Error()
	}
	return ea.Member == eb.Member && ea.Err.Error() == eb.Err.Error()
}

// checkFastMatchesSlow holds the fast path to archive/tar's reading of data.
func checkFastMatchesSlow(t *testing.T, data []byte, label string) {
	t.Helper()
	for _, skip := range []int{0, 2} {
		fast, ferr := readListing(t, data, false, skip)
		slow, serr := readListing(t, data, true, skip)
		require.Len(t, fast, len(slow), "%s, skip %d: fast path read %d samples (%v), archive/tar %d (%v)", label, skip, len(fast), ferr, len(slow), serr)
		for i := range fast {
			require.EqualValues(t, slow[i], fast[i], "%s, skip %d: sample %d: fast %q, archive/tar %q", label, skip, i, fast[i], slow[i])
		}
		require.True(t, sameFailure(ferr, serr), "%s, skip %d: after %d samples: fast path %v, archive/tar %v", label, skip, len(fast), ferr, serr)
	}
}

func TestFastTarMatchesArchiveTar(t *testing.T) {
	cases := map[string][]byte{}
	for _, format := range []tar.Format{tar.FormatUSTAR, tar.FormatGNU, tar.FormatPAX} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, m := range testMembers(format != tar.FormatUSTAR) {
			hdr := &tar.Header{Name: m.Name, Size: int64(len(m.Data)), Mode: 0o644, Typeflag: tar.TypeReg, Format: format}
			if m.Dir {
				hdr.Typeflag, hdr.Size, hdr.Mode = tar.TypeDir, 0, 0o755
			}
			require.NoError(t, tw.WriteHeader(hdr), "%v %s", format, m.Name)
			tw.Write(m.Data)
		}
		tw.Close()
		cases[format.String()] = buf.Bytes()
	}
	for _, p := range fixturePaths(t, "*.tar") {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		cases[filepath.Base(p)] = b
	}
	plain := cases[tar.FormatUSTAR.String()]
	// Damage in the places the fast path reads.
	for name, at := range map[string]int{"checksum": 150, "size": 130, "magic": 258, "type": 156, "prefix": 350, "mode": 101} {
		b := bytes.Clone(plain)
		b[at] ^= 0x41
		cases["damaged "+name] = b
	}
	// A name with bytes above 0x7f, summed as signed bytes, as some old
	// writers did: archive/tar takes it, and so must the fast path.
	signed := bytes.Clone(plain)
	signed[20], signed[21] = 0xc3, 0xa9
	copy(signed[148:156], "        ")
	var sum int64
	for _, c := range signed[:tarBlock] {
		sum += int64(int8(c))
	}
	copy(signed[148:156], fmt.Sprintf("%06o\x00 ", sum))
	cases["signed checksum"] = signed
	_, ok := parseSimpleHeader(signed[:tarBlock])
	assert.True(t, ok, "the fast path refused a header whose checksum is its signed byte sum")
	cases["truncated payload"] = plain[:len(plain)-1100]
	cases["truncated header"] = plain[:tarBlock+100]
	cases["no end blocks"] = plain[:len(plain)-2*tarBlock]
	cases["empty"] = nil
	for name, data := range cases {
		t.Run(name, func(t *testing.T) { checkFastMatchesSlow(t, data, name) })
	}
	// The fast path does take the common headers: no archive/tar reader
	// exists until the end-of-archive blocks.
	rd, _ := NewReader(bytes.NewReader(nil), None)
	rd.ResetBytes(plain, "plain.tar")
	_, err := rd.Next()
	if assert.NoError(t, err, "a USTAR shard went through archive/tar (err %v)", err) {
		assert.Nil(t, rd.tr, "a USTAR shard went through archive/tar (err %v)", err)
	}
}

func FuzzFastTar(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, true)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, format := range []tar.Format{tar.FormatUSTAR, tar.FormatGNU, tar.FormatPAX} {
		tw.WriteHeader(&tar.Header{Name: "k/" + format.String() + ".txt", Size: 3, Mode: 0o600, Format: format})
		tw.Write([]byte("abc"))
	}
	tw.Close()
	f.Add(buf.Bytes(), true)
	f.Add(buf.Bytes(), false)
	f.Fuzz(func(t *testing.T, data []byte, fixSums bool) {
		if fixSums {
			// Give every block that looks like a header a valid checksum,
			// so mutations reach the fields behind it.
			data = bytes.Clone(data)
			for off := 0; off+tarBlock <= len(data); off += tarBlock {
				if blk := data[off : off+tarBlock]; bytes.HasPrefix(blk[257:], []byte("ustar")) {
					fixChecksum(blk)
				}
			}
		}
		checkFastMatchesSlow(t, data, "fuzz input")
	})
}

// fixChecksum writes a valid checksum into the header block blk.
func fixChecksum(blk []byte) {
	copy(blk[148:156], "        ")
	var sum int64
	for _, c := range blk[:tarBlock] {
		sum += int64(c)
	}
	copy(blk[148:156], fmt.Sprintf("%06o\x00 ", sum))
}

// Every byte of a USTAR and a GNU header set to values that matter to the
// parsers, checksum fixed: the fast path and archive/tar agree on each.
func TestFastTarSingleByteChanges(t *testing.T) {
	for _, format := range []tar.Format{tar.FormatUSTAR, tar.FormatGNU} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, name := range []string{"p/k1.txt", "p/k1.json", "p/k2.txt"} {
			tw.WriteHeader(&tar.Header{Name: name, Size: 600, Mode: 0o644, Typeflag: tar.TypeReg, Format: format})
			tw.Write(bytes.Repeat([]byte(name[:4]), 150))
		}
		tw.Close()
		plain := buf.Bytes()
		second := tarBlock + 1024 // the second header: 600 bytes of data pad to 1024
		for _, at := range []int{0, second} {
			for i := range tarBlock {
				if i >= 148 && i < 156 {
					continue // the checksum field itself
				}
				for _, v := range []byte{'0', '7', '8', ' ', 0, 'x', '/', 0x80, 0xff, '5', 'L', 'S'} {
					data := bytes.Clone(plain)
					data[at+i] = v
					fixChecksum(data[at:])
					checkFastMatchesSlow(t, data, fmt.Sprintf("%v header at %d, byte %d set to %#x", format, at, i, v))
				}
			}
		}
	}
}

// octalOK must accept exactly what strictOctal accepts: fields as writers
// lay them out, and each with any one byte set to a value that matters.
func TestOctalOKMatchesStrictOctal(t *testing.T) {
	bases := []string{
		"0000644\x00", "0000644 ", "   644 \x00", "\x00\x00\x00\x00\x00\x00\x00\x00", "        ", "0000000\x00",
		"00000000000\x00", "14723412345 ", " 1472341234\x00", "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", "777777777777",
	}
	for _, base := range bases {
		for i := range len(base) {
			for _, v := range []byte{0, ' ', '0', '7', '8', '/', 'x', 0x80, 0xb0, 0xff} {
				b := []byte(base)
				b[i] = v
				_, want := strictOctal(b)
				got := octalOK(b)
				assert.Equal(t, want, got, "octalOK(%q) = %v, strictOctal accepts it: %v", b, got, want)
			}
		}
	}
}

func FuzzOctalOK(f *testing.F) {
	f.Add([]byte("0000644\x00"))
	f.Add([]byte("00000000000\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, n := range []int{8, 12} {
			if len(b) < n {
				return
			}
			_, want := strictOctal(b[:n])
			got := octalOK(b[:n])
			require.Equal(t, want, got, "octalOK(%q) = %v, strictOctal accepts it: %v", b[:n], got, want)
		}
	})
}

// BenchmarkInMemoryTar reads a decompressed shard of 2,000 small samples
// with the fast header path and with archive/tar alone (the peer).
func BenchmarkInMemoryTar(b *testing.B) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	payload := bytes.Repeat([]byte("x"), 3000)
	for i := range 2000 {
		for _, ext := range []string{"txt", "json"} {
			tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("s%06d.%s", i, ext), Size: int64(len(payload)), Mode: 0o644, Format: tar.FormatUSTAR})
			tw.Write(payload)
		}
	}
	tw.Close()
	data := buf.Bytes()
	for _, tc := range []struct {
		name     string
		slowOnly bool
	}{{"fast", false}, {"archive-tar", true}} {
		b.Run(tc.name, func(b *testing.B) {
			rd, _ := NewReader(bytes.NewReader(nil), None)
			rd.slowOnly = tc.slowOnly
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				rd.ResetBytes(data, "bench.tar")
				for {
					if _, err := rd.Next(); err != nil {
						break
					}
				}
			}
		})
	}
}
