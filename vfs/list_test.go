package vfs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadList(t *testing.T) {
	for in, want := range map[string][]string{
		"":                         nil,
		"a\nb":                     {"a", "b"},
		"a\r\n\n  \r\n b c \nd\n":  {"a", " b c ", "d"},
		"rdmafs://h:1/x\r\n/y/z\n": {"rdmafs://h:1/x", "/y/z"},
	} {
		got, err := ReadList(strings.NewReader(in))
		assert.NoError(t, err, "ReadList(%q) = %q, %v; want %q", in, got, err, want)
		assert.Equal(t, want, got, "ReadList(%q) = %q, %v; want %q", in, got, err, want)
	}
	_, err := ReadList(strings.NewReader(strings.Repeat("x", MaxListLine+1)))
	assert.Error(t, err, "a line over MaxListLine was read")
}

// FuzzReadList: every entry is a non-blank line of the input, without
// its line ending.
func FuzzReadList(f *testing.F) {
	for _, s := range []string{"a\nb", "a\r\n\r\n", " \n\t\n", "x\ry\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ReadList(strings.NewReader(in))
		if err != nil {
			return
		}
		lines := strings.Split(in, "\n")
		for _, p := range got {
			require.NotEmpty(t, strings.TrimSpace(p), "entry %q of %q", p, in)
			require.NotContains(t, p, "\n", "entry %q of %q", p, in)
			require.False(t, strings.HasSuffix(p, "\r"), "entry %q of %q", p, in)
			found := false
			for _, l := range lines {
				found = found || strings.TrimRight(l, "\r") == p
			}
			require.True(t, found, "entry %q is no line of %q", p, in)
		}
	})
}
