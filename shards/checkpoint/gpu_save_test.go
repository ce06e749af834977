//go:build cgo

package checkpoint

import (
	"bytes"
	"context"
	"github.com/gdsload/gdsload/internal/realcufile"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/safetensors"
)

// gpuForSave returns the device and cuFile driver the save test runs on:
// the CUDA test double, or with GDSLOAD_REAL_GPU=1 (scripts/gpu-check.sh)
// the real libraries on GPU 0.
func gpuForSave(t *testing.T) (*cufile.Device, *cufile.Driver) {
	t.Helper()
	cfg := cufile.Config{}
	if os.Getenv("GDSLOAD_REAL_GPU") != "1" {
		cfg = withFakeGPU(t).Libs.Config()
	}
	rt, err := cufile.OpenRuntime(cfg)
	require.NoError(t, err)
	dev, err := rt.Device(0)
	require.NoError(t, err)
	cf, err := cufile.OpenCuFile(cfg)
	if err != nil {
		return dev, nil
	}
	return dev, cf.Driver()
}

// A sharded checkpoint loaded into GPU memory and saved from there gives a
// safetensors file holding exactly the tensors that were loaded. With
// GDSLOAD_SAVE_OUT set, the saved file and a reference written by
// safetensors.Encode from the same tensors are left there for the
// safetensors library to compare (scripts/gpu-check.sh).
func TestSaveFromGPU(t *testing.T) {
	for _, path := range []loader.Route{loader.RouteBounce, loader.RouteGDS} {
		t.Run(string(path), func(t *testing.T) {
			dev, drv := gpuForSave(t)
			s := writeSharded(t)
			mode := loader.DirectAuto
			if path == loader.RouteGDS {
				if drv == nil {
					t.Skip("libcufile unavailable: no gds path")
				}
				// On a GPU machine without nvidia-fs (or with cuFile
				// refusing to start) there is no gds path to test.
				if err := drv.Open(); err != nil {
					t.Skipf("no gds path: %v", err)
				}
				defer func() { require.NoError(t, drv.Close()) }()
				mode = loader.DirectOn
			} else {
				drv = nil
			}
			c := openOrSkip(t, s.index, mode)
			l, err := c.Load(context.Background(), gpuAllocator(dev, drv, 64<<10), loader.Options{ChunkSize: 64 << 10, Workers: 4})
			require.NoError(t, err)
			defer func() { require.NoError(t, l.Close()) }()

			out := filepath.Join(t.TempDir(), "saved.safetensors")
			if dir := os.Getenv("GDSLOAD_SAVE_OUT"); dir != "" {
				out = filepath.Join(dir, "saved-"+string(path)+".safetensors")
			}
			_, err = l.Save(context.Background(), out, map[string]string{"format": "pt"}, loader.SaveOptions{})
			require.NoError(t, err)

			f, err := safetensors.Open(out)
			require.NoError(t, err)
			defer f.Close()
			want := s.want()
			require.Len(t, f.Header.Tensors, len(want))
			for name, w := range want {
				ti, ok := f.Header.Tensor(name)
				require.True(t, ok, name)
				got, err := io.ReadAll(f.TensorReader(ti))
				require.NoError(t, err)
				require.True(t, bytes.Equal(w.Data, got), name)
			}
			if dir := os.Getenv("GDSLOAD_SAVE_OUT"); dir != "" {
				var ref bytes.Buffer
				names := make([]string, 0, len(want))
				for n := range want {
					names = append(names, n)
				}
				sort.Strings(names)
				ts := make([]safetensors.TensorData, 0, len(names))
				for _, n := range names {
					ts = append(ts, want[n])
				}
				require.NoError(t, safetensors.Encode(&ref, ts, map[string]string{"format": "pt"}))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "reference.safetensors"), ref.Bytes(), 0o644))
			}
		})
	}
}

