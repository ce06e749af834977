package cufile_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gdsload/gdsload/cufile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMissingLibraryIsUnavailable(t *testing.T) {
	cfg := cufile.Config{
		CuFile: "/nonexistent/libcufile.so.0",
		CUDART: "/nonexistent/libcudart.so.13",
		CUDA:   "/nonexistent/libcuda.so.1",
	}
	_, err := cufile.OpenCuFile(cfg)
	require.ErrorIs(t, err, cufile.ErrUnavailable, "OpenCuFile with a bad path: %v, want ErrUnavailable", err)
	for _, want := range []string{"libcufile.so.0 not found", "/nonexistent/libcufile.so.0", "GDSLOAD_LIBCUFILE"} {
		assert.ErrorContains(t, err, want, "error %q does not mention %q", err, want)
	}
	_, err = cufile.OpenRuntime(cfg)
	assert.ErrorIs(t, err, cufile.ErrUnavailable, "OpenRuntime with a bad path: %v", err)
	assert.ErrorContains(t, err, "GDSLOAD_LIBCUDART", "OpenRuntime with a bad path: %v", err)
	_, err = cufile.OpenCUDADriver(cfg)
	assert.ErrorIs(t, err, cufile.ErrUnavailable, "OpenCUDADriver with a bad path: %v", err)
}

// A library file that exists but cannot be loaded is reported with the
// dynamic loader's reason, not as "not found".
func TestBrokenLibraryReportsWhy(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "libcudart.so.13")
	require.NoError(t, os.WriteFile(bad, []byte("not an ELF file"), 0o644))
	_, err := cufile.OpenRuntime(cufile.Config{CUDART: bad})
	require.ErrorIs(t, err, cufile.ErrUnavailable, "OpenRuntime(%s): %v, want ErrUnavailable", bad, err)
	msg := err.Error()
	for _, want := range []string{"libcudart.so failed to load", bad, "GDSLOAD_LIBCUDART"} {
		assert.Contains(t, msg, want, "error %q does not mention %q", msg, want)
	}
	assert.NotContains(t, msg, "not found", "error %q calls an existing file missing", msg)
}

func TestEnvironmentOverridesSearch(t *testing.T) {
	env := map[string]string{"GDSLOAD_LIBCUFILE": fake.CuFile}
	cfg := cufile.Config{Getenv: func(k string) string { return env[k] }}
	c, err := cufile.OpenCuFile(cfg)
	require.NoError(t, err)
	got := c.Library().Path
	assert.Contains(t, []string{fake.CuFile, fake.Object}, got, "loaded %s, want the double at %s", got, fake.CuFile)
	env["GDSLOAD_LIBCUFILE"] = filepath.Join(t.TempDir(), "missing.so")
	_, err = cufile.OpenCuFile(cfg)
	assert.ErrorIs(t, err, cufile.ErrUnavailable, "a set variable must be the only path tried: %v", err)
	assert.ErrorContains(t, err, "missing.so", "a set variable must be the only path tried: %v", err)
}

// pipCUDA lays out a virtualenv the way pip's CUDA wheels do
// (site-packages/nvidia/cuda_runtime/lib, nvidia/cufile/lib) and returns
// its folder and the runtime's path. libcufile is a link to the test
// double; the runtime a copy of it, so that the dynamic loader maps it
// under the virtualenv's path.
func pipCUDA(t *testing.T) (venv, runtime string) {
	t.Helper()
	venv = t.TempDir()
	sp := filepath.Join(venv, "lib", "python3.12", "site-packages", "nvidia")
	rtDir, cfDir := filepath.Join(sp, "cuda_runtime", "lib"), filepath.Join(sp, "cufile", "lib")
	require.NoError(t, os.MkdirAll(rtDir, 0o755))
	require.NoError(t, os.MkdirAll(cfDir, 0o755))
	require.NoError(t, os.Symlink(fake.Object, filepath.Join(cfDir, "libcufile.so.0")))
	data, err := os.ReadFile(fake.Object)
	require.NoError(t, err)
	runtime = filepath.Join(rtDir, "libcudart.so.13")
	require.NoError(t, os.WriteFile(runtime, data, 0o755))
	return venv, runtime
}

