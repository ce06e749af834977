package stage

import (
	"fmt"
	"strings"

	"github.com/gdsload/gdsload/internal/humanize"
	"github.com/gdsload/gdsload/loader"
)

// Result describes a finished stage. Its JSON form is what
// `gdsload stage --json` prints.
type Result struct {
	Dest  string `json:"dest"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
	// Copied files were written by this run; Skipped ones were already
	// staged and verified by an earlier run and left untouched.
	Copied  int `json:"copied"`
	Skipped int `json:"skipped"`
	// Failed files could not be staged (see PartialError); the others
	// were.
	Failed int `json:"failed"`
	// Damaged files were found changed in place by a re-verify
	// (Options.Reverify) and staged again; they count as copied.
	Damaged     int     `json:"damaged"`
	CopiedBytes int64   `json:"copied_bytes"`
	Seconds     float64 `json:"seconds"`
	// GiBPerS is CopiedBytes over Seconds.
	GiBPerS  float64         `json:"gib_per_s"`
	Checksum loader.Checksum `json:"checksum"`
	Verify   Verify          `json:"verify"`
	// RemovedTemps counts temporary files of interrupted runs removed at
	// start.
	RemovedTemps int `json:"removed_temps"`
	// Reason says why reads or writes did not use O_DIRECT, once per
	// cause ("" when they all did).
	Reason  string       `json:"reason"`
	Entries []FileResult `json:"entries"`
}

// FileResult is one staged file.
type FileResult struct {
	Name   string `json:"name"` // path under the destination
	Source string `json:"source"`
	Bytes  int64  `json:"bytes"`
	// Status is "copied", "skipped" or "failed" (Error says why).
	Status   string          `json:"status"`
	Checksum loader.Checksum `json:"checksum"`
	Digest   string          `json:"digest"`
	// WrittenCRC32C is the CRC32C of the bytes written, each chunk checked
	// after its write against the bytes the digest covered.
	WrittenCRC32C string `json:"written_crc32c,omitempty"`
	// Manifest is the manifest the digest was checked against, if any.
	Manifest    string `json:"manifest,omitempty"`
	DirectRead  bool   `json:"direct_read"`
	DirectWrite bool   `json:"direct_write"`
	Reason      string `json:"reason,omitempty"`
	Error       string `json:"error,omitempty"`
}

// Statuses of a FileResult.
const (
	StatusCopied  = "copied"
	StatusSkipped = "skipped"
	StatusFailed  = "failed"
)

// PartialError is what Run returns, beside its result, when some sources
// could not be staged and the others were (or, when All, none could).
type PartialError struct {
	Failed []FileResult // Status failed, Error set
	Files  int          // files in the plan
}

// All reports whether no file of the plan was staged.
func (e *PartialError) All() bool { return len(e.Failed) == e.Files }

func (e *PartialError) Error() string {
	var b strings.Builder
	switch {
	case e.All() && e.Files == 1:
		b.WriteString("the file could not be staged:")
	case e.All():
		fmt.Fprintf(&b, "none of the %d files could be staged:", e.Files)
	default:
		fmt.Fprintf(&b, "%d of %s could not be staged; the others were:", len(e.Failed), humanize.Count(e.Files, "file"))
	}
	for _, f := range e.Failed {
		fmt.Fprintf(&b, "\n  %s", f.Error)
	}
	return b.String()
}
