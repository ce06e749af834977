package testenv

import (
	"os"
	"testing"
)

// RequireDirectIO names the environment variable that turns a skip for a
// directory without O_DIRECT (NeedDirectIO) into a failure, for machines
// whose temporary directory is known to take it.
const RequireDirectIO = "GDSLOAD_REQUIRE_DIRECT_IO"

// NeedDirectIO skips tb where files in dir do not take O_DIRECT reads and
// writes (DirectIO says why), or fails it where RequireDirectIO is set.
func NeedDirectIO(tb testing.TB, dir string) {
	tb.Helper()
	ok, reason := DirectIO(dir)
	if ok {
		return
	}
	if v := os.Getenv(RequireDirectIO); v != "" && v != "0" {
		tb.Fatalf("%s does not take O_DIRECT (%s), and %s=%s", dir, reason, RequireDirectIO, v)
	}
	tb.Skipf("%s does not take O_DIRECT here: %s", dir, reason)
}
