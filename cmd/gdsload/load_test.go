package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gdsload/gdsload/internal/buildinfo"
	"github.com/gdsload/gdsload/internal/humanize"
)

// run executes the CLI in-process and returns stdout, stderr and the exit
// code main would use.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := execute(context.Background(), cmd)
	code := exitCode(err, false, &errb)
	return out.String(), errb.String(), code
}

// A usage error points at the help of the command that was run.
func TestUsageErrorNamesSubcommandHelp(t *testing.T) {
	tests := []struct {
		args []string
		help string
	}{
		{[]string{"load", "--workers", "0", "x"}, "Run 'gdsload load --help' for usage."},
		{[]string{"iterate", "--no-such-flag", "x"}, "Run 'gdsload iterate --help' for usage."},
		{[]string{"no-such-command"}, "Run 'gdsload --help' for usage."},
	}
	for _, tc := range tests {
		_, errb, code := run(t, tc.args...)
		require.Equal(t, 2, code, "%v: %s", tc.args, errb)
		require.Contains(t, errb, tc.help, "%v", tc.args)
	}
}

func writeFile(t *testing.T, dir, name string, n int) (string, string) {
	t.Helper()
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + n)
	}
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, b, 0o644))
	sum := sha256.Sum256(b)
	return p, hex.EncodeToString(sum[:])
}

func TestLoadJSON(t *testing.T) {
	dir := t.TempDir()
	want := map[string]string{}
	for name, n := range map[string]int{"a.bin": 0, "sub/b.bin": 4097, "sub/c.bin": 3<<20 + 5} {
		p, sum := writeFile(t, dir, name, n)
		want[p] = sum
	}
	out, stderr, code := run(t, "load", "--json", "--checksum", "sha256", "--workers", "3", "--chunk-size", "1M", dir)
	require.Equal(t, 0, code, stderr)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	for _, k := range []string{"bytes", "seconds", "gib_per_s", "cpu_seconds_per_gib", "path", "reason", "files"} {
		require.Contains(t, res, k)
	}
	require.Equal(t, "host", res["path"])
	require.EqualValues(t, 4097+3<<20+5, res["bytes"])
	files := res["files"].([]any)
	require.Len(t, files, 3)
	for _, f := range files {
		m := f.(map[string]any)
		for _, k := range []string{"name", "bytes", "path", "direct", "reason", "sha256"} {
			require.Contains(t, m, k)
		}
		require.Equal(t, want[m["name"].(string)], m["sha256"], m["name"])
	}
}

func TestLoadHumanOutput(t *testing.T) {
	p, sum := writeFile(t, t.TempDir(), "x.bin", 10000)
	out, _, code := run(t, "load", "--checksum", "sha256", p)
	require.Equal(t, 0, code)
	require.Contains(t, out, "path           host")
	require.Contains(t, out, sum+"  "+p)
}

func TestExitCodes(t *testing.T) {
	p, _ := writeFile(t, t.TempDir(), "x.bin", 10)
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"ok", []string{"load", p}, 0, ""},
		{"missing file", []string{"load", "/nonexistent/file"}, 1, "no such file"},
		{"no args", []string{"load"}, 2, "give a PATH, or --files-from"},
		{"missing list", []string{"load", "--files-from", "/nonexistent/list"}, 1, "--files-from"},
		{"bad flag", []string{"load", "--nope", p}, 2, "unknown flag"},
		{"bad direct", []string{"load", "--direct", "maybe", p}, 2, "want auto, on or off"},
		{"bad checksum", []string{"load", "--checksum", "md5", p}, 2, "want none, sha256 or crc32c"},
		{"bad chunk", []string{"load", "--chunk-size", "4X", p}, 2, "--chunk-size"},
		{"bad target", []string{"load", "--to", "tpu", p}, 2, "--to"},
		{"unknown command", []string{"frobnicate"}, 2, "unknown command"},
		{"bench unknown mode", []string{"bench", "--modes", "warp", p}, 2, "unknown mode"},
		// Counts and sizes a typo makes huge are refused before any
		// allocation, not met with an out-of-memory crash.
		{"huge workers", []string{"load", "--workers", "100000000000", p}, 2, "--workers 100000000000: want 1 to 1024"},
		{"huge chunk", []string{"load", "--chunk-size", "1000TiB", p}, 2, "want a size from 4 KiB to 1 GiB"},
		{"unaligned chunk", []string{"load", "--chunk-size", "3000", p}, 2, "want a multiple of 4 KiB"},
		{"checksum in capitals", []string{"load", "--checksum", "SHA256", p}, 0, ""},
		{"huge prefetch", []string{"iterate", "--prefetch", "1000000000000", p}, 2, "--prefetch 1000000000000: want 0 to 4096"},
		{"huge partitions", []string{"iterate", "--partitions", "1000000000000", p}, 2, "want 0 to 1048576"},
		{"huge runs", []string{"bench", "--runs", "100000000000", p}, 2, "--runs 100000000000: want 1 to 10000"},
		{"huge connections", []string{"load", "--connections", "100000000000", "rdmafs://127.0.0.1:1/x"}, 2, "--connections"},
		{"stage huge workers", []string{"stage", "--workers", "1000000000000", p, t.TempDir()}, 2, "want 1 to 1024"},
		{"serve directory as an argument", []string{"serve", "/srv/data"}, 2, "serve takes no arguments: did you mean --root /srv/data?"},
		{"devices with an argument", []string{"devices", "gpu0"}, 2, `devices takes no arguments, got "gpu0"`},
		{"version with an argument", []string{"version", "x"}, 2, `version takes no arguments, got "x"`},
		{"serve negative credits", []string{"serve", "--root", t.TempDir(), "--insecure-no-token", "--credits", "-5"}, 2, "--credits -5"},
		{"serve huge pool", []string{"serve", "--root", t.TempDir(), "--insecure-no-token", "--pool-buffers", "1048576", "--buffer-size", "1048576"}, 1, "over the 64 GiB limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := run(t, tc.args...)
			require.Equal(t, tc.code, code, stderr)
			require.Contains(t, stderr, tc.msg)
		})
	}
}

