package checkpoint

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/stretchr/testify/require"
)

// tensor makes a tensor of random bytes, sized by dtype and shape.
func tensor(rng *rand.Rand, name, dtype string, shape ...int64) safetensors.TensorData {
	bits, ok := safetensors.DtypeBits(dtype)
	if !ok {
		panic("unknown dtype " + dtype)
	}
	n := bits
	for _, d := range shape {
		n *= d
	}
	data := make([]byte, n/8)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	return safetensors.TensorData{Name: name, Dtype: dtype, Shape: shape, Data: data}
}

// writeSafetensors encodes tensors into dir/name and returns the path.
func writeSafetensors(t *testing.T, dir, name string, tensors []safetensors.TensorData, meta map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, safetensors.Encode(&buf, tensors, meta))
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
	return p
}

// writeIndex writes dir/name as a safetensors index with weightMap.
func writeIndex(t *testing.T, dir, name string, weightMap map[string]string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 0}, "weight_map": weightMap})
	require.NoError(t, err)
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

// sharded is a sharded checkpoint written by a test.
type sharded struct {
	dir, index string
	shards     map[string][]safetensors.TensorData // shard name -> tensors
	weightMap  map[string]string
}

// want returns every tensor by name.
func (s *sharded) want() map[string]safetensors.TensorData {
	out := map[string]safetensors.TensorData{}
	for _, ts := range s.shards {
		for _, t := range ts {
			out[t.Name] = t
		}
	}
	return out
}

// writeSharded writes a three-shard checkpoint whose tensors have odd
// sizes (so data regions and tensors start and end unaligned), a scalar,
// an empty tensor and, in the first shard, enough bytes for several chunks
// of 64 KiB.
func writeSharded(t *testing.T) *sharded { return writeShardedIn(t, t.TempDir()) }

// writeShardedIn is writeSharded into dir.
func writeShardedIn(t *testing.T, dir string) *sharded {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	s := &sharded{dir: dir, weightMap: map[string]string{}}
	s.shards = map[string][]safetensors.TensorData{
		"model-00001-of-00003.safetensors": {
			tensor(rng, "embed.weight", "BF16", 333, 257),
			tensor(rng, "embed.bias", "F32", 257),
			tensor(rng, "odd", "U8", 4099),
		},
		"model-00002-of-00003.safetensors": {
			tensor(rng, "layer.0.w", "F16", 17, 31),
			tensor(rng, "layer.0.scale", "F64"),
			tensor(rng, "layer.0.empty", "I32", 0, 5),
		},
		"model-00003-of-00003.safetensors": {
			tensor(rng, "head", "F8_E4M3", 7, 3),
		},
	}
	for name, ts := range s.shards {
		writeSafetensors(t, s.dir, name, ts, map[string]string{"format": "pt"})
		for _, tt := range ts {
			s.weightMap[tt.Name] = name
		}
	}
	s.index = writeIndex(t, s.dir, "model.safetensors.index.json", s.weightMap)
	return s
}

func newRNG() *rand.Rand { return rand.New(rand.NewPCG(3, 4)) }
