package testenv

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// recorder is a testing.TB that records how a test would have ended.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skip(args ...any)                  { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestMissingSkipsUnlessRequired(t *testing.T) {
	for _, tc := range []struct {
		env        string
		skip, fail bool
	}{{"", true, false}, {"0", true, false}, {"1", false, true}, {"yes", false, true}} {
		t.Run("env="+tc.env, func(t *testing.T) {
			t.Setenv(RequireTools, tc.env)
			r := &recorder{TB: t}
			Tool(r, "gdsload-no-such-tool", "the gdsload-no-such-tool package")
			if tc.skip {
				require.Contains(t, r.skipped, "gdsload-no-such-tool not found on PATH")
				require.Contains(t, r.skipped, "install the gdsload-no-such-tool package")
				require.Empty(t, r.failed)
			}
			if tc.fail {
				require.Contains(t, r.failed, "gdsload-no-such-tool not found on PATH")
				require.Contains(t, r.failed, RequireTools)
			}
		})
	}
}

func TestFoundToolsAndModulesPass(t *testing.T) {
	t.Setenv(RequireTools, "1")
	r := &recorder{TB: t}
	require.NotEmpty(t, Tool(r, "sh", "dash"))
	Library(r, "libc.so.6", "libc6")
	require.Empty(t, r.failed)
	require.Empty(t, r.skipped)
}

func TestMissingLibraryAndModule(t *testing.T) {
	t.Setenv(RequireTools, "")
	r := &recorder{TB: t}
	Library(r, "libgdsload-no-such.so.1", "nothing")
	require.Contains(t, r.skipped, "libgdsload-no-such.so.1 is not in the dynamic linker's cache")
	r = &recorder{TB: t}
	PythonModules(r, "sh", "nothing", "x") // sh has no -c "import x": it fails
	require.Contains(t, r.skipped, "sh cannot import x")
}
