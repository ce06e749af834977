package webdataset

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// SelectShards is ShardFiles for files listed elsewhere (a walk of an
// object-store prefix or a remote directory): given the slash-separated
// paths of the regular files below dir, relative to it and sorted by name,
// it returns the shards among them, but for those in folders whose names
// begin with a dot, in the same order. Shards that UnreadShard refuses are
// an error wrapping ErrUnreadShards naming each.
func SelectShards(dir string, rels []string) ([]string, error) {
	var names, unread, how []string
	for _, rel := range rels {
		if inDotFolder(rel) {
			continue
		}
		base := path.Base(rel)
		if c, ok := UnreadShard(base); ok {
			unread, how = append(unread, rel), append(how, c)
		} else if IsShardName(base) {
			names = append(names, rel)
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

// CheckListed compares names, the shards found in dir (SelectShards or
// ShardFiles: subfolders included), with those man lists, and returns an
// error wrapping ErrUnlisted that names each shard found but not listed,
// so that a verified manifest is also a complete one.
func CheckListed(dir string, names []string, man *Manifest) error {
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
