package humanize

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "4096": 4096, "4K": 4096, "4M": 4 << 20, "4MiB": 4 << 20, "1g": 1 << 30, "2GB": 2 << 30} {
		got, err := ParseBytes(in)
		assert.NoError(t, err, "ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		assert.Equal(t, want, got, "ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
	}
	for _, bad := range []string{"", "-1", "4X", "M", "99999999999T", "1 MiB"} {
		n, err := ParseBytes(bad)
		assert.Error(t, err, "ParseBytes(%q) = %d, want an error", bad, n)
	}
}

func TestBytesAndCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 3 << 19: "1.5 MiB", 5 << 40: "5.0 TiB"} {
		got := Bytes(n)
		assert.Equal(t, want, got, "Bytes(%d) = %q, want %q", n, got, want)
	}
	for n, want := range map[int]string{0: "0 files", 1: "1 file", 2: "2 files"} {
		got := Count(n, "file")
		assert.Equal(t, want, got, "Count(%d) = %q, want %q", n, got, want)
	}
	got := Count(int64(1), "sample")
	assert.Equal(t, "1 sample", got, "Count(int64(1)) = %q", got)
}

// FuzzParseBytes: whatever the input, a count it accepts is within
// [0, 2^62], and every such count written in decimal reads back.
func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"0", "4MiB", "1g", "2GB", "-1", "99999999999T", "4 K"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseBytes(s)
		if err != nil {
			return
		}
		require.GreaterOrEqual(t, n, int64(0), "ParseBytes(%q) = %d, outside [0, 2^62]", s, n)
		require.LessOrEqual(t, n, int64(1<<62), "ParseBytes(%q) = %d, outside [0, 2^62]", s, n)
		back, err := ParseBytes(strconv.FormatInt(n, 10))
		require.NoError(t, err, "ParseBytes(%d) = %d, %v", n, back, err)
		require.Equal(t, n, back, "ParseBytes(%d) = %d, %v", n, back, err)
	})
}

func TestCountedReasons(t *testing.T) {
	for _, tc := range []struct {
		counts map[string]int
		files  int
		want   string
	}{
		{nil, 3, ""},
		{map[string]int{"b refused": 1}, 1, "b refused (1 of 1 file)"},
		{map[string]int{"z": 2, "a": 3}, 5, "a (3 of 5 files); z (2 of 5 files)"},
	} {
		require.Equal(t, tc.want, CountedReasons(tc.counts, tc.files), tc.counts)
	}
}
