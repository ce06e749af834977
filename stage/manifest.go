package stage

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// manifestName is the shards manifest kept beside the shards.
const manifestName = "index.json"

// manifest is what staging needs of a shards manifest: the size and sha256
// of each shard, by name relative to the manifest's directory. Any format
// that lists {"shards":[{"name","bytes","sha256"}]} qualifies (WebDataset,
// .npy shards).
type manifest struct {
	path   string
	shards map[string]manifestShard
}

type manifestShard struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// readManifest reads p; it returns nil, nil when p does not exist or is a
// JSON file of another kind (no "shards" list), and an error when it claims
// to be a manifest and is not a valid one.
func readManifest(p string) (*manifest, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading manifest %s: %w", p, err)
	}
	return parseManifest(b, p)
}

// parseManifest decodes the manifest b read from p, as readManifest.
func parseManifest(b []byte, p string) (*manifest, error) {
	var doc struct {
		Format string          `json:"format"`
		Shards []manifestShard `json:"shards"`
	}
	if json.Unmarshal(b, &doc) != nil || doc.Shards == nil {
		return nil, nil
	}
	m := &manifest{path: p, shards: make(map[string]manifestShard, len(doc.Shards))}
	for i, s := range doc.Shards {
		if _, err := hex.DecodeString(s.SHA256); err != nil || len(s.SHA256) != 64 || s.Name == "" {
			return nil, fmt.Errorf("manifest %s: shard %d (%q) has no name or its sha256 %q is not 64 hex digits; fix or remove the manifest", p, i, s.Name, s.SHA256)
		}
		s.SHA256 = strings.ToLower(s.SHA256) // digests compare as lowercase hex
		m.shards[s.Name] = s
	}
	return m, nil
}
