package webdataset

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExpand(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{"shard-{000000..000002}.tar", []string{"shard-000000.tar", "shard-000001.tar", "shard-000002.tar"}},
		{"s{07..10}", []string{"s07", "s08", "s09", "s10"}},
		{"s{8..11}", []string{"s8", "s9", "s10", "s11"}},
		{"{0..10}", []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}}, // a lone "0" is not padding
		{"{4..1}", []string{"4", "3", "2", "1"}},
		{"{2..-1}", []string{"2", "1", "0", "-1"}},
		{"{-01..1}", []string{"-01", "000", "001"}},
		{"{0..10..5}", []string{"0", "5", "10"}},
		{"{a..e..2}", []string{"a", "c", "e"}},
		{"{c..a}", []string{"c", "b", "a"}},
		{"{a,b}-{1..2}", []string{"a-1", "a-2", "b-1", "b-2"}},
		{"train/{x,y{0..1}}.tar", []string{"train/x.tar", "train/y0.tar", "train/y1.tar"}},
		{"index.html{,.backup}", []string{"index.html", "index.html.backup"}},
		{"plain.tar", []string{"plain.tar"}},
		{"{single}.tar", []string{"{single}.tar"}},
		{`a\{1,2\}`, []string{"a{1,2}"}},
		{"{5..5}", []string{"5"}},
		{"{a..z..9223372036854775807}", []string{"a"}},
	} {
		got, err := Expand(tc.pattern)
		assert.NoError(t, err, "Expand(%q) = %q, %v; want %q", tc.pattern, got, err, tc.want)
		assert.True(t, slices.Equal(got, tc.want), "Expand(%q) = %q, %v; want %q", tc.pattern, got, err, tc.want)
	}
}

func TestExpandErrors(t *testing.T) {
	for _, p := range []string{"{1{2,3}", "a}b{", "x{0..1"} {
		got, err := Expand(p)
		assert.Error(t, err, "Expand(%q) = %q, %v; want an unbalanced-braces error", p, got, err)
		assert.ErrorContains(t, err, "unbalanced", "Expand(%q) = %q, %v; want an unbalanced-braces error", p, got, err)
	}
	for _, p := range []string{"{0..999999999999999}", "{0..999}{0..999}{0..9}", "{a,b,c}{0..400000}"} {
		_, err := ExpandN(p, 1_000_000)
		assert.ErrorIs(t, err, ErrTooManyExpansions, "ExpandN(%q) error %v, want ErrTooManyExpansions", p, err)
	}
	got, err := ExpandN("{0..9}{0..9}", 100)
	assert.NoError(t, err, "exactly at the cap: %d names, %v", len(got), err)
	assert.Len(t, got, 100, "exactly at the cap: %d names, %v", len(got), err)
	_, err = ExpandN("{0..9}{0..9}", 99)
	assert.ErrorIs(t, err, ErrTooManyExpansions, "one over the cap")
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"a{1..3}", "{a,b{c,d}}", `\{x}`, "{00..-5..2}", "{z..A}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		out, err := ExpandN(p, 1000)
		require.False(t, err == nil && len(out) > 1000, "%d names beyond the cap", len(out))
	})
}
