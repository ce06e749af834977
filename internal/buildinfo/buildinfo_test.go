package buildinfo

import (
	"runtime"
	"testing"
)

func TestInfo(t *testing.T) {
	v := Read()
	if v.Go != runtime.Version() || v.Version == "" {
		t.Fatalf("Read() = %+v", v)
	}
	for _, tc := range []struct {
		in   Info
		want string
	}{
		{Info{Version: "v1.2.0", Revision: "abc", Go: "go1.26"}, "gdsload v1.2.0 abc go1.26"},
		{Info{Version: "(devel)", Revision: "abc", Modified: true, Go: "go1.26"}, "gdsload (devel) abc (modified) go1.26"},
		{Info{Version: "(devel)", Go: "go1.26"}, "gdsload (devel) unknown revision go1.26"},
	} {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.in, got, tc.want)
		}
	}
}
