//go:build !linux

package loader

import "fmt"

// FileSystemOf returns the file system holding path; only Linux says.
func FileSystemOf(path string) (FileSystem, error) {
	return FileSystem{}, fmt.Errorf("file system of %s: only known on Linux", path)
}
