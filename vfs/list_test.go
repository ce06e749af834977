package vfs

import (
	"reflect"
	"strings"
	"testing"
)

func TestReadList(t *testing.T) {
	for in, want := range map[string][]string{
		"":                         nil,
		"a\nb":                     {"a", "b"},
		"a\r\n\n  \r\n b c \nd\n":  {"a", " b c ", "d"},
		"rdmafs://h:1/x\r\n/y/z\n": {"rdmafs://h:1/x", "/y/z"},
	} {
		got, err := ReadList(strings.NewReader(in))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ReadList(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ReadList(strings.NewReader(strings.Repeat("x", MaxListLine+1))); err == nil {
		t.Error("a line over MaxListLine was read")
	}
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
			if strings.TrimSpace(p) == "" || strings.Contains(p, "\n") || strings.HasSuffix(p, "\r") {
				t.Fatalf("entry %q of %q", p, in)
			}
			found := false
			for _, l := range lines {
				found = found || strings.TrimRight(l, "\r") == p
			}
			if !found {
				t.Fatalf("entry %q is no line of %q", p, in)
			}
		}
	})
}
