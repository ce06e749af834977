package objstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseContentRange(t *testing.T) {
	cases := []struct {
		in                 string
		first, last, total int64
		ok                 bool
	}{
		{"bytes 0-9/10", 0, 9, 10, true},
		{"bytes 5-5/100", 5, 5, 100, true},
		{"bytes 0-9/*", 0, 0, 0, false},
		{"bytes 9-0/10", 0, 0, 0, false},
		{"bytes 0-10/10", 0, 0, 0, false},
		{"bytes -1-9/10", 0, 0, 0, false},
		{"bytes 0-9", 0, 0, 0, false},
		{"0-9/10", 0, 0, 0, false},
		{"", 0, 0, 0, false},
		{"bytes 0-99999999999999999999/1", 0, 0, 0, false},
	}
	for _, c := range cases {
		f, l, tot, ok := parseContentRange(c.in)
		assert.Equal(t, c.ok, ok, "parseContentRange(%q) = %d, %d, %d, %v; want %d, %d, %d, %v", c.in, f, l, tot, ok, c.first, c.last, c.total, c.ok)
		assert.Equal(t, c.first, f, "parseContentRange(%q) = %d, %d, %d, %v; want %d, %d, %d, %v", c.in, f, l, tot, ok, c.first, c.last, c.total, c.ok)
		assert.Equal(t, c.last, l, "parseContentRange(%q) = %d, %d, %d, %v; want %d, %d, %d, %v", c.in, f, l, tot, ok, c.first, c.last, c.total, c.ok)
		assert.Equal(t, c.total, tot, "parseContentRange(%q) = %d, %d, %d, %v; want %d, %d, %d, %v", c.in, f, l, tot, ok, c.first, c.last, c.total, c.ok)
	}
}

// FuzzParseContentRange: an accepted Content-Range is a non-empty span
// inside the total.
func FuzzParseContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-9/10", "bytes 1-1/2", "bytes 0-0/*", "bytes a-b/c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		first, last, total, ok := parseContentRange(s)
		require.False(t, ok && (first < 0 || last < first || total <= last), "parseContentRange(%q) accepted %d-%d/%d", s, first, last, total)
	})
}

func TestJitter(t *testing.T) {
	for n := 1; n < 100; n++ {
		d := jitter(n)
		require.Greater(t, d, time.Duration(0), "jitter(%d) = %v, outside (0, %v]", n, d, backoffMax)
		require.LessOrEqual(t, d, time.Duration(backoffMax+1e6), "jitter(%d) = %v, outside (0, %v]", n, d, backoffMax)
	}
}
