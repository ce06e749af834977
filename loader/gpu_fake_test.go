package loader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"sync"
	"testing"

	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/cufile/fakecuda"
	"github.com/stretchr/testify/require"
)

// The CUDA test double, built once per process (loader's TestMain belongs
// to the engine's tests, so the build is cached in the temp folder).
var fakeGPU = sync.OnceValues(func() (*fakeGPULibs, error) {
	libs, err := fakecuda.Cached()
	if err != nil {
		return nil, err
	}
	ctl, err := libs.Open()
	if err != nil {
		return nil, err
	}
	return &fakeGPULibs{Libs: libs, ctl: ctl}, nil
})

type fakeGPULibs struct {
	*fakecuda.Libs
	ctl *fakecuda.Control
}

// withFakeGPU resets the double, applies cmds, and checks at the end of
// the test that every allocation, buffer, stream, event, handle and driver
// reference was given back. Tests using it must not run in parallel.
func withFakeGPU(t *testing.T, cmds ...string) *fakeGPULibs {
	t.Helper()
	f, err := fakeGPU()
	require.NoError(t, err)
	require.NoError(t, f.ctl.Do("reset"))
	for _, c := range cmds {
		require.NoError(t, f.ctl.Do(c))
	}
	t.Cleanup(func() {
		require.NoError(t, f.ctl.Do("reset"))
		for _, c := range []string{"allocs", "pinned", "streams", "events", "handles", "driver_refs", "bufreg"} {
			if n := f.ctl.Counter(c); n != 0 {
				t.Errorf("test double still holds %d %s at the end of the test", n, c)
			}
		}
	})
	return f
}

func (f *fakeGPULibs) device(t *testing.T, id int) *cufile.Device {
	t.Helper()
	rt, err := cufile.OpenRuntime(f.Config())
	require.NoError(t, err)
	d, err := rt.Device(id)
	require.NoError(t, err)
	return d
}

func (f *fakeGPULibs) driver(t *testing.T) *cufile.Driver {
	t.Helper()
	c, err := cufile.OpenCuFile(f.Config())
	require.NoError(t, err)
	return c.Driver()
}

// readBackAll returns the whole destination's bytes.
func readBackAll(t *testing.T, d interface {
	ReadBacker
	Sized
}) []byte {
	t.Helper()
	out := make([]byte, d.Len())
	require.NoError(t, d.ReadBack(context.Background(), 0, out))
	return out
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return b
}
