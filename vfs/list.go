package vfs

import (
	"bufio"
	"io"
	"strings"
)

// MaxListLine bounds a line of a list ReadList reads.
const MaxListLine = 1 << 20

// ReadList reads paths or URLs written one per line, as rsync's and
// rclone's --files-from lists hold them: blank lines are skipped, the
// carriage returns ending a line are dropped, and other spaces are kept. A line
// longer than MaxListLine is an error.
func ReadList(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, MaxListLine)
	for sc.Scan() {
		if p := strings.TrimRight(sc.Text(), "\r"); strings.TrimSpace(p) != "" {
			out = append(out, p)
		}
	}
	return out, sc.Err()
}
