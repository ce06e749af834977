package stage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/gdsload/gdsload/internal/fileops"
	"github.com/gdsload/gdsload/loader"
)

// journalName is the append-only record of files staged and verified, in
// the sidecar folder. One JSON object a line; the last line for a path
// wins; a torn last line (a kill while appending) is ignored.
const journalName = "journal.jsonl"

// record says a file was staged and verified: the source as it was (size,
// modification time) and the destination file that holds its bytes
// (inode and modification time, which rename keeps).
//
// JSON strings hold only UTF-8, and encoding/json turns other bytes into
// U+FFFD, so a name that is not UTF-8 travels as its raw bytes in base64
// (rel_raw, source_raw) instead: it must match itself on the next run.
type record struct {
	Rel         string `json:"rel,omitempty"`
	RelRaw      []byte `json:"rel_raw,omitempty"`
	Source      string `json:"source,omitempty"`
	SourceRaw   []byte `json:"source_raw,omitempty"`
	Size        int64  `json:"size"`
	MTimeNs     int64  `json:"mtime_ns"`
	Checksum    string `json:"checksum"`
	Digest      string `json:"digest"`
	Ino         uint64 `json:"ino"`
	DestMTimeNs int64  `json:"dest_mtime_ns"`
}

// encoded moves names that are not UTF-8 into their raw fields.
func (r record) encoded() record {
	if !utf8.ValidString(r.Rel) {
		r.RelRaw, r.Rel = []byte(r.Rel), ""
	}
	if !utf8.ValidString(r.Source) {
		r.SourceRaw, r.Source = []byte(r.Source), ""
	}
	return r
}

// decoded undoes encoded.
func (r record) decoded() record {
	if len(r.RelRaw) > 0 {
		r.Rel, r.RelRaw = string(r.RelRaw), nil
	}
	if len(r.SourceRaw) > 0 {
		r.Source, r.SourceRaw = string(r.SourceRaw), nil
	}
	return r
}

// journal holds the records and the file they are appended to.
type journal struct {
	path string
	mu   sync.Mutex
	f    fileops.File
	recs map[string]record
}

// openJournal reads the journal in dir, rewrites it compacted (one line a
// path) and opens it through fsys for appending.
func openJournal(fsys fileops.FS, dir string) (*journal, error) {
	j := &journal{path: filepath.Join(dir, journalName)}
	var err error
	if j.recs, err = readJournal(j.path); err != nil {
		return nil, err
	}
	if err := j.compact(); err != nil {
		return nil, err
	}
	j.f, err = fsys.OpenFile(j.path, os.O_WRONLY|os.O_APPEND|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the stage journal %s: %w", j.path, err)
	}
	return j, nil
}

// readJournal reads the records of the journal at path: none when it (or
// its folder) does not exist yet.
func readJournal(path string) (map[string]record, error) {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return nil, fmt.Errorf("reading the stage journal %s: %w", path, err)
	}
	return parseJournal(b), nil
}

// parseJournal reads journal lines: the last record of each path wins; a
// line that is not a record (torn by a kill, or damaged) is skipped, which
// costs at most a recopy of that file, never trust in a wrong one: a record
// is only believed while the destination's inode and mtime still match it.
func parseJournal(b []byte) map[string]record {
	recs := map[string]record{}
	for line := range bytes.Lines(b) {
		var r record
		if json.Unmarshal(line, &r) == nil {
			r = r.decoded()
			if r.Rel != "" {
				recs[r.Rel] = r
			}
		}
	}
	return recs
}

func (j *journal) compact() error {
	rels := make([]string, 0, len(j.recs))
	for r := range j.recs {
		rels = append(rels, r)
	}
	sort.Strings(rels)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range rels {
		_ = enc.Encode(j.recs[r].encoded()) // cannot fail: plain fields
	}
	// A temporary name, fsync, rename, directory fsync: loader.SaveFile.
	_, err := loader.SaveFile(context.Background(), j.path, loader.HostMemory(buf.Bytes()), loader.SaveOptions{Direct: loader.DirectOff})
	if err != nil {
		return fmt.Errorf("rewriting the stage journal %s: %w", j.path, err)
	}
	return nil
}

// get returns the record of rel.
func (j *journal) get(rel string) (record, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	r, ok := j.recs[rel]
	return r, ok
}

// add appends recs durably, with one write and one fdatasync, before
// they are trusted. A crash in between leaves a torn last line at worst,
// which parseJournal skips.
func (j *journal) add(recs ...record) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range recs {
		if err := enc.Encode(r.encoded()); err != nil {
			return err
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := j.f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("appending to the stage journal %s: %w", j.path, err)
	}
	if err := j.f.Datasync(); err != nil {
		return fmt.Errorf("syncing the stage journal %s: %w", j.path, err)
	}
	for _, r := range recs {
		j.recs[r.Rel] = r
	}
	return nil
}

func (j *journal) close() error { return j.f.Close() }
