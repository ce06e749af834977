package cufile_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdsload/gdsload/cufile"
)

func TestMissingLibraryIsUnavailable(t *testing.T) {
	cfg := cufile.Config{
		CuFile: "/nonexistent/libcufile.so.0",
		CUDART: "/nonexistent/libcudart.so.13",
		CUDA:   "/nonexistent/libcuda.so.1",
	}
	_, err := cufile.OpenCuFile(cfg)
	if !errors.Is(err, cufile.ErrUnavailable) {
		t.Fatalf("OpenCuFile with a bad path: %v, want ErrUnavailable", err)
	}
	for _, want := range []string{"libcufile.so.0 not found", "/nonexistent/libcufile.so.0", "GDSLOAD_LIBCUFILE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := cufile.OpenRuntime(cfg); !errors.Is(err, cufile.ErrUnavailable) || !strings.Contains(err.Error(), "GDSLOAD_LIBCUDART") {
		t.Errorf("OpenRuntime with a bad path: %v", err)
	}
	if _, err := cufile.OpenCUDADriver(cfg); !errors.Is(err, cufile.ErrUnavailable) {
		t.Errorf("OpenCUDADriver with a bad path: %v", err)
	}
}

// A library file that exists but cannot be loaded is reported with the
// dynamic loader's reason, not as "not found".
func TestBrokenLibraryReportsWhy(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "libcudart.so.13")
	if err := os.WriteFile(bad, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := cufile.OpenRuntime(cufile.Config{CUDART: bad})
	if !errors.Is(err, cufile.ErrUnavailable) {
		t.Fatalf("OpenRuntime(%s): %v, want ErrUnavailable", bad, err)
	}
	msg := err.Error()
	for _, want := range []string{"libcudart.so failed to load", bad, "GDSLOAD_LIBCUDART"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if strings.Contains(msg, "not found") {
		t.Errorf("error %q calls an existing file missing", msg)
	}
}

func TestEnvironmentOverridesSearch(t *testing.T) {
	env := map[string]string{"GDSLOAD_LIBCUFILE": fake.CuFile}
	cfg := cufile.Config{Getenv: func(k string) string { return env[k] }}
	c, err := cufile.OpenCuFile(cfg)
	must(t, err)
	if got := c.Library().Path; got != fake.CuFile && got != fake.Object {
		t.Errorf("loaded %s, want the double at %s", got, fake.CuFile)
	}
	env["GDSLOAD_LIBCUFILE"] = filepath.Join(t.TempDir(), "missing.so")
	if _, err := cufile.OpenCuFile(cfg); !errors.Is(err, cufile.ErrUnavailable) || !strings.Contains(err.Error(), "missing.so") {
		t.Errorf("a set variable must be the only path tried: %v", err)
	}
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
	must(t, os.MkdirAll(rtDir, 0o755))
	must(t, os.MkdirAll(cfDir, 0o755))
	must(t, os.Symlink(fake.Object, filepath.Join(cfDir, "libcufile.so.0")))
	data, err := os.ReadFile(fake.Object)
	must(t, err)
	runtime = filepath.Join(rtDir, "libcudart.so.13")
	must(t, os.WriteFile(runtime, data, 0o755))
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
	if err != nil {
		t.Fatalf("libcufile.so.0 beside %s not found: %v", rt, err)
	}
	if v := c.Library().Version; v != "1160" {
		t.Errorf("loaded %s version %q, want the double's 1160 (the copy beside the runtime)", c.Library().Path, v)
	}
}

// A library without a version call (cuFile 1.4 lacks cuFileGetVersion)
// takes its version from its real file name, else "unknown": never "".
func TestVersionWithoutGetVersion(t *testing.T) {
	dir := t.TempDir()
	obj := buildDouble(t, dir, "libcufile.so.1.4.0", "-DFAKECUDA_NO_GET_VERSION")
	named := filepath.Join(dir, "named", "libcufile.so.0")
	must(t, os.MkdirAll(filepath.Dir(named), 0o755))
	must(t, os.Symlink(obj, named))
	bare := filepath.Join(dir, "bare", "libcufile.so.0")
	must(t, os.MkdirAll(filepath.Dir(bare), 0o755))
	data, err := os.ReadFile(obj)
	must(t, err)
	must(t, os.WriteFile(bare, data, 0o755)) // another file: mapped apart from obj
	for _, tc := range []struct{ path, want string }{{named, "1.4.0"}, {bare, "unknown"}} {
		c, err := cufile.OpenCuFile(cufile.Config{CuFile: tc.path})
		must(t, err)
		if got := c.Library().Version; got != tc.want {
			t.Errorf("%s: version %q, want %q", tc.path, got, tc.want)
		}
		var le *cufile.LoadError
		if _, err := c.Version(); !errors.As(err, &le) || le.Symbol != "cuFileGetVersion" {
			t.Errorf("%s: Version() = %v, want a LoadError naming cuFileGetVersion", tc.path, err)
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
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("building the double: %v\n%s", err, b)
	}
	return out
}

func TestMissingSymbolIsUnavailable(t *testing.T) {
	// libm is a real library without cuFile in it.
	_, err := cufile.OpenCuFile(cufile.Config{CuFile: "libm.so.6"})
	var le *cufile.LoadError
	if !errors.As(err, &le) || le.Symbol != "cuFileDriverOpen" || !errors.Is(err, cufile.ErrUnavailable) {
		t.Fatalf("loading libm as libcufile: %v, want a LoadError naming cuFileDriverOpen", err)
	}
	if !strings.Contains(err.Error(), "lacks cuFileDriverOpen") {
		t.Errorf("error %q does not name the missing symbol", err)
	}
}

func TestProbeLibraries(t *testing.T) {
	reset(t)
	libs := cufile.ProbeLibraries(fake.Config())
	want := map[string]string{"libcufile.so.0": "1160", "libcudart.so": "13.0", "libcuda.so.1": "13.0"}
	if len(libs) != len(want) {
		t.Fatalf("ProbeLibraries returned %d entries, want %d: %+v", len(libs), len(want), libs)
	}
	for _, l := range libs {
		if !l.Found || l.Path == "" || l.Version != want[l.Name] {
			t.Errorf("%+v: want found with version %q", l, want[l.Name])
		}
	}
	missing := cufile.ProbeLibrary("libgdsload-does-not-exist.so.7")
	if missing.Found || missing.Error == "" {
		t.Errorf("probe of a missing library: %+v", missing)
	}
	libc := cufile.ProbeLibrary("libc.so.6")
	if !libc.Found || libc.Path == "" {
		t.Errorf("probe of libc: %+v", libc)
	}
}
