package rdmafs

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// DefaultPort is the port used when an rdmafs URL names none.
const DefaultPort = 7420

// URL is a parsed rdmafs://host:port/path address.
type URL struct {
	Addr string // host:port, port defaulted to DefaultPort
	Path string // file or directory name relative to the export root; "" for the root
}

// String formats u back as an rdmafs URL that ParseURL reads as u: bytes
// of the path that a URL cannot hold as they are ('%', '?', '#', spaces,
// control bytes) are percent-escaped.
func (u URL) String() string {
	return (&url.URL{Scheme: "rdmafs", Host: u.Addr, Path: "/" + u.Path}).String()
}

// ParseURL parses "rdmafs://host[:port]/path". IPv6 hosts go in brackets.
// The path is relative to the server's export root; percent-escapes are
// decoded.
func ParseURL(s string) (URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return URL{}, fmt.Errorf("parse rdmafs URL %q: %w", s, err)
	}
	if u.Scheme != "rdmafs" {
		return URL{}, fmt.Errorf("parse rdmafs URL %q: scheme is %q, want rdmafs://host:port/path", s, u.Scheme)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return URL{}, fmt.Errorf("parse rdmafs URL %q: user info, query and fragment are not supported (pass the token as a client option or in GDSLOAD_TOKEN; write '?' in a name as %%3F and '#' as %%23)", s)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return URL{}, fmt.Errorf("parse rdmafs URL %q: no host", s)
	}
	if strings.Contains(host, ":") && net.ParseIP(host) == nil {
		return URL{}, fmt.Errorf("parse rdmafs URL %q: bad host %q (IPv6 addresses go in brackets: rdmafs://[::1]:7420/path)", s, host)
	}
	if port == "" {
		port = strconv.Itoa(DefaultPort)
	} else if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return URL{}, fmt.Errorf("parse rdmafs URL %q: bad port %q", s, port)
	}
	return URL{Addr: net.JoinHostPort(host, port), Path: strings.TrimPrefix(u.Path, "/")}, nil
}
