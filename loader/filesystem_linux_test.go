package loader

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// FileSystemOf takes, of the mounts of the path's device, the one whose
// mount point holds the path most closely, and undoes the table's octal
// escapes.
func TestFileSystemOfMountTable(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "with space")
	require.NoError(t, os.Mkdir(sub, 0o755))
	var st unix.Stat_t
	require.NoError(t, unix.Stat(sub, &st))
	dev := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	esc := func(s string) string { return strings.ReplaceAll(s, " ", `\040`) }
	table := fmt.Sprintf(`22 1 0:5 / /proc rw - proc proc rw
1 0 %[1]s / / rw - ext4 /dev/root rw
40 1 %[1]s /x %[2]s rw shared:1 - ext4 /dev/nvme0n1p1 rw
41 1 %[1]s /y /elsewhere rw - ext4 /dev/nvme0n1p1 rw
`, dev, esc(dir))
	info := filepath.Join(t.TempDir(), "mountinfo")
	require.NoError(t, os.WriteFile(info, []byte(table), 0o644))
	got, err := fileSystemOf(sub, info)
	require.NoError(t, err)
	require.Equal(t, FileSystem{Mount: dir, Source: "/dev/nvme0n1p1", Type: "ext4", Device: dev}, got)
	require.Equal(t, "ext4 "+dir+" (/dev/nvme0n1p1)", got.String())

	require.NoError(t, os.WriteFile(info, []byte("22 1 0:5 / /proc rw - proc proc rw\n"), 0o644))
	_, err = fileSystemOf(sub, info)
	require.ErrorContains(t, err, "device "+dev+" is not in "+info)

	real, err := FileSystemOf(sub)
	require.NoError(t, err)
	require.NotEmpty(t, real.Type)
	require.Equal(t, dev, real.Device)
}
