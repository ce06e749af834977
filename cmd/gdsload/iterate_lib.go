package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/gdsload/gdsload/internal/humanize"
	"github.com/gdsload/gdsload/shards/iterator"
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

// appendJSON appends the line's JSON and a newline to b: byte for byte
// what encoding/json's Encoder writes for it, without reflection. Lines
// are written by the one goroutine that takes samples from the iterator,
// and with many small samples a second encoding/json took a share of its
// time worth saving.
func (l sampleLine) appendJSON(b []byte) []byte {
	b = append(b, `{"key":`...)
	b = appendJSONString(b, l.Key)
	b = append(b, `,"shard":`...)
	b = appendJSONString(b, l.Shard)
	b = append(b, `,"epoch":`...)
	b = strconv.AppendInt(b, l.Epoch, 10)
	b = append(b, `,"position":`...)
	b = strconv.AppendInt(b, l.Position, 10)
	if l.Padding {
		b = append(b, `,"padding":true`...)
	}
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, l.Bytes, 10)
	return append(b, "}\n"...)
}

// appendJSONString appends s as encoding/json quotes it: printable ASCII
// that needs no escape (the usual key or shard name) as it is, anything
// else through encoding/json itself (escapes, HTML-safe <, > and &,
// invalid UTF-8).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
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
