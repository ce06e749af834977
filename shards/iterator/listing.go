package iterator

import (
	"context"

	"github.com/gdsload/gdsload/shards/webdataset"
	"github.com/gdsload/gdsload/vfs"
)

// ShardFilesAt is webdataset.ShardFiles for a directory, prefix or local
// path that m serves (s3://BUCKET/PREFIX/, rdmafs://HOST:PORT/DIR): the
// shards below dir, subfolders included but for those whose names begin
// with a dot, as slash-separated paths relative to dir sorted by name.
// Shards that webdataset.UnreadShard refuses are an error wrapping
// webdataset.ErrUnreadShards naming each.
func ShardFilesAt(ctx context.Context, m *vfs.Mux, dir string) ([]string, error) {
	ents, err := m.Walk(ctx, dir)
	if err != nil {
		return nil, err
	}
	rels := make([]string, 0, len(ents))
	for _, e := range ents {
		if e.Info.Mode().IsRegular() {
			rels = append(rels, e.Rel) // Walk sorts by name
		}
	}
	return webdataset.SelectShards(dir, rels)
}
