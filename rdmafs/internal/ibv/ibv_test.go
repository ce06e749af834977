package ibv

import (
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNotLinked: the package (and so every binary importing it) does not
// link libibverbs or librdmacm; they are loaded at run time.
func TestNotLinked(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	f, err := elf.Open(exe)
	require.NoError(t, err)
	defer f.Close()
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	for _, l := range libs {
		assert.NotContains(t, l, "ibverbs", "%s links %s", exe, l)
		assert.NotContains(t, l, "rdmacm", "%s links %s", exe, l)
	}
}

// TestLoad loads rdma-core as installed here: either it loads and lists
// devices (none is fine), or it fails with ErrMissing naming the library.
// Pointing the override at a missing file fails clearly either way.
func TestLoad(t *testing.T) {
	l, err := Load()
	if err != nil {
		require.ErrorIs(t, err, ErrMissing, "Load: %v, want ErrMissing naming the library", err)
		require.ErrorContains(t, err, "lib", "Load: %v, want ErrMissing naming the library", err)
		t.Logf("rdma-core not usable here: %v", err)
	} else {
		devs, err := l.Devices()
		if errors.Is(err, ErrNoDevices) {
			t.Logf("no RDMA support in this kernel: %v", err)
		} else {
			require.NoError(t, err, "Devices")
		}
		t.Logf("rdma-core %q (%s, IBVERBS_1.%d), %d devices", l.Version(), l.VerbsPath, l.ABI, len(devs))
		assert.GreaterOrEqual(t, l.ABI, 1, "ABI %d: IBVERBS_1.1 must be there", l.ABI)
		assert.EqualValues(t, (l.ABI >= 12), l.HasDmaBuf(), "dma-buf %v with IBVERBS_1.%d", l.HasDmaBuf(), l.ABI)
		for _, d := range devs {
			assert.NotEqualValues(t, "", d.Name, "device without a name: %+v", d)
		}
	}
	t.Setenv(VerbsEnv, filepath.Join(t.TempDir(), "libibverbs.so.1"))
	_, err = Load()
	assert.ErrorIs(t, err, ErrMissing, "Load with a missing override: %v", err)
	assert.ErrorContains(t, err, VerbsEnv, "Load with a missing override: %v", err)
}

func TestPackageVersion(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0", "44.0"},
		{"/usr/lib64/libibverbs.so.1.14.50.0", "50.0"},
		{"/opt/libibverbs.so.1.1.17.2", "17.2"},
		{"/usr/lib/libibverbs.so.1", ""},
		{"/usr/lib/libibverbs.so", ""},
		{"libibverbs.so.1.14.58.0.rc1", "58.0.rc1"},
	} {
		got := packageVersion(tc.path)
		assert.Equal(t, tc.want, got, "packageVersion(%q) = %q, want %q", tc.path, got, tc.want)
	}
}
