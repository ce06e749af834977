package main

// load --checksum lines (whole files only, odd names escaped, checked by
// GNU sha256sum) and what a load of a staged directory leaves out.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/testenv"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/gdsload/gdsload/stage"
)

// load --checksum writes whole files'
// digests as sha256sum does, names escaped, so sha256sum -c checks them;
// a checkpoint's digest covers its data region and is labelled with it.
func TestLoadChecksumLines(t *testing.T) {
	dir := t.TempDir()
	for i, name := range []string{"plain.bin", "new\nline.bin", `back\slash.bin`} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), bytes.Repeat([]byte{byte(i)}, 5000+i), 0o644))
	}
	out, stderr, code := run(t, "load", "--checksum", "sha256", dir)
	require.Equal(t, 0, code, stderr)
	sums := out[strings.Index(out, "\n\n")+2:]
	require.Contains(t, sums, "new\\nline.bin\n")
	require.Contains(t, sums, `back\\slash.bin`)
	for _, l := range strings.Split(strings.TrimSuffix(sums, "\n"), "\n") {
		require.Equal(t, strings.Contains(l, `\`), strings.HasPrefix(l, `\`), "an escaped line begins with a backslash: %q", l)
	}
	sha256sumCheck(t, sums, 3)

	ck, region := writeCheckpoint(t, dir)
	file := mustRead(t, ck)
	h, err := safetensors.ParseHeader(bytes.NewReader(file), int64(len(file)))
	require.NoError(t, err)
	out, stderr, code = run(t, "load", "--checksum", "sha256", ck)
	require.Equal(t, 0, code, stderr)
	line := out[strings.Index(out, "\n\n")+2:]
	require.True(t, strings.HasPrefix(line, "sha256 of bytes ["), "a data-region digest is labelled: %q", line)
	require.Contains(t, line, region+"  "+ck+"\n")
	require.Contains(t, line, "bytes ["+strconv.FormatInt(h.DataOffset, 10)+", "+strconv.FormatInt(h.DataOffset+h.DataLen, 10)+")")
	sha256sumCheck(t, line, 0)

	out, stderr, code = run(t, "load", "--checksum", "sha256", "--json", ck)
	require.Equal(t, 0, code, stderr)
	var res struct {
		Files []struct {
			Offset  int64 `json:"offset"`
			Partial bool  `json:"partial"`
		} `json:"files"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.True(t, res.Files[0].Partial)
	require.Equal(t, h.DataOffset, res.Files[0].Offset)
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}

// sha256sumCheck runs GNU sha256sum -c on sums: want lines must pass, or,
// with want 0, the lines must be refused as unreadable, never reported
// FAILED.
func sha256sumCheck(t *testing.T, sums string, want int) {
	t.Helper()
	if v, err := exec.Command(testenv.Tool(t, "sha256sum", "coreutils"), "--version").Output(); err != nil || !strings.Contains(string(v), "GNU coreutils") {
		testenv.Missing(t, "no GNU sha256sum here (%v): install coreutils", err)
	}
	cmd := exec.Command("sha256sum", "-c", "-")
	cmd.Stdin = strings.NewReader(sums)
	out, err := cmd.CombinedOutput()
	if want > 0 {
		require.NoError(t, err, "sha256sum -c:\n%s\nof\n%s", out, sums)
		require.Equal(t, want, strings.Count(string(out), ": OK"), string(out))
		return
	}
	require.Error(t, err, string(out))
	require.NotContains(t, string(out), "FAILED")
	require.Contains(t, string(out), "no properly formatted")
}

// Loading a staged directory leaves out the stage's sidecar folder, unless
// it is named itself.
func TestLoadSkipsStageSidecar(t *testing.T) {
	src := t.TempDir()
	writeFile(t, src, "a.bin", 3000)
	writeFile(t, src, "sub/b.bin", 5000)
	dst := filepath.Join(t.TempDir(), "staged")
	_, stderr, code := run(t, "stage", src+"/", dst)
	require.Equal(t, 0, code, stderr)
	side, err := os.ReadDir(filepath.Join(dst, stage.SidecarName))
	require.NoError(t, err)
	require.NotEmpty(t, side, "the stage wrote its journal")

	out, stderr, code := run(t, "load", "--json", dst)
	require.Equal(t, 0, code, stderr)
	var res loadJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Files, 2, "%+v", res.Files)
	require.EqualValues(t, 8000, res.Bytes)

	_, stderr, code = run(t, "load", filepath.Join(dst, stage.SidecarName))
	require.Equal(t, 0, code, "the sidecar named itself loads: %s", stderr)
}

// -q/--quiet, -v/--verbose and --log-level are global: quiet leaves out
// progress and summaries on stderr but never stdout, verbose adds the
// library's reasons.
