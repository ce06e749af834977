//go:build !linux

package iterator

import "github.com/gdsload/gdsload/loader"

// shardBuffer returns a page-aligned, garbage-collected buffer of n bytes
// for a whole shard (see buffer_linux.go).
func shardBuffer(n int) []byte { return loader.AlignedBuffer(n) }
