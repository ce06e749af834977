package durable_test

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/durable"
	"github.com/gdsload/gdsload/internal/fileops"
	"github.com/gdsload/gdsload/internal/fileops/errorfs"
	"github.com/gdsload/gdsload/internal/testenv"
	"github.com/gdsload/gdsload/loader"
)

func TestIsTempName(t *testing.T) {
	for name, want := range map[string]bool{
		".a.bin.gdsload-abc123":  true,
		".x.gdsload-000000":      true,
		"a.bin.gdsload-abc123":   false, // no leading dot
		".a.bin.gdsload-abc12":   false,
		".a.bin.gdsload-ABC123":  false,
		".gdsload-abc123":        false, // no final name
		".a.bin.gdsload-abc1234": false,
		".bashrc":                false,
	} {
		require.Equal(t, want, durable.IsTempName(name), name)
	}
	final := filepath.Join(t.TempDir(), "model.safetensors")
	tmp, err := durable.TempName(final)
	require.NoError(t, err)
	require.True(t, durable.IsTempName(filepath.Base(tmp)), tmp)
	require.Equal(t, filepath.Dir(final), filepath.Dir(tmp))
}

// A direct write the file system refuses although it is aligned (EINVAL)
// switches the file to buffered writes, says why, and loses no byte; an
// EINVAL for a write that breaks the alignment rules is an error. EINTR
// and short writes are retried.
func TestAtomicFileDirectWriteRefused(t *testing.T) {
	dir := t.TempDir()
	testenv.NeedDirectIO(t, dir)
	var hook errorfs.Hook = func(*errorfs.Op) error { return nil }
	fsys := errorfs.Wrap(fileops.Default(), func(op *errorfs.Op) error { return hook(op) })
	a, err := durable.CreateAtomicFS(fsys, filepath.Join(dir, "out.bin"), 3*4096, durable.DirectAuto)
	require.NoError(t, err)
	if !a.Direct() {
		a.Abort()
		require.Failf(t, "no O_DIRECT", "%s takes O_DIRECT writes, but the atomic file does not: %s", dir, a.DirectReason())
	}
	data := loader.AlignedBuffer(3 * 4096)
	for i := range data {
		data[i] = byte(i * 7)
	}
	calls := 0
	hook = func(op *errorfs.Op) error {
		if op.Kind != errorfs.OpPwrite {
			return nil
		}
		calls++
		switch calls {
		case 1:
			return syscall.EINTR
		case 2:
			return syscall.EINVAL // refused while aligned: fall back
		case 3:
			op.P = op.P[:100] // short: retried
		}
		return nil
	}
	require.NoError(t, a.WriteAt(data[:8192], 0))
	require.False(t, a.Direct())
	require.Contains(t, a.DirectReason(), "O_DIRECT write refused")
	require.NoError(t, a.WriteAt(data[8192:], 8192))
	require.NoError(t, a.Sync())
	require.NoError(t, a.Publish())
	got, err := os.ReadFile(filepath.Join(dir, "out.bin"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, got))

	// Misaligned memory on a direct file: EINVAL is the caller's error.
	b, err := durable.CreateAtomicFS(fsys, filepath.Join(dir, "bad.bin"), 8192, durable.DirectAuto)
	require.NoError(t, err)
	defer b.Abort()
	if b.Direct() {
		hook = func(op *errorfs.Op) error {
			if op.Kind == errorfs.OpPwrite {
				return syscall.EINVAL
			}
			return nil
		}
		err := b.WriteAt(data[1:4097], 0)
		require.ErrorContains(t, err, "writing 4096 bytes at offset 0")
		require.True(t, b.Direct(), "a misaligned write is not the file system's refusal")
	}
}

// durable.DirectMode takes loader.DirectMode's values by conversion.
func TestDirectModesMatchLoader(t *testing.T) {
	require.Equal(t, durable.DirectAuto, durable.DirectMode(loader.DirectAuto))
	require.Equal(t, durable.DirectOn, durable.DirectMode(loader.DirectOn))
	require.Equal(t, durable.DirectOff, durable.DirectMode(loader.DirectOff))
}
