package cufile

import (
	"path/filepath"
	"strings"
)

// Library reports one shared library for diagnostics (gdsload doctor).
type Library struct {
	// Name is the library's file name, such as "libcufile.so.0".
	Name string `json:"name"`
	// Found reports whether it loaded.
	Found bool `json:"found"`
	// Path is the file the dynamic loader mapped.
	Path string `json:"path,omitempty"`
	// Version is the library's own version where it reports one, else
	// the suffix of the file's real name, else "unknown". It is empty
	// only when the library was not found.
	Version string `json:"version,omitempty"`
	// Error says why it did not load.
	Error string `json:"error,omitempty"`
}

func missingLibrary(name string, err error) Library {
	return Library{Name: name, Error: err.Error()}
}

// ProbeLibraries loads libcufile, libcudart and libcuda the way the rest of
// the package does and reports each. Probing never fails.
func ProbeLibraries(cfg Config) []Library {
	var out []Library
	if c, err := OpenCuFile(cfg); err != nil {
		out = append(out, missingLibrary(specCuFile.name, err))
	} else {
		out = append(out, c.Library())
	}
	if r, err := OpenRuntime(cfg); err != nil {
		out = append(out, missingLibrary(specCUDART.name, err))
	} else {
		out = append(out, r.Library())
	}
	if d, err := OpenCUDADriver(cfg); err != nil {
		out = append(out, missingLibrary(specCUDA.name, err))
	} else {
		out = append(out, d.Library())
	}
	return out
}

// ProbeLibrary loads any other library by file name (for example
// "libnvidia-ml.so.1" or "libibverbs.so.1") through the dynamic loader's
// search and reports it; its version is the suffix of the real file name.
func ProbeLibrary(file string) Library {
	l, err := Config{}.open(libSpec{name: file, files: []string{file}})
	if err != nil {
		return missingLibrary(file, err)
	}
	return Library{Name: file, Found: true, Path: l.Path, Version: libraryVersion(l.Path, nil)}
}

// libraryVersion is what the library at path reports through ask (nil:
// nothing to ask), else the suffix of the file's real name, else
// "unknown". cuFile 1.4 lacks cuFileGetVersion and CUDA 11.8's runtime
// refuses cudaRuntimeGetVersion without a driver: both still get a version.
func libraryVersion(path string, ask func() (string, error)) string {
	if ask != nil {
		if v, err := ask(); err == nil && v != "" {
			return v
		}
	}
	if v := fileVersion(path); v != "" {
		return v
	}
	return "unknown"
}

// fileVersion returns what follows ".so." in the real name of path when
// that name says more than path's own ("libnvidia-ml.so.1", a link to
// "libnvidia-ml.so.580.65.06", gives "580.65.06"); "" otherwise, as a
// soname's single number is no version.
func fileVersion(path string) string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil || filepath.Base(real) == filepath.Base(path) {
		return ""
	}
	base := filepath.Base(real)
	if i := strings.Index(base, ".so."); i >= 0 {
		return base[i+4:]
	}
	return ""
}
