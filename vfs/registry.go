package vfs

import (
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Backend is a URL scheme that every Mux made by New serves, registered
// by the package that implements it when a program imports that package,
// as database/sql drivers register themselves: package vfs/s3fs registers
// s3:// and package vfs/rdmafsfs registers rdmafs://. A program that
// imports neither links neither client.
type Backend struct {
	// Scheme makes the Scheme a new Mux serves the URLs through, unless an
	// option of New replaces it (WithScheme); each Mux gets its own.
	Scheme func() Scheme
	// Parse, if set, checks a URL of the scheme as its client would and
	// returns its authority, in the form that names one FS (a default
	// port filled in, say), and its path: unescaped, slash-separated,
	// without leading or trailing slashes. Without it, Parse takes the
	// URL's host and path as they are.
	Parse func(raw string) (authority, path string, err error)
}

var (
	backendsMu sync.RWMutex
	backends   = map[string]Backend{}
)

// Register makes New serve name:// URLs through b. It is meant for the
// init function of the package implementing the scheme, and panics when
// name is not a lower case URL scheme, is "file", is registered already,
// or b has no Scheme.
func Register(name string, b Backend) {
	if !schemeName.MatchString(name) || name == "file" || b.Scheme == nil {
		panic(fmt.Sprintf("vfs: Register %q: want a lower case URL scheme other than file, and a Backend with a Scheme", name))
	}
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if _, dup := backends[name]; dup {
		panic(fmt.Sprintf("vfs: Register called twice for scheme %q", name))
	}
	backends[name] = b
}

// Registered returns the names of the schemes registered with Register,
// sorted.
func Registered() []string {
	backendsMu.RLock()
	defer backendsMu.RUnlock()
	return slices.Sorted(maps.Keys(backends))
}

// backend returns the Backend registered for scheme.
func backend(scheme string) (Backend, bool) {
	backendsMu.RLock()
	defer backendsMu.RUnlock()
	b, ok := backends[scheme]
	return b, ok
}

// registeredSchemes makes one Scheme of each registered Backend.
func registeredSchemes() map[string]Scheme {
	backendsMu.RLock()
	defer backendsMu.RUnlock()
	out := make(map[string]Scheme, len(backends))
	for name, b := range backends {
		out[name] = b.Scheme()
	}
	return out
}
