package main

import (
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/cache"
)

// cacheRequest is the node-local cache a request reads s3:// and
// rdmafs:// files through (gdsload.h): a folder, and the most bytes it may
// hold (0: cache.DefaultLimitFraction of its file system's free space).
// No folder, no cache.
type cacheRequest struct {
	Cache      string `json:"cache"`
	CacheLimit int64  `json:"cache_limit"`
	// CacheAhead is a dataset's iterator.Options.CacheAhead, used only
	// with a cache.
	CacheAhead int `json:"cache_ahead"`
}

// cacheAhead is the shards to download ahead, 0 without a cache.
func (r cacheRequest) cacheAhead() int {
	if r.Cache == "" {
		return 0
	}
	return r.CacheAhead
}

// open opens the cache, nil when the request names none, with the vfs
// options that read through it.
func (r cacheRequest) open() (*cache.Cache, []vfs.Option, error) {
	if r.Cache == "" {
		return nil, nil, nil
	}
	var opts []cache.Option
	if r.CacheLimit != 0 {
		opts = append(opts, cache.WithLimit(r.CacheLimit))
	}
	c, err := cache.Open(r.Cache, opts...)
	if err != nil {
		return nil, nil, requestError{err.Error()}
	}
	return c, []vfs.Option{cache.WithCache(c)}, nil
}

// cacheStats is what c did, nil without a cache.
func cacheStats(c *cache.Cache) *cache.Stats {
	if c == nil {
		return nil
	}
	s := c.Stats()
	return &s
}
