package webdataset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdsload/gdsload/internal/testenv"
	"github.com/stretchr/testify/require"
)

// member is one file to put in a test tar, in order.
type tmember struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
	Dir  bool   `json:"dir"`
}

// testMembers returns members covering the grouping rules; long adds a key
// whose base name alone is over 100 bytes (not storable in USTAR).
func testMembers(long bool) []tmember {
	var ms []tmember
	ms = append(ms, tmember{Name: "a/", Dir: true}, tmember{Name: "a/b/", Dir: true})
	for i := range 5 {
		k := fmt.Sprintf("a/b/x%03d", i)
		ms = append(ms,
			tmember{Name: k + ".cls", Data: []byte(fmt.Sprint(i))},
			tmember{Name: k + ".PNG", Data: bytes.Repeat([]byte{byte(i)}, 700+i)},
			tmember{Name: k + ".seg.png", Data: []byte(strings.Repeat("s", i))})
	}
	deep := strings.Repeat("p", 60) + "/" + strings.Repeat("q", 60) + "/k"
	ms = append(ms, tmember{Name: deep + ".txt", Data: []byte("deep")})
	if long {
		k := "l/" + strings.Repeat("long", 30)
		ms = append(ms, tmember{Name: k + ".txt", Data: []byte("long name")}, tmember{Name: k + ".json", Data: []byte("{}")})
	}
	ms = append(ms,
		tmember{Name: "README", Data: []byte("skipped: no dot")},
		tmember{Name: "__meta__/info.json", Data: []byte("skipped: metadata")},
		tmember{Name: "z.txt", Data: []byte("last")})
	return ms
}

// expectSamples applies WebDataset's grouping to members, as the oracle.
func expectSamples(ms []tmember) []Sample {
	var out []Sample
	for _, m := range ms {
		key, ext, ok := SplitKey(m.Name)
		if m.Dir || !ok || isMeta(m.Name) {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Key != key {
			out = append(out, Sample{Key: key})
		}
		s := &out[len(out)-1]
		s.Fields = append(s.Fields, Field{Ext: strings.ToLower(ext), Data: m.Data})
	}
	return out
}

// writeTree writes the members as files under dir.
func writeTree(t *testing.T, dir string, ms []tmember) {
	t.Helper()
	for _, m := range ms {
		p := filepath.Join(dir, filepath.FromSlash(m.Name))
		if m.Dir {
			require.NoError(t, os.MkdirAll(p, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, m.Data, 0o644))
	}
}

// gnuTar archives ms (in order) with GNU tar in the given format.
func gnuTar(t *testing.T, format string, ms []tmember) []byte {
	t.Helper()
	testenv.Tool(t, "tar", "tar (GNU tar)")
	src := t.TempDir()
	writeTree(t, src, ms)
	out := filepath.Join(t.TempDir(), "out.tar")
	args := []string{"--format=" + format, "--no-recursion", "-cf", out, "-C", src}
	for _, m := range ms {
		args = append(args, strings.TrimSuffix(m.Name, "/"))
	}
	run(t, nil, "tar", args...)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	return b
}

// pyTar archives ms with Python's tarfile in the given format constant.
func pyTar(t *testing.T, format string, ms []tmember) []byte {
	t.Helper()
	testenv.Tool(t, "python3", "python3")
	spec, err := json.Marshal(ms)
	require.NoError(t, err)
	script := `
import base64, io, json, sys, tarfile
ms = json.load(sys.stdin)
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.` + format + `) as tf:
    for m in ms:
        ti = tarfile.TarInfo(m["name"].rstrip("/"))
        if m["dir"]:
            ti.type = tarfile.DIRTYPE
            tf.addfile(ti)
            continue
        data = base64.b64decode(m["data"] or "")
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
sys.stdout.buffer.write(buf.getvalue())
`
	return run(t, spec, "python3", "-c", script)
}

// compressWith pipes data through a compression tool ("gzip" or "zstd").
func compressWith(t *testing.T, tool string, data []byte) []byte {
	t.Helper()
	testenv.Tool(t, tool, tool)
	if tool == "zstd" {
		return run(t, data, "zstd", "-q", "-c", "-3")
	}
	return run(t, data, tool, "-c")
}

func run(t *testing.T, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %v: %v\n%s", name, args, err, stderr.String())
	return out
}

// readAll reads every sample of a shard stream.
func readAll(r io.Reader, c Compression, opts ...Option) ([]Sample, error) {
	rd, err := NewReader(r, c, opts...)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	var out []Sample
	for {
		s, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, *s)
	}
}

func equalSamples(t *testing.T, got, want []Sample) {
	t.Helper()
	require.Len(t, got, len(want), "got %d samples, want %d\ngot keys: %v\nwant keys: %v", len(got), len(want), keys(got), keys(want))
	for i := range want {
		g, w := got[i], want[i]
		require.EqualValues(t, w.Key, g.Key, "sample %d: got %q with %d fields, want %q with %d", i, g.Key, len(g.Fields), w.Key, len(w.Fields))
		require.Len(t, g.Fields, len(w.Fields), "sample %d: got %q with %d fields, want %q with %d", i, g.Key, len(g.Fields), w.Key, len(w.Fields))
		for j := range w.Fields {
			require.EqualValues(t, w.Fields[j].Ext, g.Fields[j].Ext, "sample %q field %d: got %q (%d bytes), want %q (%d bytes)", w.Key, j, g.Fields[j].Ext, len(g.Fields[j].Data), w.Fields[j].Ext, len(w.Fields[j].Data))
			require.True(t, bytes.Equal(g.Fields[j].Data, w.Fields[j].Data), "sample %q field %d: got %q (%d bytes), want %q (%d bytes)", w.Key, j, g.Fields[j].Ext, len(g.Fields[j].Data), w.Fields[j].Ext, len(w.Fields[j].Data))
		}
	}
}

func keys(ss []Sample) []string {
	var k []string
	for _, s := range ss {
		k = append(k, s.Key)
	}
	return k
}
