package cufile_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/internal/realcufile"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// pattern returns n bytes that differ with seed.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return b
}

// apiErrors returns the lines of libcufile's log that report a failed API
// call (misuse: a wrong registration order, an unknown handle or buffer).
func apiErrors(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	require.NoError(t, err, "libcufile's log")
	var bad []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "ERROR") && strings.Contains(l, "cuFile") {
			bad = append(bad, l)
		}
	}
	return bad
}

// gdsload's use of the cuFile API, run against NVIDIA's real libcufile
// (each library in its own process, over the CUDA test double's driver,
// on an ext4 loop mount that udev knows): driver references counted
// across goroutines; buffers registered after the driver opens and
// deregistered before their memory is freed and the driver closes;
// handles registered on O_DIRECT descriptors and deregistered before
// the descriptor closes; reads of awkward sizes at unaligned offsets and
// destinations, short at end of file and zero after it; cuFileWrite from
// device memory read back byte for byte. libcufile logs no failed call.
func TestRealCuFileAPI(t *testing.T) {
	realcufile.Each(t, func(t *testing.T, c realcufile.Child) {
		cf, err := cufile.OpenCuFile(cufile.Config{})
		require.NoError(t, err)
		require.Equal(t, os.Getenv("GDSLOAD_LIBCUFILE"), cf.Library().Path, "the real library, not the double's cuFile")
		rt, err := cufile.OpenRuntime(cufile.Config{})
		require.NoError(t, err)
		dev, err := rt.Device(0)
		require.NoError(t, err)
		drv := cf.Driver()

		t.Run("driver references across goroutines", func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- drv.Open()
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			// libcufile logs "cuFile closing Driver" when
			// cuFileDriverClose closes it (its properties still answer
			// after that: they open it again, implicitly).
			closes := func() int {
				b, err := os.ReadFile(c.Log)
				require.NoError(t, err)
				return strings.Count(string(b), "cuFile closing Driver")
			}
			before := closes()
			for i := range 15 {
				require.NoError(t, drv.Close())
				require.Equal(t, before, closes(), "after %d of 16 closes the driver is still open", i+1)
			}
			require.NoError(t, drv.Close())
			require.Equal(t, before+1, closes(), "the last close closed the driver")
			require.Error(t, drv.Close(), "one close more than opens")
			// It opens again.
			require.NoError(t, drv.Open())
			mode, _, err := drv.Mode()
			require.NoError(t, err)
			require.Equal(t, cufile.ModeCompat, mode)
			require.NoError(t, drv.Close())
		})

		t.Run("reads, registration order, end of file", func(t *testing.T) {
			require.NoError(t, drv.Open())
			defer func() { require.NoError(t, drv.Close()) }()
			const size = 3<<20 + 4097
			want := pattern(size, 3)
			name := filepath.Join(c.Dir, "api-read.bin")
			require.NoError(t, os.WriteFile(name, want, 0o644))
			fd, err := unix.Open(name, unix.O_RDONLY|unix.O_DIRECT, 0)
			require.NoError(t, err)
			defer unix.Close(fd)

			const devSize = 4 << 20
			p, err := dev.Malloc(devSize)
			require.NoError(t, err)
			defer func() { require.NoError(t, dev.Free(p)) }()
			for _, registered := range []bool{true, false} {
				if registered {
					require.NoError(t, dev.Do(func() error { return drv.RegisterBuffer(p, devSize) }))
				}
				h, err := drv.RegisterFile(fd)
				require.NoError(t, err)
				for _, tc := range []struct {
					fileOff, devOff, n, want int64
				}{
					{0, 0, 1 << 20, 1 << 20},
					{1, 3, 4095, 4095},
					{4097, 8191, 100003, 100003},
					{size - 5, 1 << 20, 4096, 5}, // short at end of file
					{size, 0, 4096, 0},           // nothing after it
				} {
					var got int64
					require.NoError(t, dev.Do(func() error {
						var err error
						got, err = h.Read(p, tc.n, tc.fileOff, tc.devOff)
						return err
					}), "read %d at %d into +%d", tc.n, tc.fileOff, tc.devOff)
					require.Equal(t, tc.want, got, "read %d at %d", tc.n, tc.fileOff)
					if got > 0 {
						back := make([]byte, devSize)
						require.NoError(t, dev.CopyFromDevice(back, p))
						require.True(t, bytes.Equal(want[tc.fileOff:tc.fileOff+got], back[tc.devOff:tc.devOff+got]),
							"bytes read at %d into +%d (registered buffer: %v)", tc.fileOff, tc.devOff, registered)
					}
				}
				// Handles before the descriptor, buffers before the memory
				// and the driver.
				h.Close()
				if registered {
					require.NoError(t, dev.Do(func() error { return drv.DeregisterBuffer(p) }))
				}
			}
		})

		t.Run("cuFileWrite read back", func(t *testing.T) {
			require.NoError(t, drv.Open())
			defer func() { require.NoError(t, drv.Close()) }()
			const size = 2<<20 + 8192
			want := pattern(size, 9)
			p, err := dev.Malloc(size)
			require.NoError(t, err)
			defer func() { require.NoError(t, dev.Free(p)) }()
			require.NoError(t, dev.CopyToDevice(p, want))
			name := filepath.Join(c.Dir, "api-write.bin")
			fd, err := unix.Open(name, unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC|unix.O_DIRECT, 0o644)
			require.NoError(t, err)
			h, err := drv.RegisterFile(fd)
			require.NoError(t, err)
			var put int64
			require.NoError(t, dev.Do(func() error {
				for put < size {
					n, err := h.Write(p, size-put, put, put)
					if err != nil {
						return err
					}
					put += n
				}
				return nil
			}))
			h.Close()
			require.NoError(t, unix.Close(fd))
			got, err := os.ReadFile(name)
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, got), "the file cuFileWrite wrote from device memory")
		})

		t.Run("log", func(t *testing.T) {
			require.Empty(t, apiErrors(t, c.Log), "libcufile logged failed calls")
		})
	})
}
