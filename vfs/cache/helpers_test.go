package cache

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/vfs"
)

// content is the deterministic bytes of a test file: name and version
// pick the seed.
func content(name string, version, size int) []byte {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s@%d", name, version)))
	r := rand.New(rand.NewChaCha8(h))
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// memFile is a remote file held in memory, its identity the ETag an
// object store would give it (the MD5 of its bytes, quoted). Reads
// counts the bytes read from it; stallAfter, when set, is called once
// the file has served that many bytes, and then the read blocks.
type memFile struct {
	name  string
	data  []byte
	etag  string
	reads *atomic.Int64

	stallAfter int64
	onStall    func()
}

func newMemFile(name string, data []byte, reads *atomic.Int64) *memFile {
	sum := md5.Sum(data)
	return &memFile{name: name, data: data, etag: `"` + hex.EncodeToString(sum[:]) + `"`, reads: reads}
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if f.onStall != nil && off >= f.stallAfter {
		f.onStall()
		select {} // a process stuck mid-download, until killed
	}
	if off >= int64(len(f.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if f.reads != nil {
		f.reads.Add(int64(n))
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Name() string       { return f.name }
func (f *memFile) Size() int64        { return int64(len(f.data)) }
func (f *memFile) ModTime() time.Time { return time.Unix(1700000000, 0) }
func (f *memFile) Identity() string   { return "etag " + f.etag }
func (f *memFile) ETag() string       { return f.etag }
func (f *memFile) Close() error       { return nil }

var _ vfs.File = (*memFile)(nil)

// readAll reads f whole and returns its bytes.
func readAll(t testing.TB, f vfs.File) []byte {
	t.Helper()
	b, err := io.ReadAll(vfs.NewReader(context.Background(), f))
	require.NoError(t, err)
	return b
}

// serveBytes serves f through c and returns what the served file reads.
func serveBytes(t testing.TB, c *Cache, f vfs.File) []byte {
	t.Helper()
	got, err := c.Serve(context.Background(), f)
	require.NoError(t, err)
	defer got.Close()
	return readAll(t, got)
}

// held is the bytes the folder's copies and downloads take.
func held(t testing.TB, c *Cache) int64 {
	t.Helper()
	n, err := c.usage()
	require.NoError(t, err)
	return n
}

// tmpFiles lists the downloads under way or left behind.
func tmpFiles(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "tmp"))
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// dataFiles lists the copies in the folder.
func dataFiles(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "entries"))
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".data") {
			out = append(out, filepath.Join(dir, "entries", e.Name()))
		}
	}
	return out
}
