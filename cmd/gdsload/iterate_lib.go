package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/gdsload/gdsload/internal/humanize"
	"github.com/gdsload/gdsload/internal/jsontext"
	"github.com/gdsload/gdsload/shards/iterator"
	"github.com/gdsload/gdsload/vfs/cache"
)

// sampleLine is one --json output line per sample.
type sampleLine struct {
	Key      string `json:"key"`
	Shard    string `json:"shard"`
	Epoch    int64  `json:"epoch"`
	Position int64  `json:"position"`
	Padding  bool   `json:"padding,omitempty"`
	Bytes    int64  `json:"bytes"`
}

// appendJSON appends the line and a newline to b, byte for byte what
// encoding/json's Encoder writes, without its reflection, which costs
// several times as much on the goroutine that takes every sample
// (docs/PERFORMANCE-NOTES.md, cmd/gdsload).
func (l sampleLine) appendJSON(b []byte) []byte {
	b = jsontext.AppendString(append(b, `{"key":`...), l.Key)
	b = jsontext.AppendString(append(b, `,"shard":`...), l.Shard)
	b = strconv.AppendInt(append(b, `,"epoch":`...), l.Epoch, 10)
	b = strconv.AppendInt(append(b, `,"position":`...), l.Position, 10)
	if l.Padding {
		b = append(b, `,"padding":true`...)
	}
	b = strconv.AppendInt(append(b, `,"bytes":`...), l.Bytes, 10)
	return append(b, "}\n"...)
}

// iterateSummary is the last --json line: totals and the final state.
type iterateSummary struct {
	Samples     int64          `json:"samples"`
	Bytes       int64          `json:"bytes"`
	Seconds     float64        `json:"seconds"`
	SamplesPerS float64        `json:"samples_per_s"`
	MBPerS      float64        `json:"mb_per_s"`
	Rank        int            `json:"rank"`
	WorldSize   int            `json:"world_size"`
	SHA256      string         `json:"sha256,omitempty"` // --checksum sha256
	State       iterator.State `json:"state"`
	Cache       *cache.Stats   `json:"cache,omitempty"` // --cache
}

func newSummary(samples, bytes int64, elapsed time.Duration) iterateSummary {
	s := iterateSummary{Samples: samples, Bytes: bytes, Seconds: elapsed.Seconds()}
	if sec := elapsed.Seconds(); sec > 0 {
		s.SamplesPerS = float64(samples) / sec
		s.MBPerS = float64(bytes) / 1e6 / sec
	}
	return s
}

// String is the human line printed to stderr.
func (s iterateSummary) String() string {
	line := fmt.Sprintf("iterate: rank %d/%d: %s, %s in %.2fs: %.0f samples/s, %.1f MB/s; state epoch %d, consumed %d",
		s.Rank, s.WorldSize, humanize.Count(s.Samples, "sample"), humanize.Bytes(s.Bytes), s.Seconds, s.SamplesPerS, s.MBPerS, s.State.Epoch, s.State.Consumed)
	if s.SHA256 != "" {
		line += "; sha256 " + s.SHA256
	}
	return line
}
