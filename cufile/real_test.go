package cufile_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdsload/gdsload/cufile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// realLibrary loads a real NVIDIA library through the dynamic loader's
// search (Debian's libcufile0 and libcudart11.0 in non-free run without a
// GPU up to the missing driver), skipping the test where it is absent.
func realLibrary(t *testing.T, name string) string {
	t.Helper()
	l := cufile.ProbeLibrary(name)
	if !l.Found {
		cufile.SkipOrFail(t, "%s not installed (Debian non-free: libcufile0, libcudart11.0): %s", name, l.Error)
	}
	if real, err := filepath.EvalSymlinks(l.Path); err == nil && strings.Contains(real, "fakecuda") {
		cufile.SkipOrFail(t, "%s is the test double here (%s)", name, real)
	}
	return l.Path
}

// Every symbol gdsload requires is in the real libcufile.so.0; optional
// ones it lacks (cuFile 1.4 has no cuFileGetVersion) leave the version to
// the file name, never "". Without a GPU, the driver open fails with the
// real cause named, nothing on standard output and no cufile.log in the
// current folder. The driver open runs in a child process that loads no
// CUDA double: the double's soname is libcuda.so.1, so in this process the
// real library would find it.
func TestRealCuFile(t *testing.T) {
	path := realLibrary(t, "libcufile.so.0")
	if os.Getenv("GDSLOAD_TEST_HELPER") != "nocuda" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestRealCuFile$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "GDSLOAD_TEST_HELPER=nocuda", "LD_LIBRARY_PATH=", "LD_PRELOAD=")
		out, err := cmd.CombinedOutput()
		t.Logf("child process:\n%s", out)
		require.NoError(t, err, "child process without a CUDA double: %v", err)
		require.Contains(t, string(out), "--- PASS: TestRealCuFile", "child process without a CUDA double: %v", err)
		return
	}
	c, err := cufile.OpenCuFile(cufile.Config{CuFile: path})
	require.NoError(t, err, "the real %s: %v", path, err)
	lib := c.Library()
	assert.NotEmpty(t, lib.Version, "%s: empty version", path)
	if _, err := c.Version(); err != nil {
		var le *cufile.LoadError
		if assert.ErrorAs(t, err, &le, "Version(): %v, want a LoadError naming cuFileGetVersion", err) {
			assert.Equal(t, "cuFileGetVersion", le.Symbol, "Version(): %v, want a LoadError naming cuFileGetVersion", err)
		}
	}
	t.Logf("%s: version %s", lib.Path, lib.Version)

	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("CUFILE_LOGFILE_PATH", "")
	log := filepath.Join(t.TempDir(), "cufile.log")
	c, err = cufile.OpenCuFile(cufile.Config{CuFile: path, LogFile: log})
	require.NoError(t, err)
	var openErr error
	out := captureStdout(t, func() { openErr = c.Driver().Open() })
	if openErr == nil {
		_, err := os.Stat("/proc/driver/nvidia/version")
		require.NoError(t, err, "the driver opened without an NVIDIA driver: the child loaded a CUDA double")
		t.Log("the driver opened: this machine has a GPU")
		require.NoError(t, c.Driver().Close())
	} else {
		var oe *cufile.OpError
		if assert.ErrorAs(t, openErr, &oe, "Open: %v, want an *OpError with the cause named", openErr) {
			assert.NotEmpty(t, oe.Cause, "Open: %v, want an *OpError with the cause named", openErr)
		}
		t.Logf("Open: %v", openErr)
	}
	assert.Empty(t, out, "libcufile's lines reached standard output: %q", out)
	left, _ := os.ReadDir(dir)
	assert.Empty(t, left, "the current folder holds %v after a driver open", left)
}

// The real libcudart loads; without a driver it reports no GPU as
// unavailable, and its version comes from the file name (CUDA 11.8 refuses
// cudaRuntimeGetVersion without a driver).
func TestRealRuntime(t *testing.T) {
	path := realLibrary(t, "libcudart.so.11.0")
	rt, err := cufile.OpenRuntime(cufile.Config{CUDART: path})
	require.NoError(t, err, "the real %s: %v", path, err)
	v := rt.Library().Version
	assert.NotEmpty(t, v, "%s: version %q", path, v)
	assert.NotEqual(t, "unknown", v, "%s: version %q", path, v)
	if n, err := rt.DeviceCount(); err != nil {
		assert.ErrorIs(t, err, cufile.ErrUnavailable, "DeviceCount: %d, %v; want a count or ErrUnavailable", n, err)
	}
}
