package cache

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// partedFile is a memFile uploaded in parts of partSize: its ETag is the
// MD5 of the parts' MD5s and their count, as S3 and MinIO make it.
type partedFile struct {
	*memFile
	partSize int64
	parts    int // what Parts reports; the true count unless a test lies
}

func (f *partedFile) Parts(context.Context) (int64, int, error) { return f.partSize, f.parts, nil }

func newPartedFile(name string, data []byte, partSize int64) *partedFile {
	var sums []byte
	n := 0
	for off := int64(0); off < int64(len(data)); off += partSize {
		s := md5.Sum(data[off:min(off+partSize, int64(len(data)))])
		sums = append(sums, s[:]...)
		n++
	}
	total := md5.Sum(sums)
	f := newMemFile(name, data, nil)
	f.etag = fmt.Sprintf(`"%s-%d"`, hex.EncodeToString(total[:]), n)
	return &partedFile{memFile: f, partSize: partSize, parts: n}
}

func TestMultipartETagIsChecked(t *testing.T) {
	const size = 10_000
	tests := []struct {
		name     string
		partSize int64
		chunk    int64
		damage   bool
		lieParts bool // Parts reports another count than the ETag's
		verified string
	}{
		{name: "parts end inside reads", partSize: 1500, chunk: 1000, verified: "etag-multipart-md5"},
		{name: "parts end on reads", partSize: 2000, chunk: 1000, verified: "etag-multipart-md5"},
		{name: "parts span one read", partSize: 999, chunk: 4096, verified: "etag-multipart-md5"},
		{name: "one part", partSize: size, chunk: 4096, verified: "etag-multipart-md5"},
		{name: "damaged in transit", partSize: 1500, chunk: 1000, damage: true},
		{name: "part count differs: size only", partSize: 1500, chunk: 1000, lieParts: true, verified: "size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c, err := Open(dir, WithLimit(1<<20))
			require.NoError(t, err)
			c.chunk = tc.chunk
			data := content("p", 1, size)
			f := newPartedFile("s3://b/p", data, tc.partSize)
			if tc.damage {
				f.data = content("p", 2, size)
			}
			if tc.lieParts {
				f.parts++
			}
			got, err := c.Serve(context.Background(), f)
			if tc.damage {
				require.ErrorContains(t, err, "damaged in transit")
				assert.Empty(t, dataFiles(t, dir))
				return
			}
			require.NoError(t, err)
			defer got.Close()
			assert.Equal(t, data, readAll(t, got))
			ents, err := c.Entries()
			require.NoError(t, err)
			require.Len(t, ents, 1)
			assert.Equal(t, tc.verified, ents[0].Verified)
		})
	}
}
