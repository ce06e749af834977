package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/stretchr/testify/require"
)

// gdsload.h's ABI minor version is the Go side's.
func TestHeaderMinorAgrees(t *testing.T) {
	h, err := os.ReadFile("gdsload.h")
	require.NoError(t, err)
	m := regexp.MustCompile(`#define GDSLOAD_ABI_MINOR (\d+)`).FindSubmatch(h)
	require.NotNil(t, m, "gdsload.h defines GDSLOAD_ABI_MINOR")
	require.Equal(t, fmt.Sprint(abiMinor), string(m[1]))
}

// A fetch on a handle never opened, or closed, is a request error; a
// fetch of a missing tensor names it.
func TestFetchRefusesWhatItCannotServe(t *testing.T) {
	_, err := lib.fetch(context.Background(), fetchRequest{Handle: 1 << 40})
	require.ErrorAs(t, err, new(requestError))
	p := writeOne(t)
	doc, err := lib.openLazy(context.Background(), openRequest{Path: p})
	require.NoError(t, err)
	var res openResult
	require.NoError(t, json.Unmarshal(doc, &res))
	require.Equal(t, int64(len(readAll(t, p)))-12, res.HeaderBytes, "the header is all but the data")
	_, err = lib.fetch(context.Background(), fetchRequest{Handle: res.Handle, Requests: []fetchItem{{Name: "nope"}}})
	require.ErrorAs(t, err, new(requestError))
	require.ErrorContains(t, err, `"nope"`)
	require.NoError(t, closeLazy(res.Handle))
	_, err = lib.fetch(context.Background(), fetchRequest{Handle: res.Handle})
	require.ErrorAs(t, err, new(requestError))
}

// writeOne writes a safetensors file of one F32 tensor of 3 values (12
// bytes of data) and returns its path.
func writeOne(t *testing.T) string {
	t.Helper()
	var file bytes.Buffer
	require.NoError(t, safetensors.Encode(&file, []safetensors.TensorData{{Name: "w", Dtype: "F32", Shape: []int64{3}, Data: make([]byte, 12)}}, nil))
	p := filepath.Join(t.TempDir(), "w.safetensors")
	require.NoError(t, os.WriteFile(p, file.Bytes(), 0o644))
	return p
}

func readAll(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}
