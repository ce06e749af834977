package testenv

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// ramfs has no O_DIRECT at all: the probe says so and names it.
func TestDirectIORefusedOnRamfs(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("ramfs", dir, "ramfs", 0, ""); err != nil {
		t.Skipf("cannot mount ramfs here (needs root): %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	ok, reason := DirectIO(dir)
	require.False(t, ok)
	require.Contains(t, reason, "ramfs")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "the probe removes its file")
}

func TestDirectIOMissingDirectory(t *testing.T) {
	ok, reason := DirectIO(t.TempDir() + "/absent")
	require.False(t, ok)
	require.Contains(t, reason, "creating a probe file")
}

// This kernel either has each feature, or the probe says why not.
func TestKernelProbesSayWhy(t *testing.T) {
	for name, probe := range map[string]func(string) (bool, string){"openat2": CachedOpenat2, "cachestat": Cachestat} {
		ok, reason := probe(t.TempDir())
		t.Logf("%s: %v %s", name, ok, reason)
		require.Equal(t, ok, reason == "", name)
		ok, reason = probe(t.TempDir() + "/absent")
		require.False(t, ok, name)
		require.Contains(t, reason, "probe file", name)
	}
}

func TestIOURingProbeSaysWhy(t *testing.T) {
	ok, reason := IOURing()
	t.Logf("io_uring: %v %s", ok, reason)
	require.Equal(t, ok, reason == "", "IOURing() = %v, %q: a reason exactly when it fails", ok, reason)
}
