// Package miniotest starts real MinIO servers for tests: one node, or a
// distributed erasure-coded cluster of several nodes on loopback ports,
// each node its own process with its own drive folder.
//
// MinIO is under the AGPL: it is never linked into gdsload. The tests run
// the binary that `make minio` installs (go install of the pinned Version
// into the tools cache); Binary finds it.
package miniotest

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Version is the MinIO module version the tests run against. The Makefile
// reads it from here: keep it on one line.
const Version = "v0.0.0-20260212201848-7aac2a2c5b7c"

// EnvBinary names the environment variable that points at a minio binary,
// overriding the tools cache.
const EnvBinary = "GDSLOAD_MINIO"

// Root credentials of every server started here.
const (
	AccessKey = "gdsload-test"
	SecretKey = "gdsload-test-secret"
)

// DefaultBinary is where `make minio` installs MinIO:
// $XDG_CACHE_HOME/gdsload-tools/minio, else ~/.cache/gdsload-tools/minio.
func DefaultBinary() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache folder for the minio binary (%v); set %s", err, EnvBinary)
	}
	return filepath.Join(dir, "gdsload-tools", "minio"), nil
}

// Binary returns the minio binary to run: $GDSLOAD_MINIO, else
// DefaultBinary. It fails, saying how to install it, when the binary is
// missing or is not MinIO at Version.
func Binary() (string, error) {
	path := os.Getenv(EnvBinary)
	if path == "" {
		var err error
		if path, err = DefaultBinary(); err != nil {
			return "", err
		}
	}
	bi, err := buildinfo.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("no minio binary at %s: run `make minio` (go install github.com/minio/minio@%s into the tools cache) or set %s", path, Version, EnvBinary)
	case err != nil:
		return "", fmt.Errorf("%s is not a Go binary (%v): run `make minio` or set %s", path, err, EnvBinary)
	case bi.Main.Path != "github.com/minio/minio" || bi.Main.Version != Version:
		return "", fmt.Errorf("%s is %s@%s, want github.com/minio/minio@%s: run `make minio`", path, bi.Main.Path, bi.Main.Version, Version)
	}
	return path, nil
}

// TempDir makes a folder for MinIO drives, in /dev/shm when it is a
// writable tmpfs (a drive there costs no disk I/O: MinIO syncs every
// object, which makes deleting many of them from a busy disk slow;
// docs/PERFORMANCE-NOTES.md, test fixtures), else in the system's
// temporary folder. The caller removes it.
func TempDir(pattern string) (string, error) {
	var st syscall.Statfs_t
	if syscall.Statfs("/dev/shm", &st) == nil && st.Type == tmpfsMagic {
		if d, err := os.MkdirTemp("/dev/shm", pattern); err == nil {
			return d, nil
		}
	}
	return os.MkdirTemp("", pattern)
}

const tmpfsMagic = 0x01021994
