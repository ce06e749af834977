// Package durable writes files that appear whole or not at all: an
// AtomicFile is written under a temporary name beside its final path (a
// name IsTempName recognises), synced and renamed over it, and the
// directory synced; the file it replaces keeps its mode, and a symbolic
// link is written through. loader.SaveFile, stage and
// webdataset.WriteManifest write through it. It also holds the direct-I/O
// facts loader's reads use too (DIOAlign, FSName) and the free space of a
// destination (FreeSpace, NoSpaceError).
package durable

import "errors"

// DirectMode says whether a file is written with O_DIRECT; its values are
// loader.DirectMode's, which converts to it.
type DirectMode int

// Direct I/O modes, as loader's.
const (
	// DirectAuto uses O_DIRECT where the file system accepts it and falls
	// back to buffered writes, recording why, where it does not.
	DirectAuto DirectMode = iota
	// DirectOn requires O_DIRECT; creating the file fails where it is
	// refused.
	DirectOn
	// DirectOff always writes through the page cache.
	DirectOff
)

// DefaultAlignment is the direct-I/O alignment assumed where the kernel does
// not report one through statx(STATX_DIOALIGN).
const DefaultAlignment = 4096

// ErrDirectRefused reports O_DIRECT required (DirectOn) where the file
// system or platform refuses it; DirectAuto falls back instead.
var ErrDirectRefused = errors.New("O_DIRECT required but refused")