func TestExitCodeInterrupted(t *testing.T) {
	var b bytes.Buffer
	require.Equal(t, 130, exitCode(context.Canceled, false, &b))
	require.Equal(t, 130, exitCode(errors.New("read: broken"), true, &b))
}

func TestBenchJSON(t *testing.T) {
	p, _ := writeFile(t, t.TempDir(), "x.bin", 2<<20+1)
	out, stderr, code := run(t, "bench", "--json", "--runs", "2", "--modes", "posix,direct,mmap,loader", p)
	require.Equal(t, 0, code, stderr)
	var rep struct {
		Results []map[string]any `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Results, 4)
	for i, mode := range []string{"posix", "direct", "mmap", "loader"} {
		r := rep.Results[i]
		require.Equal(t, mode, r["mode"])
		for _, k := range []string{"gib_per_s", "cpu_seconds_per_gib", "p50_ms", "p99_ms"} {
			require.Contains(t, r, k)
		}
		require.Greater(t, r["gib_per_s"].(float64), 0.0, mode)
	}
}

func TestVersion(t *testing.T) {
	out, _, code := run(t, "version", "--json")
	require.Equal(t, 0, code)
	var v buildinfo.Info
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.NotEmpty(t, v.Go)
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "4096": 4096, "4K": 4096, "4M": 4 << 20, "4MiB": 4 << 20, "1g": 1 << 30, "2GB": 2 << 30} {
		got, err := humanize.ParseBytes(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "-1", "4X", "M", "99999999999T"} {
		_, err := humanize.ParseBytes(bad)
		require.Error(t, err, bad)
	}
}

// A directory's symbolic links to files are loaded like the files (as
// stage does); a link to nowhere fails naming it; a FIFO is skipped in a
// directory and refused when named.
func TestLoadDirectoryLinksAndSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	p, _ := writeFile(t, dir, "a.bin", 5000)
	require.NoError(t, os.Symlink(p, filepath.Join(dir, "link.bin")))
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "pipe"), 0o600))
	out, stderr, code := run(t, "load", "--json", dir)
	require.Equal(t, 0, code, stderr)
	var res loadJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Files, 2, "a.bin and link.bin")
	require.EqualValues(t, 10000, res.Bytes)

	_, stderr, code = run(t, "load", filepath.Join(dir, "pipe"))
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "not a regular file: a FIFO")

	require.NoError(t, os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "dangling")))
	_, stderr, code = run(t, "load", dir)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "dangling: a symbolic link whose target cannot be read")
}

// The human bench table: a header naming the file, a column row and one
// row per mode asked for; a mode this machine lacks is an error saying why.
func TestBenchHumanOutput(t *testing.T) {
	p, _ := writeFile(t, t.TempDir(), "x.bin", 1<<20)
	out, stderr, code := run(t, "bench", "--runs", "1", "--modes", "posix,loader", p)
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Contains(t, lines[0], p)
	require.Contains(t, lines[0], "1 run per mode", "one run, in the singular")
	rows := benchRows(out)
	require.Contains(t, rows, "mode", "table:\n%s", out)
	for _, col := range []string{"GiB/s", "CPU s/GiB", "IOPS"} {
		require.Contains(t, rows["mode"], col, "table:\n%s", out)
	}
	require.Len(t, strings.Fields(rows["posix"]), 8, "table:\n%s", out)
	require.Len(t, strings.Fields(rows["loader"]), 8, "table:\n%s", out)

	// gds where this machine has a GPU path: its row, as the others; where
	// it has none (no GPU here), an error saying why.
	out, stderr, code = run(t, "bench", "--runs", "1", "--modes", "gds", p)
	if code == 0 {
		rows = benchRows(out)
		require.Contains(t, rows, "gds", "table:\n%s", out)
		// "gds (nvfs)": the mode cuFile ran in follows the name.
		f := strings.Fields(rows["gds"])
		require.Greater(t, len(f), 1, "table:\n%s", out)
		require.Regexp(t, `^\(\w+\)$`, f[1], "table:\n%s", out)
		require.Len(t, f[2:], 7, "table:\n%s", out)
		return
	}
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "mode gds is not available here")
}

// benchRows maps the first word of each line of a bench table to its line.
func benchRows(out string) map[string]string {
	rows := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			rows[f[0]] = l
		}
	}
	return rows
}

// --files-from adds the paths a file (or standard input) lists, one per
// line, to those on the command line.
func TestLoadFilesFrom(t *testing.T) {
	dir := t.TempDir()
	a, _ := writeFile(t, dir, "a.bin", 3000)
	b, _ := writeFile(t, dir, "b.bin", 5000)
	c, _ := writeFile(t, dir, "c.bin", 7000)
	list := filepath.Join(dir, "list.txt")
	require.NoError(t, os.WriteFile(list, []byte(a+"\r\n\n"+b+"\n"), 0o644))
	out, stderr, code := run(t, "load", "--json", "--files-from", list, c)
	require.Equal(t, 0, code, stderr)
	var res loadJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Files, 3)
	require.EqualValues(t, 15000, res.Bytes)
}

// On ramfs (which refuses O_DIRECT) the load's JSON gives the fallback
// reason per file and at the top, and a file under 1 MiB says it was read
// through the page cache for its size.
func TestLoadRamfsReasons(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("ramfs", dir, "ramfs", 0, ""); err != nil {
		t.Skipf("cannot mount ramfs here (needs root): %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	big, _ := writeFile(t, dir, "big.bin", 2<<20+5)
	small, _ := writeFile(t, dir, "small.bin", 100)
	out, stderr, code := run(t, "load", "--json", big, small)
	require.Equal(t, 0, code, stderr)
	var res struct {
		Reason string `json:"reason"`
		Files  []struct {
			Name   string `json:"name"`
			Direct bool   `json:"direct"`
			Reason string `json:"reason"`
		} `json:"files"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Files, 2)
	require.Contains(t, res.Files[0].Reason, "O_DIRECT refused by ramfs")
	require.Contains(t, res.Files[1].Reason, "smaller than 1 MiB")
	require.Contains(t, res.Reason, "O_DIRECT refused by ramfs")
	require.Contains(t, res.Reason, "smaller than 1 MiB")
	for _, f := range res.Files {
		require.False(t, f.Direct, f.Name)
	}
}

// The random mode runs only when named, with the reads and block size
// asked for, and reports IOPS.
func TestBenchRandomMode(t *testing.T) {
	p, _ := writeFile(t, t.TempDir(), "x.bin", 1<<20)
	out, stderr, code := run(t, "bench", "--runs", "1", "--json", "--modes", "random", "--random-reads", "50", "--block-size", "8KiB", p)
	require.Equal(t, 0, code, stderr)
	var rep struct {
		Results []struct {
			Mode  string  `json:"mode"`
			Bytes int64   `json:"bytes"`
			IOPS  float64 `json:"iops"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.Results, 1)
	require.Equal(t, "random", rep.Results[0].Mode)
	require.Equal(t, int64(50*8192), rep.Results[0].Bytes)
	require.Greater(t, rep.Results[0].IOPS, 0.0)

	out, stderr, code = run(t, "bench", "--runs", "1", "--json", p)
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, out, `"random"`, "the random mode runs only when named")

	_, stderr, code = run(t, "bench", "--modes", "random", "--block-size", "5000", p)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "--block-size")
}
