package webdataset

import (
	"context"
	"errors"
	"fmt"
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

// ErrUnlisted reports shards in a manifest's folder that the manifest
// does not list: a reader that goes by the manifest never sees them.
var ErrUnlisted = errors.New("shards the manifest does not list")

// CheckListed compares the shards in dir (ShardFilesAt: subfolders
// included) with those man lists, and returns an error wrapping
// ErrUnlisted that names each shard found but not listed, so that a
// verified manifest is also a complete one.
func CheckListed(ctx context.Context, m *vfs.Mux, dir string, man *Manifest) error {
	names, err := ShardFilesAt(ctx, m, dir)
	if err != nil {
		return err
	}
	listed := make(map[string]bool, len(man.Shards))
	for _, s := range man.Shards {
		listed[s.Name] = true
	}
	var extra []string
	for _, n := range names {
		if !listed[n] {
			extra = append(extra, n)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	shown := extra
	if len(shown) > 10 {
		shown = shown[:10]
	}
	more := ""
	if len(extra) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(extra)-len(shown))
	}
	return fmt.Errorf("webdataset: %s holds %w (%d): %s%s; rewrite the manifest to include them, or move them out of the folder",
		dir, ErrUnlisted, len(extra), strings.Join(shown, ", "), more)
}
