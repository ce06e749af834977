package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// load --json reports bytes_read: for a checkpoint its header and data
// (the whole file), for plain files their bytes.
func TestLoadJSONReportsBytesRead(t *testing.T) {
	dir := t.TempDir()
	ck, _ := writeCheckpoint(t, dir)
	p, _ := writeFile(t, dir, "a.bin", 5000)
	for _, c := range []struct {
		path string
		want int64
	}{
		{ck, int64(len(mustRead(t, ck)))},
		{p, 5000},
	} {
		out, stderr, code := run(t, "load", "--json", c.path)
		require.Equal(t, 0, code, stderr)
		var res struct {
			BytesRead *int64 `json:"bytes_read"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		require.NotNil(t, res.BytesRead, "bytes_read in %s", out)
		require.Equal(t, c.want, *res.BytesRead, c.path)
	}
}
