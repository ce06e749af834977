package ibv

import (
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNotLinked: the package (and so every binary importing it) does not
// link libibverbs or librdmacm; they are loaded at run time.
func TestNotLinked(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range libs {
		if strings.Contains(l, "ibverbs") || strings.Contains(l, "rdmacm") {
			t.Errorf("%s links %s", exe, l)
		}
	}
}

// TestLoad loads rdma-core as installed here: either it loads and lists
// devices (none is fine), or it fails with ErrMissing naming the library.
// Pointing the override at a missing file fails clearly either way.
func TestLoad(t *testing.T) {
	l, err := Load()
	if err != nil {
		if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "lib") {
			t.Fatalf("Load: %v, want ErrMissing naming the library", err)
		}
		t.Logf("rdma-core not usable here: %v", err)
	} else {
		devs, err := l.Devices()
		if errors.Is(err, ErrNoDevices) {
			t.Logf("no RDMA support in this kernel: %v", err)
		} else if err != nil {
			t.Fatalf("Devices: %v", err)
		}
		t.Logf("rdma-core %q (%s, IBVERBS_1.%d), %d devices", l.Version(), l.VerbsPath, l.ABI, len(devs))
		if l.ABI < 1 {
			t.Errorf("ABI %d: IBVERBS_1.1 must be there", l.ABI)
		}
		if l.HasDmaBuf() != (l.ABI >= 12) {
			t.Errorf("dma-buf %v with IBVERBS_1.%d", l.HasDmaBuf(), l.ABI)
		}
		for _, d := range devs {
			if d.Name == "" {
				t.Errorf("device without a name: %+v", d)
			}
		}
	}
	t.Setenv(VerbsEnv, filepath.Join(t.TempDir(), "libibverbs.so.1"))
	if _, err := Load(); !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), VerbsEnv) {
		t.Errorf("Load with a missing override: %v", err)
	}
}

func TestPackageVersion(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0", "44.0"},
		{"/usr/lib64/libibverbs.so.1.14.50.0", "50.0"},
		{"/opt/libibverbs.so.1.1.17.2", "17.2"},
		{"/usr/lib/libibverbs.so.1", ""},
		{"/usr/lib/libibverbs.so", ""},
		{"libibverbs.so.1.14.58.0.rc1", "58.0.rc1"},
	} {
		if got := packageVersion(tc.path); got != tc.want {
			t.Errorf("packageVersion(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}
