package checkpoint_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/checkpoint"
)

func f32s(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// Load a sharded checkpoint through its index into host memory (a GPU
// works the same with another allocator, see loader.Landing.Allocator),
// read a tensor as []float32, and save a merged copy as one file.
func Example_loadAndSaveMerged() {
	dir, _ := os.MkdirTemp("", "ckpt-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	// A small sharded checkpoint to start from: two files and an index.
	_, err := checkpoint.SaveSharded(ctx, dir, []checkpoint.SaveTensor{
		{Name: "layer.0.weight", Dtype: "F32", Shape: []int64{2, 2}, Data: loader.HostMemory(f32s(1, 2, 3, 4))},
		{Name: "layer.1.weight", Dtype: "F32", Shape: []int64{2}, Data: loader.HostMemory(f32s(5, 6))},
	}, map[string]string{"format": "pt"}, checkpoint.ShardedOptions{MaxShardBytes: 16})
	if err != nil {
		log.Fatal(err)
	}

	c, err := checkpoint.Open(ctx, filepath.Join(dir, "model.safetensors.index.json"), checkpoint.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	l, err := c.Load(ctx, checkpoint.HostAllocator, loader.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close() // before c.Close: the views live in l's memory
	w, err := checkpoint.View[float32](l, "layer.1.weight")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(c.Files()), "files;", "layer.1.weight =", w)

	merged := filepath.Join(dir, "merged.safetensors")
	if _, err := l.Save(ctx, merged, l.Metadata, loader.SaveOptions{}); err != nil {
		log.Fatal(err)
	}
	one, err := checkpoint.Open(ctx, merged, checkpoint.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer one.Close()
	fmt.Println(len(one.Files()), "file;", len(one.Files()[0].Tensors), "tensors;", one.Bytes(), "bytes")
	// Output:
	// 2 files; layer.1.weight = [5 6]
	// 1 file; 2 tensors; 24 bytes
}
