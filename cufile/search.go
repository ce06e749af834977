package cufile

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/gdsload/gdsload/internal/dl"
)

// Config says where to find the libraries. The zero value searches the
// standard places and honours the environment variables.
type Config struct {
	// CuFile, CUDART and CUDA are explicit paths of libcufile, libcudart
	// and libcuda; when set, nothing else is tried.
	CuFile, CUDART, CUDA string
	// LogFile is where libcufile writes its log (cufile.log), which it
	// otherwise creates in the current folder. The first Driver.Open sets
	// CUFILE_LOGFILE_PATH to it unless the environment already sets that
	// variable. Empty means cufile.log in the user's cache folder
	// ($XDG_CACHE_HOME/gdsload or ~/.cache/gdsload), or no log at all
	// where there is none.
	LogFile string
	// Root, when set, is prefixed to the system files the diagnosis of a
	// failed driver open reads (/proc/driver/nvidia/version,
	// /proc/driver/nvidia-fs, /etc/cufile.json, /run/udev). Tests point
	// it at a made-up tree; "" means the real ones.
	Root string
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

func (c Config) getenv(k string) string {
	if c.Getenv != nil {
		return c.Getenv(k)
	}
	return os.Getenv(k)
}

// libSpec describes one library and how to look for it.
type libSpec struct {
	name     string   // for reports: "libcufile.so.0"
	files    []string // file names, best (newest) first
	env      string   // override variable, "" for none
	explicit string   // Config's explicit path, "" for none
	first    []string // paths tried before the search: beside the CUDA runtime in use
}

var (
	specCuFile = libSpec{name: "libcufile.so.0", files: []string{"libcufile.so.0"}, env: "GDSLOAD_LIBCUFILE"}
	specCUDART = libSpec{
		name:  "libcudart.so",
		files: []string{"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so.11"},
		env:   "GDSLOAD_LIBCUDART",
	}
	specCUDA = libSpec{name: "libcuda.so.1", files: []string{"libcuda.so.1"}, env: "GDSLOAD_LIBCUDA"}
)

// lacks is the error for the library at path without the function sym.
func (s libSpec) lacks(path, sym string) *LoadError {
	return &LoadError{Library: s.name, Env: s.env, Tried: []string{path}, Symbol: sym}
}

// candidates lists the paths to try for spec, best first. An explicit path
// or a set environment variable is the only candidate. Otherwise the paths
// in spec.first come first; then, for each file name from the newest
// version down, the dynamic loader's own search (LD_LIBRARY_PATH,
// ld.so.cache) and the folders of searchDirs. A newer CUDA runtime in a
// virtualenv so wins over an older one installed system-wide.
func (c Config) candidates(spec libSpec) []string {
	if spec.explicit != "" {
		return []string{spec.explicit}
	}
	if spec.env != "" {
		if p := c.getenv(spec.env); p != "" {
			return []string{p}
		}
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range spec.first {
		add(p)
	}
	dirs := c.searchDirs()
	for _, f := range spec.files {
		add(f) // the dynamic loader's own search
		for _, d := range dirs {
			p := filepath.Join(d, f)
			if _, err := os.Stat(p); err == nil {
				add(p)
			}
		}
	}
	return out
}

// searchDirs are the folders searched after the dynamic loader: the CUDA
// homes, then the nvidia/*/lib folders of Python site-packages.
func (c Config) searchDirs() []string {
	var dirs []string
	if h := c.getenv("CUDA_HOME"); h != "" {
		dirs = append(dirs, filepath.Join(h, "lib64"), filepath.Join(h, "lib"))
	}
	if h := c.getenv("CUDA_PATH"); h != "" {
		dirs = append(dirs, filepath.Join(h, "lib64"))
	}
	dirs = append(dirs, "/usr/local/cuda/lib64")
	for _, sp := range c.sitePackages() {
		if m, _ := filepath.Glob(filepath.Join(sp, "nvidia", "*", "lib")); len(m) > 0 {
			dirs = append(dirs, m...)
		}
	}
	return dirs
}

// besideRuntime lists the copies of file that belong to the same CUDA
// installation as the runtime library at rt: in rt's own folder, and, when
// rt comes from a pip wheel (site-packages/nvidia/PKG/lib), in the other
// nvidia/*/lib folders of that site-packages. Only existing files are
// listed.
func besideRuntime(rt, file string) []string {
	if rt == "" {
		return nil
	}
	dir := filepath.Dir(rt)
	var out []string
	if p := filepath.Join(dir, file); exists(p) {
		out = append(out, p)
	}
	// .../site-packages/nvidia/PKG/lib/libcudart.so.N
	if filepath.Base(dir) == "lib" && filepath.Base(filepath.Dir(filepath.Dir(dir))) == "nvidia" {
		m, _ := filepath.Glob(filepath.Join(filepath.Dir(filepath.Dir(dir)), "*", "lib", file))
		for _, p := range m {
			if filepath.Dir(p) != dir {
				out = append(out, p)
			}
		}
	}
	return out
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// sitePackages lists Python package folders where pip may have put CUDA
// wheels (nvidia-cufile, nvidia-cuda-runtime), without running Python.
func (c Config) sitePackages() []string {
	var patterns []string
	for _, prefix := range []string{"/usr/lib", "/usr/local/lib", "/opt/conda/lib"} {
		patterns = append(patterns,
			filepath.Join(prefix, "python3*", "site-packages"),
			filepath.Join(prefix, "python3*", "dist-packages"))
	}
	for _, v := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := c.getenv(v); p != "" {
			patterns = append(patterns, filepath.Join(p, "lib", "python3*", "site-packages"))
		}
	}
	if h := c.getenv("HOME"); h != "" {
		patterns = append(patterns, filepath.Join(h, ".local", "lib", "python3*", "site-packages"))
	}
	var out []string
	for _, p := range patterns {
		m, _ := filepath.Glob(p)
		out = append(out, m...)
	}
	return out
}

// open loads the first candidate of spec that dlopen accepts. When none
// does, the error is the first candidate that exists but failed to load (a
// missing dependency, a wrong architecture), which says more than "no such
// file" for the others.
func (c Config) open(spec libSpec) (*dl.Lib, error) {
	tried := c.candidates(spec)
	var failed error
	for _, p := range tried {
		l, err := dl.Open(p)
		if err == nil {
			return l, nil
		}
		if failed == nil && !isMissing(p, err) {
			failed = err
		}
	}
	return nil, &LoadError{Library: spec.name, Env: spec.env, Tried: tried, Err: failed}
}

// isMissing tells whether dlopen's err says that path itself does not
// exist, as opposed to a file that exists but cannot be loaded.
func isMissing(path string, err error) bool {
	return strings.HasPrefix(err.Error(), path+": cannot open shared object file")
}
