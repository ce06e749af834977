package errorfs

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
)

// Journal names the record that must be made durable between a file's
// fsync and its rename: a Write to the file at Path containing Record,
// then an fdatasync (or fsync) of that file.
type Journal struct {
	Path   string
	Record []byte
}

// CheckPublished checks that ops (a Log's) published the file final
// durably, in this order:
//
//	writes of the temporary file that is renamed to final
//	→ fsync of that file (no write after it)
//	→ when j is not nil, j's record written to the journal and the journal synced
//	→ rename of the temporary file to final
//	→ fsync of final's directory
//
// It returns an error naming the first step missing or out of order.
func CheckPublished(ops []Op, final string, j *Journal) error {
	ren := lastIndex(ops, len(ops), func(o Op) bool { return o.Kind == OpRename && o.To == final })
	if ren < 0 {
		return fmt.Errorf("%s: never renamed into place", final)
	}
	temp := ops[ren].Path
	isWrite := func(o Op) bool { return o.Path == temp && (o.Kind == OpPwrite || o.Kind == OpWrite) }
	sync := firstIndex(ops, 0, ren, func(o Op) bool { return o.Path == temp && o.Kind == OpSync })
	if sync < 0 {
		return fmt.Errorf("%s: renamed from %s without an fsync of it first", final, temp)
	}
	if last := lastIndex(ops, ren, isWrite); last > sync {
		return fmt.Errorf("%s: %s written (op %d) after its fsync (op %d)", final, temp, last, sync)
	}
	if j != nil {
		rec := firstIndex(ops, sync, ren, func(o Op) bool {
			return o.Path == j.Path && o.Kind == OpWrite && bytes.Contains(o.P, j.Record)
		})
		if rec < 0 {
			return fmt.Errorf("%s: no journal record %q in %s between the fsync of %s and its rename", final, j.Record, j.Path, temp)
		}
		if firstIndex(ops, rec, ren, func(o Op) bool {
			return o.Path == j.Path && (o.Kind == OpDatasync || o.Kind == OpSync)
		}) < 0 {
			return fmt.Errorf("%s: journal %s not synced after its record and before the rename", final, j.Path)
		}
	}
	if firstIndex(ops, ren, len(ops), func(o Op) bool { return o.Kind == OpSyncDir && o.Path == filepath.Dir(final) }) < 0 {
		return fmt.Errorf("%s: directory %s not synced after the rename", final, filepath.Dir(final))
	}
	return nil
}

// firstIndex is the first i in [from, to) with ok(ops[i]), or -1.
func firstIndex(ops []Op, from, to int, ok func(Op) bool) int {
	if i := slices.IndexFunc(ops[max(from, 0):to], ok); i >= 0 {
		return from + i
	}
	return -1
}

// lastIndex is the last i before to with ok(ops[i]), or -1.
func lastIndex(ops []Op, to int, ok func(Op) bool) int {
	for i := to - 1; i >= 0; i-- {
		if ok(ops[i]) {
			return i
		}
	}
	return -1
}
