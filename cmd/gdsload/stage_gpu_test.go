package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Staging into gpu:N loads the files into device memory and checks the
// digests of what landed (copied back) against the sources' manifest.
func TestStageIntoGPUThroughTestDouble(t *testing.T) {
	ctl := useFakeCUDA(t)
	require.NoError(t, ctl.Do("mode=nvfs"))
	src := t.TempDir()
	want := map[string]string{}
	var entries []string
	for name, n := range map[string]int{"shard-0.tar": 4097, "shard-1.tar": 2<<20 + 1, "shard-2.tar": 10} {
		_, sum := writeFile(t, src, name, n)
		want[name] = sum
		entries = append(entries, fmt.Sprintf(`{"name":%q,"bytes":%d,"samples":1,"sha256":%q}`, name, n, sum))
	}
	manifest := fmt.Sprintf(`{"format":"webdataset","version":1,"shards":[%s,%s,%s]}`, entries[0], entries[1], entries[2])
	require.NoError(t, os.WriteFile(filepath.Join(src, "index.json"), []byte(manifest), 0o644))

	out, stderr, code := run(t, "stage", "--json", src+"/", "gpu:0")
	require.Equal(t, 0, code, stderr)
	var res stageJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Equal(t, 4, res.Files, "three shards and the manifest")
	checked := 0
	for _, e := range res.Entries {
		if w, ok := want[e.Name]; ok {
			require.Equal(t, w, e.Digest, e.Name)
			checked++
		}
	}
	require.Equal(t, len(want), checked, "every shard's digest came back from the GPU")

	// A manifest that disagrees with the bytes fails, naming the file.
	bad := filepath.Join(src, "shard-1.tar")
	require.NoError(t, os.WriteFile(bad, make([]byte, 2<<20+1), 0o644))
	_, stderr, code = run(t, "stage", src+"/", "gpu:0")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "shard-1.tar")
	require.Contains(t, stderr, "manifest")
}
