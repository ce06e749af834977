package errorfs

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// publishOps is a correct durable publication of /d/f through /d/.f.tmp
// with a journal record, among unrelated operations.
func publishOps() []Op {
	return []Op{
		{Kind: OpOpen, Path: "/d/.f.tmp"},
		{Kind: OpPwrite, Path: "/d/.f.tmp", Off: 0},
		{Kind: OpPwrite, Path: "/d/other"},
		{Kind: OpPwrite, Path: "/d/.f.tmp", Off: 4096},
		{Kind: OpTruncate, Path: "/d/.f.tmp"},
		{Kind: OpSync, Path: "/d/.f.tmp"},
		{Kind: OpWrite, Path: "/j", P: []byte(`{"rel":"f"}` + "\n")},
		{Kind: OpDatasync, Path: "/j"},
		{Kind: OpClose, Path: "/d/.f.tmp"},
		{Kind: OpRename, Path: "/d/.f.tmp", To: "/d/f"},
		{Kind: OpSyncDir, Path: "/d"},
	}
}

// Every step of a durable publication is checked: the whole sequence
// passes, and without any one step (or with two swapped) it fails.
func TestCheckPublished(t *testing.T) {
	j := &Journal{Path: "/j", Record: []byte(`"rel":"f"`)}
	require.NoError(t, CheckPublished(publishOps(), "/d/f", j), "a durable publication")
	require.NoError(t, CheckPublished(publishOps(), "/d/f", nil), "without a journal")
	drop := func(i int) []Op { return slices.Delete(publishOps(), i, i+1) }
	swap := func(a, b int) []Op { o := publishOps(); o[a], o[b] = o[b], o[a]; return o }
	for _, tc := range []struct {
		name string
		ops  []Op
		want string
	}{
		{"no fsync of the file", drop(5), "without an fsync"},
		{"no journal record", drop(6), "no journal record"},
		{"journal not synced", drop(7), "journal /j not synced"},
		{"no rename", drop(9), "never renamed"},
		{"no directory sync", drop(10), "directory /d not synced"},
		{"write after the fsync", swap(3, 5), "written (op 5) after its fsync"},
		{"journal before the fsync", swap(5, 6), "no journal record"},
		{"rename before the journal sync", swap(7, 9), "not synced after its record"},
		{"directory synced before the rename", swap(9, 10), "not synced after the rename"},
	} {
		err := CheckPublished(tc.ops, "/d/f", j)
		assert.Error(t, err, "%s: err = %v, want one containing %q", tc.name, err, tc.want)
		assert.ErrorContains(t, err, tc.want, "%s: err = %v, want one containing %q", tc.name, err, tc.want)
	}
}