// Where cuFile's driver will not open, TestSaveFromGPU's gds case skips
// with the reason (the GPU check runs it on machines that may lack
// nvidia-fs) instead of failing the test binary.
func TestSaveFromGPUSkipsGDSWithoutDriver(t *testing.T) {
	if os.Getenv("FAKECUDA_FAIL") != "" {
		t.Skip("already the child")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSaveFromGPU$/^gds$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "FAKECUDA_FAIL=driver_open")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "--- SKIP: TestSaveFromGPU/gds")
	require.Contains(t, string(out), "no gds path: cuFileDriverOpen failed: CU_FILE_DRIVER_NOT_INITIALIZED (5001)")
}

// A sharded checkpoint loaded through gds by NVIDIA's real libcufile (each
// library in its own process, over the CUDA test double's driver, on an
// ext4 loop mount that udev knows), with 4 KiB-aligned reads of data
// regions that are not: every shard takes cuFile in compat mode, and the
// file saved from GPU memory holds exactly the tensors.
func TestRealSaveFromGPU(t *testing.T) {
	realcufile.Each(t, func(t *testing.T, c realcufile.Child) {
		rt, err := cufile.OpenRuntime(cufile.Config{})
		require.NoError(t, err)
		dev, err := rt.Device(0)
		require.NoError(t, err)
		cf, err := cufile.OpenCuFile(cufile.Config{})
		require.NoError(t, err)
		drv := cf.Driver()
		require.NoError(t, drv.Open())
		defer func() { require.NoError(t, drv.Close()) }()
		dir := filepath.Join(c.Dir, "save")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		s := writeShardedIn(t, dir)
		ck := openOrSkip(t, s.index, loader.DirectOn)
		l, err := ck.Load(context.Background(), gpuAllocator(dev, drv, 64<<10), loader.Options{ChunkSize: 64 << 10, Workers: 4})
		require.NoError(t, err)
		defer func() { require.NoError(t, l.Close()) }()
		for _, f := range l.Result.Files {
			require.Equal(t, loader.RouteGDS, f.Route, "%s: %s", f.Name, f.Reason)
			require.Equal(t, cufile.ModeCompat, f.GDSMode)
		}

		out := filepath.Join(dir, "saved.safetensors")
		res, err := l.Save(context.Background(), out, map[string]string{"format": "pt"}, loader.SaveOptions{})
		require.NoError(t, err)
		// The tensors of three shards are concatenated, so the save goes
		// through pinned buffers.
		require.Equal(t, loader.RouteBounce, res.Route, res.Reason)

		// One allocation saved whole is written by cuFileWrite.
		a := l.Allocations[0]
		rb, ok := a.Dest.(loader.ReadBacker)
		require.True(t, ok, "%T reads back", a.Dest)
		one := filepath.Join(dir, "allocation.bin")
		wres, err := loader.SaveFile(context.Background(), one, loader.DeviceRegion(rb, 0, a.Size), loader.SaveOptions{})
		require.NoError(t, err)
		require.Equal(t, loader.RouteGDS, wres.Route, wres.Reason)
		require.Equal(t, cufile.ModeCompat, wres.GDSMode)
		shard, err := os.ReadFile(a.File)
		require.NoError(t, err)
		saved, err := os.ReadFile(one)
		require.NoError(t, err)
		end := min(a.FileOffset+a.Size, int64(len(shard)))
		require.True(t, bytes.Equal(shard[a.FileOffset:end], saved[:end-a.FileOffset]), "the allocation written by cuFileWrite")
		f, err := safetensors.Open(out)
		require.NoError(t, err)
		defer f.Close()
		want := s.want()
		require.Len(t, f.Header.Tensors, len(want))
		for name, w := range want {
			ti, ok := f.Header.Tensor(name)
			require.True(t, ok, name)
			got, err := io.ReadAll(f.TensorReader(ti))
			require.NoError(t, err)
			require.True(t, bytes.Equal(w.Data, got), name)
		}
	})
}
