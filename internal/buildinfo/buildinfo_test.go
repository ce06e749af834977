package buildinfo

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInfo(t *testing.T) {
	v := Read()
	require.Equal(t, runtime.Version(), v.Go, "Read() = %+v", v)
	require.NotEmpty(t, v.Version, "Read() = %+v", v)
	for _, tc := range []struct {
		in   Info
		want string
	}{
		{Info{Version: "v1.2.0", Revision: "abc", Go: "go1.26"}, "gdsload v1.2.0 abc go1.26"},
		{Info{Version: "(devel)", Revision: "abc", Modified: true, Go: "go1.26"}, "gdsload (devel) abc (modified) go1.26"},
		{Info{Version: "(devel)", Go: "go1.26"}, "gdsload (devel) unknown revision go1.26"},
	} {
		got := tc.in.String()
		assert.Equal(t, tc.want, got, "%+v.String() = %q, want %q", tc.in, got, tc.want)
	}
}
