package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gdsload/gdsload/internal/fakecuda"
	"github.com/gdsload/gdsload/internal/rdmafstest"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/rdmafsfs"
)

func useFakeCUDA(t *testing.T, cmds ...string) *fakecuda.Session {
	t.Helper()
	s := fakecuda.Use(t, cmds...)
	for k, v := range s.Env() {
		t.Setenv(k, v)
	}
	return s
}

func writeData(t *testing.T, dir string, n int) string {
	t.Helper()
	p := filepath.Join(dir, "data.bin")
	require.NoError(t, os.WriteFile(p, make([]byte, n), 0o644))
	return p
}

func names(rs []Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Mode)
	}
	return out
}

// The GPU modes run through the CUDA test double and free what they took.
func TestGPUModesThroughTestDouble(t *testing.T) {
	s := useFakeCUDA(t, "mode=nvfs")
	p := writeData(t, t.TempDir(), 2<<20+1)
	sel, err := Select(p, []string{"gds", "bounce", "cached-bounce"}, 0, nil)
	require.NoError(t, err)
	require.Empty(t, sel.Skipped)
	rep, err := Run(context.Background(), p, sel.Modes, Config{Workers: 2, ChunkSize: 1 << 20}, Options{Runs: 1})
	require.NoError(t, sel.Close())
	require.NoError(t, err)
	require.Equal(t, []string{"gds", "bounce", "cached-bounce"}, names(rep.Results))
	for _, r := range rep.Results {
		require.Greater(t, r.GiBPerS, 0.0, r.Mode)
		require.Equal(t, int64(2<<20+1), r.Bytes, r.Mode)
	}
	require.Positive(t, s.Counter("cufile_reads"), "gds read with cuFile")
	for _, c := range []string{"allocs", "pinned", "handles", "driver_refs"} {
		require.Zero(t, s.Counter(c), "%s released", c)
	}
}

// A mode that is unavailable, or fails, is skipped with its reason and
// the other modes still run: gds refused because the cuFile
// driver will not open, a cuFile handle that will not register, and
// O_DIRECT refused by the file system.
func TestBenchSkipsModesThatCannotRun(t *testing.T) {
	all := []string{"posix", "direct", "loader", "gds", "bounce", "cached-bounce"}
	for _, tc := range []struct {
		name    string
		cmds    []string
		ramfs   bool
		skipped map[string]string // mode -> part of its reason
		ran     []string
	}{
		{name: "gds refused", cmds: []string{"mode=nvfs", "fault=driver_open"},
			skipped: map[string]string{"gds": "gds refused: cuFileDriverOpen failed"},
			ran:     []string{"posix", "direct", "loader", "bounce", "cached-bounce"}},
		{name: "handle registration fails", cmds: []string{"mode=nvfs", "fault=handle_register"},
			skipped: map[string]string{"gds": "CU_FILE_INTERNAL_ERROR"},
			ran:     []string{"posix", "direct", "loader", "bounce", "cached-bounce"}},
		{name: "O_DIRECT refused", cmds: []string{"mode=nvfs"}, ramfs: true,
			skipped: map[string]string{"direct": "O_DIRECT", "gds": "O_DIRECT", "bounce": "O_DIRECT"},
			ran:     []string{"posix", "loader", "cached-bounce"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := useFakeCUDA(t, tc.cmds...)
			dir := t.TempDir()
			if tc.ramfs {
				if err := unix.Mount("ramfs", dir, "ramfs", 0, ""); err != nil {
					t.Skipf("cannot mount ramfs here to refuse O_DIRECT (needs root): %v", err)
				}
				t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
			}
			p := writeData(t, dir, 3<<20)
			sel, err := Select(p, all, 0, nil)
			require.NoError(t, err)
			rep, err := Run(context.Background(), p, sel.Modes, Config{Workers: 2, ChunkSize: 1 << 20}, Options{Runs: 2})
			require.NoError(t, sel.Close())
			require.NoError(t, err, "the other modes ran")
			require.Equal(t, tc.ran, names(rep.Results))
			skipped := map[string]string{}
			for k, v := range sel.Skipped {
				skipped[k] = v
			}
			for k, v := range rep.Skipped {
				skipped[k] = v
			}
			require.Len(t, skipped, len(tc.skipped), "%v", skipped)
			for mode, why := range tc.skipped {
				require.Contains(t, skipped[mode], why, mode)
			}
			for _, c := range []string{"allocs", "pinned", "handles", "driver_refs"} {
				require.Zero(t, s.Counter(c), "%s released", c)
			}
		})
	}
}

// Without a GPU every GPU mode is skipped, with the reason, and the host
// modes run; a mode no build has is an error; a URL runs the loader mode
// through the Mux, the others needing a local file.
func TestSelect(t *testing.T) {
	useFakeCUDA(t, "devices=0")
	p := writeData(t, t.TempDir(), 1<<20)
	sel, err := Select(p, nil, 0, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"posix", "direct", "mmap", "loader", "cached-loader"}, modeNamesOf(sel.Modes))
	for _, g := range []string{"gds", "bounce", "cached-bounce"} {
		require.Contains(t, sel.Skipped[g], "no GPU", g)
	}
	require.NoError(t, sel.Close())

	_, err = Select(p, []string{"turbo"}, 0, nil)
	require.ErrorIs(t, err, ErrUnknownMode)
	_, err = Select(p, []string{"gds", "bounce"}, 0, nil)
	require.ErrorIs(t, err, ErrNoModes)
	require.ErrorContains(t, err, "mode gds is not available here: no GPU")

	remote := rdmafstest.Serve(t, filepath.Dir(p))
	m, err := vfs.New(rdmafsfs.With(rdmafstest.Options()...))
	require.NoError(t, err)
	defer m.Close()
	sel, err = Select(remote+"/data.bin", nil, 0, m)
	require.NoError(t, err)
	require.Equal(t, []string{"loader"}, modeNamesOf(sel.Modes))
	require.Equal(t, "needs a local file", sel.Skipped["posix"])
	rep, err := Run(context.Background(), remote+"/data.bin", sel.Modes, Config{Workers: 2}, Options{Runs: 1})
	require.NoError(t, err)
	require.Equal(t, int64(1<<20), rep.Results[0].Bytes)
	require.NoError(t, sel.Close())
}

func modeNamesOf(ms []Mode) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}
