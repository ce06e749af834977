package webdataset

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRealToolRoundTrip reads tars written by GNU tar and Python's tarfile in
// every format they offer, plain and compressed by the gzip and zstd CLIs,
// and checks the samples against WebDataset's grouping of the same members.
func TestRealToolRoundTrip(t *testing.T) {
	writers := []struct {
		name  string
		long  bool // the format stores base names over 100 bytes
		write func(*testing.T, []tmember) []byte
	}{
		{"gnutar-ustar", false, func(t *testing.T, ms []tmember) []byte { return gnuTar(t, "ustar", ms) }},
		{"gnutar-gnu", true, func(t *testing.T, ms []tmember) []byte { return gnuTar(t, "gnu", ms) }},
		{"gnutar-pax", true, func(t *testing.T, ms []tmember) []byte { return gnuTar(t, "pax", ms) }},
		{"python-ustar", false, func(t *testing.T, ms []tmember) []byte { return pyTar(t, "USTAR_FORMAT", ms) }},
		{"python-gnu", true, func(t *testing.T, ms []tmember) []byte { return pyTar(t, "GNU_FORMAT", ms) }},
		{"python-pax", true, func(t *testing.T, ms []tmember) []byte { return pyTar(t, "PAX_FORMAT", ms) }},
	}
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			ms := testMembers(w.long)
			want := expectSamples(ms)
			plain := w.write(t, ms)
			for _, c := range []struct {
				name, file string
				data       []byte
			}{
				{"plain", "s.tar", plain},
				{"gzip", "s.tar.gz", compressWith(t, "gzip", plain)},
				{"zstd", "s.tar.zst", compressWith(t, "zstd", plain)},
			} {
				t.Run(c.name, func(t *testing.T) {
					got, err := readAll(bytes.NewReader(c.data), Auto, WithName(c.file))
					require.NoError(t, err)
					equalSamples(t, got, want)
					byName := DetectCompression(c.file, nil)
					got, err = readAll(bytes.NewReader(c.data), byName)
					require.NoError(t, err, "with compression %v from the name: %v", byName, err)
					equalSamples(t, got, want)
					got, err = readInMemory(c.data, c.file)
					require.NoError(t, err, "in memory: %v", err)
					equalSamples(t, got, want)
				})
			}
		})
	}
}

// readInMemory decompresses a whole shard and reads it with ResetBytes.
func readInMemory(data []byte, name string) ([]Sample, error) {
	d, err := NewDecompressor(0, 0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	tarData, err := d.Decompress(nil, data, Auto, name)
	if err != nil {
		return nil, err
	}
	rd, err := NewReader(bytes.NewReader(nil), None)
	if err != nil {
		return nil, err
	}
	rd.ResetBytes(tarData, name)
	var out []Sample
	for {
		s, err := rd.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, *s)
	}
}
