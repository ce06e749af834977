package main

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/miniotest"
)

// A load request naming a cache folder reads an s3:// checkpoint from
// MinIO once: the second load is a hit, and MinIO serves it no GET.
func TestLoadRequestThroughCache(t *testing.T) {
	t.Setenv("GDSLOAD_CACHE", "")
	mc := miniotest.StartForTest(t, 1)
	mc.SetEnv(t)
	ctx := context.Background()
	require.NoError(t, mc.MakeBucket(ctx, "models"))
	b, err := os.ReadFile("../testdata/model.safetensors")
	require.NoError(t, err)
	_, err = mc.Put(ctx, "models", "model.safetensors", b)
	require.NoError(t, err)
	dir := t.TempDir()
	for i, want := range []struct{ misses, hits, gets int64 }{{1, 0, 1}, {0, 1, 0}} {
		before, err := mc.Traffic(ctx)
		require.NoError(t, err)
		out, err := lib.load(ctx, loadRequest{Path: "s3://models/model.safetensors", Device: "cpu", cacheRequest: cacheRequest{Cache: dir}})
		require.NoError(t, err)
		after, err := mc.Traffic(ctx)
		require.NoError(t, err)
		var res struct {
			Stats struct {
				Cache *struct {
					Hits   int64 `json:"hits"`
					Misses int64 `json:"misses"`
				} `json:"cache"`
			} `json:"stats"`
		}
		require.NoError(t, json.Unmarshal(out, &res))
		require.NotNil(t, res.Stats.Cache, "load %d", i)
		assert.Equal(t, want.misses, res.Stats.Cache.Misses, "load %d", i)
		assert.Equal(t, want.hits, res.Stats.Cache.Hits, "load %d", i)
		assert.Equal(t, want.gets, after.Sub(before).GetObjects, "load %d: MinIO's count", i)
	}
	_, err = lib.load(ctx, loadRequest{Path: "s3://models/model.safetensors", Device: "cpu", cacheRequest: cacheRequest{Cache: dir, CacheLimit: -1}})
	require.Error(t, err)
	assert.Equal(t, statusInvalid, statusOf(err))
}
