package loader

import (
	"fmt"
	"time"

	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/internal/stats"
)

// Result describes a finished load. Its JSON form is what
// `gdsload load --json` prints.
type Result struct {
	Bytes            int64        `json:"bytes"`
	Seconds          float64      `json:"seconds"`
	GiBPerS          float64      `json:"gib_per_s"`
	CPUSeconds       float64      `json:"cpu_seconds"`
	CPUSecondsPerGiB float64      `json:"cpu_seconds_per_gib"`
	P50Ms            float64      `json:"p50_ms"`
	P99Ms            float64      `json:"p99_ms"`
	Chunks           int          `json:"chunks"`
	Route            Route        `json:"path"`
	Reason           string       `json:"reason"`
	GDSMode          cufile.Mode  `json:"gds_mode,omitempty"` // cuFile's mode (p2pdma, nvfs, compat) when files took the gds path
	Files            []FileResult `json:"files"`
	// Latencies holds every chunk's latency, sorted.
	Latencies []time.Duration `json:"-"`
}

// FileResult is one job of a load.
type FileResult struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
	// Offset is the file offset of the job's first byte; Partial is set
	// when the job covered less than the whole file (a checkpoint's data
	// region), so that its digest covers Bytes bytes from Offset, not the
	// file that sha256sum hashes.
	Offset  int64  `json:"offset,omitempty"`
	Partial bool   `json:"partial,omitempty"`
	Route   Route  `json:"path"`
	Direct  bool   `json:"direct"`
	Reason  string `json:"reason"`
	// GDSMode is cuFile's mode when the file took the gds path.
	GDSMode cufile.Mode `json:"gds_mode,omitempty"`
	SHA256  string      `json:"sha256,omitempty"`
	CRC32C  string      `json:"crc32c,omitempty"`
}

// RouteLabel is Route for people: a gds load names cuFile's mode beside
// it ("gds (compat)"), so that cuFile's POSIX fallback is never taken for
// GPUDirect Storage.
func (r *Result) RouteLabel() string {
	if r.Route == RouteGDS && r.GDSMode != "" {
		return fmt.Sprintf("%s (%s)", r.Route, r.GDSMode)
	}
	return string(r.Route)
}

// Digest returns the file's digest under the given checksum, "" if none.
func (f FileResult) Digest(c Checksum) string {
	switch c {
	case ChecksumSHA256:
		return f.SHA256
	case ChecksumCRC32C:
		return f.CRC32C
	}
	return ""
}

func (f *FileResult) setDigest(c Checksum, d string) {
	switch c {
	case ChecksumSHA256:
		f.SHA256 = d
	case ChecksumCRC32C:
		f.CRC32C = d
	}
}

const gib = 1 << 30

func (r *Result) finish(lat []time.Duration) {
	r.Chunks = len(lat)
	if r.Seconds > 0 {
		r.GiBPerS = float64(r.Bytes) / gib / r.Seconds
	}
	if r.Bytes > 0 {
		r.CPUSecondsPerGiB = r.CPUSeconds / (float64(r.Bytes) / gib)
	}
	p50, p99 := stats.Percentiles(lat)
	r.Latencies = lat
	r.P50Ms, r.P99Ms = ms(p50), ms(p99)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
