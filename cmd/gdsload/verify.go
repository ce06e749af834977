package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/webdataset"
)

// manifestChecks finds the shard manifest (index.json) beside each local
// file and returns the entries that list them, by path. A manifest that
// cannot be read is an error: it would otherwise silently turn the check
// off.
func manifestChecks(paths []string) (map[string]webdataset.ShardEntry, error) {
	checks := map[string]webdataset.ShardEntry{}
	byDir := map[string]map[string]webdataset.ShardEntry{}
	for _, p := range paths {
		if isRemote(p) {
			continue
		}
		dir := filepath.Dir(p)
		entries, seen := byDir[dir]
		if !seen {
			mp := filepath.Join(dir, webdataset.ManifestName)
			if _, err := os.Stat(mp); err == nil {
				m, err := webdataset.ReadManifest(mp)
				if err != nil {
					return nil, fmt.Errorf("%w; fix it with 'gdsload manifest %s', or skip the check with --verify=false", err, dir)
				}
				entries = map[string]webdataset.ShardEntry{}
				for _, e := range m.Shards {
					entries[e.Name] = e
				}
			}
			byDir[dir] = entries
		}
		if e, ok := entries[filepath.Base(p)]; ok {
			checks[p] = e
		}
	}
	return checks, nil
}

// checkSizes refuses, before anything is read, a file whose size is not
// the one its manifest lists.
func checkSizes(srcs []loader.Source, checks map[string]webdataset.ShardEntry) error {
	for _, s := range srcs {
		if e, ok := checks[s.Name()]; ok && s.Size() != e.Bytes {
			return fmt.Errorf("%s: %w: %d bytes, the manifest lists %d; the shard is incomplete or the manifest stale (gdsload manifest rewrites it)",
				s.Name(), webdataset.ErrShardSize, s.Size(), e.Bytes)
		}
	}
	return nil
}

// checkDigests compares each loaded file's SHA-256 with its manifest entry.
func checkDigests(r *loader.Result, checks map[string]webdataset.ShardEntry) error {
	for _, f := range r.Files {
		if e, ok := checks[f.Name]; ok && e.SHA256 != "" && f.SHA256 != e.SHA256 {
			return fmt.Errorf("%s: %w: the bytes loaded hash to %s, the manifest lists %s; the shard is corrupt or the manifest stale",
				f.Name, webdataset.ErrShardChecksum, f.SHA256, e.SHA256)
		}
	}
	return nil
}
