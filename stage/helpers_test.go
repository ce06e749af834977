package stage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gdsload/gdsload/internal/durable"
	"github.com/gdsload/gdsload/internal/uring"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction(uring.Reaper)) }

// writeFile writes n pseudo-random bytes to dir/rel and returns the path.
func writeFile(t *testing.T, dir, rel string, n int, seed uint64) string {
	t.Helper()
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	p := filepath.Join(dir, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

func fileCRC(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return fmt.Sprintf("%08x", crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

func fileSHA(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// stage runs Open, Expand, Plan and Run as the command does.
func stage(t *testing.T, dst string, opts Options, sources ...string) (*Result, error) {
	t.Helper()
	entries, err := Expand(context.Background(), sources, opts)
	if err != nil {
		return nil, err
	}
	return stageEntries(t, dst, opts, entries)
}

func stageEntries(t *testing.T, dst string, opts Options, entries []Entry) (*Result, error) {
	t.Helper()
	s, err := Open(dst, opts)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	p, err := s.Plan(context.Background(), entries)
	if err != nil {
		return nil, err
	}
	return s.Run(context.Background(), p)
}

// identity is what a file that was left untouched keeps.
type identity struct {
	ino   uint64
	mtime time.Time
}

func identify(t *testing.T, p string) identity {
	t.Helper()
	st, err := os.Stat(p)
	require.NoError(t, err)
	return identity{ino: st.Sys().(*syscall.Stat_t).Ino, mtime: st.ModTime()}
}

// requireClean fails when dir holds a temporary file anywhere.
func requireClean(t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && durable.IsTempName(fi.Name()) {
			t.Errorf("temporary file %s left behind", p)
		}
		return err
	}))
}

// requireSame fails unless every source file has an identical copy at the
// same relative path under dst.
func requireSame(t *testing.T, src, dst string, rels ...string) {
	t.Helper()
	for _, rel := range rels {
		require.Equal(t, fileSHA(t, filepath.Join(src, rel)), fileSHA(t, filepath.Join(dst, rel)), rel)
	}
}

func byName(res *Result) map[string]FileResult {
	m := map[string]FileResult{}
	for _, f := range res.Entries {
		m[f.Name] = f
	}
	return m
}
