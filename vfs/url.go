package vfs

import (
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"
)

// Location is a parsed URL or local path.
type Location struct {
	// Scheme is "" for a local path (file:// URLs included), else the
	// URL's scheme, lower case.
	Scheme string
	// Authority is what the scheme resolves to an FS: host:port for
	// rdmafs (the port defaulted where vfs/rdmafsfs is registered), a
	// bucket for s3; "" for a local path.
	Authority string
	// Path is the local path as given, or the name within the FS:
	// unescaped, slash-separated, without a leading slash ("" for the
	// root).
	Path string
}

// IsURL reports whether s is written as a URL (scheme://...) rather than
// a local path.
func IsURL(s string) bool { return strings.Contains(s, "://") }

// Parse reads a local path, a file:// URL (file:///abs/path, or with the
// authority localhost) or scheme://authority/path. URLs of a registered
// scheme whose Backend has a Parse are checked by it (rdmafs:// as
// rdmafs.ParseURL checks them: a host, a valid port, no user, query or
// fragment); percent-escapes in paths are decoded.
func Parse(raw string) (Location, error) {
	if !IsURL(raw) {
		if raw == "" {
			return Location{}, fmt.Errorf("empty path")
		}
		return Location{Path: raw}, nil
	}
	scheme := strings.ToLower(raw[:strings.Index(raw, "://")])
	if scheme == "" {
		return Location{}, fmt.Errorf("%q has no scheme before ://", raw)
	}
	if b, ok := backend(scheme); ok && b.Parse != nil {
		authority, p, err := b.Parse(raw)
		if err != nil {
			return Location{}, err
		}
		return Location{Scheme: scheme, Authority: authority, Path: strings.Trim(p, "/")}, nil
	}
	if !schemeName.MatchString(scheme) {
		return Location{}, fmt.Errorf("%q: %q is not a URL scheme", raw, scheme)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Location{}, fmt.Errorf("parse URL %q: %w", raw, err)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return Location{}, fmt.Errorf("URL %q: user info, query and fragment are not supported (write '?' in a name as %%3F and '#' as %%23)", raw)
	}
	if scheme == "file" {
		if u.Host != "" && u.Host != "localhost" {
			return Location{}, fmt.Errorf("URL %q names host %q: file:// URLs name local files (file:///path)", raw, u.Host)
		}
		if u.Path == "" {
			return Location{}, fmt.Errorf("URL %q names no path", raw)
		}
		return Location{Path: filepath.FromSlash(u.Path)}, nil
	}
	if u.Host == "" {
		return Location{}, fmt.Errorf("URL %q names no %s authority (%s://AUTHORITY/PATH)", raw, scheme, scheme)
	}
	return Location{Scheme: scheme, Authority: u.Host, Path: strings.Trim(u.Path, "/")}, nil
}

// IsLocal reports whether l is a local path.
func (l Location) IsLocal() bool { return l.Scheme == "" }

// String writes l back as Parse reads it: a local path as it is, a URL
// with the bytes of its path that a URL cannot hold percent-escaped.
func (l Location) String() string {
	if l.IsLocal() {
		return l.Path
	}
	return (&url.URL{Scheme: l.Scheme, Host: l.Authority, Path: "/" + l.Path}).String()
}

// Join returns the location of rel (slash-separated) below l.
func (l Location) Join(rel string) Location {
	if l.IsLocal() {
		l.Path = filepath.Join(l.Path, filepath.FromSlash(rel))
		return l
	}
	l.Path = strings.TrimPrefix(path.Join(l.Path, rel), "/")
	if l.Path == "." {
		l.Path = ""
	}
	return l
}

// Dir returns the location of the directory holding l.
func (l Location) Dir() Location {
	if l.IsLocal() {
		l.Path = filepath.Dir(l.Path)
		return l
	}
	l.Path = path.Dir(l.Path)
	if l.Path == "." || l.Path == "/" {
		l.Path = ""
	}
	return l
}

// Base is the last element of l's path.
func (l Location) Base() string {
	if l.IsLocal() {
		return filepath.Base(l.Path)
	}
	return path.Base("/" + l.Path)
}

// Join returns the URL or path of rel (slash-separated) below base; a base
// that does not parse is joined as a local path.
func Join(base, rel string) string {
	l, err := Parse(base)
	if err != nil {
		return filepath.Join(base, filepath.FromSlash(rel))
	}
	return l.Join(rel).String()
}

// Dir returns the URL or path of the directory holding name.
func Dir(name string) string {
	l, err := Parse(name)
	if err != nil {
		return filepath.Dir(name)
	}
	return l.Dir().String()
}

// Base returns the last element of name's path.
func Base(name string) string {
	l, err := Parse(name)
	if err != nil {
		return filepath.Base(name)
	}
	return l.Base()
}
