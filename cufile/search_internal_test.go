package cufile

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func touch(t *testing.T, p string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, nil, 0o644))
	return p
}

// The runtime is searched newest version first, each version through the
// dynamic loader and then the CUDA homes and site-packages; libcufile
// starts with the copies beside the runtime in use.
func TestCandidatesOrder(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "cuda")
	venv := filepath.Join(root, "venv")
	sp := filepath.Join(venv, "lib", "python3.11", "site-packages", "nvidia")
	homeRT := touch(t, filepath.Join(home, "lib64", "libcudart.so.12"))
	pipRT := touch(t, filepath.Join(sp, "cuda_runtime", "lib", "libcudart.so.13"))
	pipCF := touch(t, filepath.Join(sp, "cufile", "lib", "libcufile.so.0"))
	homeCF := touch(t, filepath.Join(home, "lib64", "libcufile.so.0"))
	env := map[string]string{"CUDA_HOME": home, "VIRTUAL_ENV": venv}
	cfg := Config{Getenv: func(k string) string { return env[k] }}

	// Only the bare names and this test's files: the machine's own CUDA
	// folders may add others.
	ours := func(c []string) []string {
		return slices.DeleteFunc(c, func(p string) bool { return filepath.IsAbs(p) && !strings.HasPrefix(p, root) })
	}
	got := ours(cfg.candidates(specCUDART))
	want := []string{"libcudart.so.13", pipRT, "libcudart.so.12", homeRT, "libcudart.so.11.0", "libcudart.so.11"}
	assert.Equal(t, want, got, "runtime candidates\n got %q\nwant %q", got, want)

	for _, tc := range []struct {
		runtime string
		first   string
	}{
		{pipRT, pipCF},   // pip's runtime: pip's cufile wheel, a sibling folder
		{homeRT, homeCF}, // a toolkit's runtime: its own lib64
	} {
		spec := specCuFile
		spec.first = besideRuntime(tc.runtime, "libcufile.so.0")
		got := ours(cfg.candidates(spec))
		if assert.NotEmpty(t, got, "runtime %s: libcufile candidates %q, want %s first", tc.runtime, got, tc.first) {
			assert.Equal(t, tc.first, got[0], "runtime %s: libcufile candidates %q, want %s first", tc.runtime, got, tc.first)
		}
		assert.Contains(t, got, "libcufile.so.0", "runtime %s: candidates %q skip the dynamic loader's search", tc.runtime, got)
	}
	got = besideRuntime("", "libcufile.so.0")
	assert.Nil(t, got, "no runtime: %q", got)
	env["GDSLOAD_LIBCUFILE"] = "/x/libcufile.so.0"
	got = cfg.candidates(specCuFile)
	assert.Equal(t, []string{"/x/libcufile.so.0"}, got, "with GDSLOAD_LIBCUFILE set: %q", got)
}

func TestFileVersion(t *testing.T) {
	dir := t.TempDir()
	real := touch(t, filepath.Join(dir, "libcufile.so.1.4.0"))
	link := filepath.Join(dir, "libcufile.so.0")
	require.NoError(t, os.Symlink(filepath.Base(real), link))
	plain := touch(t, filepath.Join(dir, "other", "libcufile.so.0"))
	for _, tc := range []struct{ path, want string }{
		{link, "1.4.0"}, {real, ""}, {plain, ""}, {filepath.Join(dir, "missing.so.1"), ""},
	} {
		got := fileVersion(tc.path)
		assert.Equal(t, tc.want, got, "fileVersion(%s) = %q, want %q", tc.path, got, tc.want)
	}
	got := libraryVersion(plain, nil)
	assert.Equal(t, "unknown", got, "libraryVersion without a version = %q, want unknown", got)
}
