package loader

import "fmt"

// FileSystem is the mounted file system holding a path, as the kernel's
// mount table describes it (FileSystemOf): the pairs of a route profile
// are measured per file system.
type FileSystem struct {
	// Mount is where it is mounted; Source what is mounted there (a block
	// device such as /dev/nvme0n1p1, a server's export); Type the file
	// system type (ext4, xfs, nfs, tmpfs...).
	Mount  string `json:"mount"`
	Source string `json:"source"`
	Type   string `json:"type"`
	// Device is its device number, major:minor, as stat reports it.
	Device string `json:"device"`
}

// String names f for people: "ext4 /data (/dev/nvme0n1p1)".
func (f FileSystem) String() string { return fmt.Sprintf("%s %s (%s)", f.Type, f.Mount, f.Source) }

// Same reports whether f and o are the same file system: the same source
// of the same type mounted at the same place. The device number is not
// compared: it may change when the machine restarts.
func (f FileSystem) Same(o FileSystem) bool {
	return f.Mount == o.Mount && f.Source == o.Source && f.Type == o.Type
}
