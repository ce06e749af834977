package webdataset

import (
	"context"
	"path"
	"strings"

	"github.com/gdsload/gdsload/vfs"
)

// ShardFilesAt is ShardFiles for a directory, prefix or local path that m
// serves (s3://BUCKET/PREFIX/, rdmafs://HOST:PORT/DIR): the shards below
// dir, subfolders included but for those whose names begin with a dot, as
// slash-separated paths relative to dir sorted by name. Shards that
// UnreadShard refuses are an error wrapping ErrUnreadShards naming each.
func ShardFilesAt(ctx context.Context, m *vfs.Mux, dir string) ([]string, error) {
	ents, err := m.Walk(ctx, dir)
	if err != nil {
		return nil, err
	}
	var names, unread, how []string
	for _, e := range ents {
		if !e.Info.Mode().IsRegular() || inDotFolder(e.Rel) {
			continue
		}
		base := path.Base(e.Rel)
		if c, ok := UnreadShard(base); ok {
			unread, how = append(unread, e.Rel), append(how, c)
		} else if IsShardName(base) {
			names = append(names, e.Rel) // Walk sorts by name
		}
	}
	if len(unread) > 0 {
		return nil, unreadShardsError(dir, unread, how)
	}
	return names, nil
}

// inDotFolder reports whether the slash-separated rel lies in a folder
// whose name begins with a dot.
func inDotFolder(rel string) bool {
	dirs := strings.Split(rel, "/")
	for _, d := range dirs[:len(dirs)-1] {
		if strings.HasPrefix(d, ".") {
			return true
		}
	}
	return false
}
