package loader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"

	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/internal/fakecuda"
	"github.com/stretchr/testify/require"
)

// fakeGPULibs is the CUDA test double as a loader test uses it.
type fakeGPULibs struct{ *fakecuda.Session }

// withFakeGPU resets the double, applies cmds, and checks at the end of
// the test that everything was given back (fakecuda.Use).
func withFakeGPU(t *testing.T, cmds ...string) *fakeGPULibs {
	t.Helper()
	return &fakeGPULibs{fakecuda.Use(t, cmds...)}
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