// A pip-installed libcufile (nvidia/cufile/lib in a virtualenv's
// site-packages) is found without the variable and without Python, and is
// preferred to a system-wide copy (Debian's libcufile0, say) when the CUDA
// runtime in use is the virtualenv's: the two come from one CUDA release.
func TestSearchPrefersCuFileBesideRuntime(t *testing.T) {
	venv, rt := pipCUDA(t)
	env := map[string]string{"VIRTUAL_ENV": venv}
	c, err := cufile.OpenCuFile(cufile.Config{CUDART: rt, Getenv: func(k string) string { return env[k] }})
	require.NoError(t, err, "libcufile.so.0 beside %s not found: %v", rt, err)
	v := c.Library().Version
	assert.Equal(t, "1160", v, "loaded %s version %q, want the double's 1160 (the copy beside the runtime)", c.Library().Path, v)
}

// A library without a version call (cuFile 1.4 lacks cuFileGetVersion)
// takes its version from its real file name, else "unknown": never "".
func TestVersionWithoutGetVersion(t *testing.T) {
	dir := t.TempDir()
	obj := buildDouble(t, dir, "libcufile.so.1.4.0", "-DFAKECUDA_NO_GET_VERSION")
	named := filepath.Join(dir, "named", "libcufile.so.0")
	require.NoError(t, os.MkdirAll(filepath.Dir(named), 0o755))
	require.NoError(t, os.Symlink(obj, named))
	bare := filepath.Join(dir, "bare", "libcufile.so.0")
	require.NoError(t, os.MkdirAll(filepath.Dir(bare), 0o755))
	data, err := os.ReadFile(obj)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bare, data, 0o755)) // another file: mapped apart from obj
	for _, tc := range []struct{ path, want string }{{named, "1.4.0"}, {bare, "unknown"}} {
		c, err := cufile.OpenCuFile(cufile.Config{CuFile: tc.path})
		require.NoError(t, err)
		got := c.Library().Version
		assert.Equal(t, tc.want, got, "%s: version %q, want %q", tc.path, got, tc.want)
		var le *cufile.LoadError
		_, err = c.Version()
		if assert.ErrorAs(t, err, &le, "%s: Version() = %v, want a LoadError naming cuFileGetVersion", tc.path, err) {
			assert.Equal(t, "cuFileGetVersion", le.Symbol, "%s: Version() = %v, want a LoadError naming cuFileGetVersion", tc.path, err)
		}
	}
}

// buildDouble compiles the test double with extra flags into dir/name.
func buildDouble(t *testing.T, dir, name string, flags ...string) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	out := filepath.Join(dir, name)
	args := append([]string{"-shared", "-fPIC", "-O1", "-fvisibility=hidden"}, flags...)
	args = append(args, "-o", out, filepath.Join("..", "internal", "fakecuda", "csrc", "fakecuda.c"), "-lpthread")
	b, err := exec.Command(cc, args...).CombinedOutput()
	require.NoError(t, err, "building the double: %v\n%s", err, b)
	return out
}

func TestMissingSymbolIsUnavailable(t *testing.T) {
	// libm is a real library without cuFile in it.
	_, err := cufile.OpenCuFile(cufile.Config{CuFile: "libm.so.6"})
	var le *cufile.LoadError
	require.ErrorAs(t, err, &le, "loading libm as libcufile: %v, want a LoadError naming cuFileDriverOpen", err)
	require.Equal(t, "cuFileDriverOpen", le.Symbol, "loading libm as libcufile: %v, want a LoadError naming cuFileDriverOpen", err)
	require.ErrorIs(t, err, cufile.ErrUnavailable, "loading libm as libcufile: %v, want a LoadError naming cuFileDriverOpen", err)
	assert.ErrorContains(t, err, "lacks cuFileDriverOpen", "error %q does not name the missing symbol", err)
}

func TestProbeLibraries(t *testing.T) {
	reset(t)
	libs := cufile.ProbeLibraries(fake.Config())
	want := map[string]string{"libcufile.so.0": "1160", "libcudart.so": "13.0", "libcuda.so.1": "13.0"}
	require.Len(t, libs, len(want), "ProbeLibraries returned %d entries, want %d: %+v", len(libs), len(want), libs)
	for _, l := range libs {
		assert.True(t, l.Found, "%+v: want found with version %q", l, want[l.Name])
		assert.NotEmpty(t, l.Path, "%+v: want found with version %q", l, want[l.Name])
		assert.Equal(t, want[l.Name], l.Version, "%+v: want found with version %q", l, want[l.Name])
	}
	missing := cufile.ProbeLibrary("libgdsload-does-not-exist.so.7")
	assert.False(t, missing.Found, "probe of a missing library: %+v", missing)
	assert.NotEmpty(t, missing.Error, "probe of a missing library: %+v", missing)
	libc := cufile.ProbeLibrary("libc.so.6")
	assert.True(t, libc.Found, "probe of libc: %+v", libc)
	assert.NotEmpty(t, libc.Path, "probe of libc: %+v", libc)
}
