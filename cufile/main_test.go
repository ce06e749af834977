package cufile_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/internal/fakecuda"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fake is the CUDA test double every test here loads; its state is per
// process, so no test here runs in parallel.
var (
	fake    *fakecuda.Libs
	control *fakecuda.Control
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("GDSLOAD_TEST_HELPER") != "" {
		// A child process started by a test: the double is already named
		// by the environment.
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "fakecuda-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	fake, err = fakecuda.Build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	control, err = fake.Open()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// reset puts the double back in its default state (one GPU of 1 GiB,
// nvfs mode, no fault) and checks at the end of the test that everything
// taken from it was given back.
func reset(t *testing.T, cmds ...string) {
	t.Helper()
	require.NoError(t, control.Do("reset"))
	for _, c := range cmds {
		require.NoError(t, control.Do(c))
	}
	t.Cleanup(func() {
		for _, c := range fakecuda.Leaks {
			n := control.Counter(c)
			assert.Zero(t, n, "test double still holds %d %s at the end of the test", n, c)
		}
		m := control.Misuse()
		assert.Empty(t, m, "test double refused a misuse: %s", m)
		require.NoError(t, control.Do("reset"))
	})
}

func openRuntime(t *testing.T) *cufile.Runtime {
	t.Helper()
	rt, err := cufile.OpenRuntime(fake.Config())
	require.NoError(t, err)
	return rt
}

func openDevice(t *testing.T, id int) *cufile.Device {
	t.Helper()
	d, err := openRuntime(t).Device(id)
	require.NoError(t, err)
	return d
}
