package webdataset

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrManifest reports an index.json that is not a valid manifest: not JSON
// at all, or a "shards" list whose entries lack a name or a 64-hex-digit
// sha256. A manifest that cannot be read must not silently turn the
// checks off, so callers fail on it.
var ErrManifest = errors.New("invalid manifest")

// MaxManifestBytes bounds the manifest read beside shards: an entry is
// about 150 bytes, so this is over a million shards.
const MaxManifestBytes = 256 << 20

// ManifestIndex is a manifest's shards by name: what load, stage and
// stage-to-GPU check a file against, its size before reading it and its
// SHA-256 after. Any JSON that lists {"shards":[{"name","bytes","sha256"}]}
// qualifies (a WebDataset manifest, a manifest of .npy shards).
type ManifestIndex struct {
	// Path is where the manifest was read: a path or URL.
	Path   string
	shards map[string]ShardEntry
}

// ParseManifestIndex decodes the manifest b read from where. JSON of
// another kind (no "shards" list) is not a manifest: nil, nil. Bytes that
// are not JSON, and a shards list with an entry that has no name or whose
// sha256 is not 64 hex digits, are an error wrapping ErrManifest that
// names where.
func ParseManifestIndex(b []byte, where string) (*ManifestIndex, error) {
	var doc struct {
		Shards []ShardEntry `json:"shards"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return nil, nil // JSON of another shape: data, not a manifest
		}
		if errors.As(err, &syntax) || len(b) == 0 {
			return nil, fmt.Errorf("manifest %s: %w: not JSON (%v); fix or remove it", where, ErrManifest, err)
		}
		return nil, fmt.Errorf("manifest %s: %w: %v; fix or remove it", where, ErrManifest, err)
	}
	if doc.Shards == nil {
		return nil, nil
	}
	ix := &ManifestIndex{Path: where, shards: make(map[string]ShardEntry, len(doc.Shards))}
	for i, s := range doc.Shards {
		if _, err := hex.DecodeString(s.SHA256); err != nil || len(s.SHA256) != 64 || s.Name == "" {
			return nil, fmt.Errorf("manifest %s: %w: shard %d (%q) has no name or its sha256 %q is not 64 hex digits; fix or remove the manifest", where, ErrManifest, i, s.Name, s.SHA256)
		}
		s.SHA256 = strings.ToLower(s.SHA256) // digests compare as lowercase hex
		ix.shards[s.Name] = s
	}
	return ix, nil
}

// Lookup returns the entry listed under name (slash-separated, relative to
// the manifest's directory).
func (ix *ManifestIndex) Lookup(name string) (ShardEntry, bool) {
	if ix == nil {
		return ShardEntry{}, false
	}
	e, ok := ix.shards[name]
	return e, ok
}

// Len is the number of shards listed.
func (ix *ManifestIndex) Len() int {
	if ix == nil {
		return 0
	}
	return len(ix.shards)
}

// CheckSize refuses, before it is read, a file whose size differs from the
// one entry lists (ErrShardSize).
func (e ShardEntry) CheckSize(file string, size int64, manifest string) error {
	if size == e.Bytes {
		return nil
	}
	return fmt.Errorf("%s: %w: %d bytes, the manifest lists %d (%s); the file is incomplete or the manifest stale: rewrite the manifest",
		file, ErrShardSize, size, e.Bytes, manifest)
}

// CheckDigest compares the SHA-256 of a file's bytes with entry's
// (ErrShardChecksum); an entry without a digest checks nothing.
func (e ShardEntry) CheckDigest(file, sha256 string, manifest string) error {
	if e.SHA256 == "" || strings.EqualFold(e.SHA256, sha256) {
		return nil
	}
	return fmt.Errorf("%s: %w: the bytes loaded hash to %s, the manifest lists %s (%s); the shard is corrupt or the manifest stale",
		file, ErrShardChecksum, sha256, e.SHA256, manifest)
}
