package rdmafs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Remote names may hold any byte a file name can: URL.String must escape
// them so that ParseURL gives the same URL back (stage, load and iterate
// build URLs for listed files and parse them again).
func TestURLRoundTrip(t *testing.T) {
	for _, name := range []string{
		"a/b.bin", "", "100%.bin", "what?.tar", "#1.tar", "a b/c d", "dir/../x",
		"/leading", "a//b", "ü.npy", "semi;colon", "x%2Fy", "\x00nul", "\xff\xfe",
	} {
		for _, addr := range []string{"h:1", "[::1]:7420", "10.0.0.1:9"} {
			u := URL{Addr: addr, Path: name}
			got, err := ParseURL(u.String())
			assert.NoError(t, err, "ParseURL(%q) = %+v, %v; want %+v", u.String(), got, err, u)
			assert.Equal(t, u, got, "ParseURL(%q) = %+v, %v; want %+v", u.String(), got, err, u)
		}
	}
}

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"rdmafs://host:9000/a/b.bin", "rdmafs://[::1]:1/", "rdmafs://h:1/a%20b", "rdmafs://h/100%25", "http://x/"} {
		f.Add(s, "name")
	}
	f.Fuzz(func(t *testing.T, s, name string) {
		if u, err := ParseURL(s); err == nil {
			again, err := ParseURL(u.String())
			require.NoError(t, err, "ParseURL(%q) = %+v; its String %q parses as %+v, %v", s, u, u.String(), again, err)
			require.EqualValues(t, u, again, "ParseURL(%q) = %+v; its String %q parses as %+v, %v", s, u, u.String(), again, err)
		}
		u := URL{Addr: "h:1", Path: name}
		got, err := ParseURL(u.String())
		require.NoError(t, err, "URL with path %q: String %q parses as %+v, %v", name, u.String(), got, err)
		require.Equal(t, u, got, "URL with path %q: String %q parses as %+v, %v", name, u.String(), got, err)
	})
}
