package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// Shares of an opened checkpoint: the tensor two ranks want is read by
// one rank; a closed handle and an unknown name are request errors.
func TestShares(t *testing.T) {
	ctx := context.Background()
	doc, err := lib.openLazy(ctx, openRequest{Path: writeOne(t)})
	require.NoError(t, err)
	var opened openResult
	require.NoError(t, json.Unmarshal(doc, &opened))

	doc, err = lib.shares(ctx, sharesRequest{Handle: opened.Handle, Wants: [][]fetchItem{{{Name: "w"}}, {{Name: "w"}}, {}}})
	require.NoError(t, err)
	var res sharesResult
	require.NoError(t, json.Unmarshal(doc, &res))
	// Three ranks share 12 bytes: the tensor goes to the rank whose quota
	// (4 to 8 bytes) its end is nearest, rank 1, even if rank 2 wants none.
	require.Equal(t, []shareView{{Reads: []readView{}}, {Reads: []readView{{Name: "w", Want: -1, Bytes: 12}}, Bytes: 12}, {Reads: []readView{}}}, res.Shares)

	// Rows 0 and 1 of w (3 values) and row 2 are each read by the rank
	// that wants them.
	doc, err = lib.shares(ctx, sharesRequest{Handle: opened.Handle, Wants: [][]fetchItem{{{Name: "w", Slice: [][3]int64{{0, 1, 2}}}}, {{Name: "w", Slice: [][3]int64{{2, 1, 1}}}}}})
	require.NoError(t, err)
	res = sharesResult{}
	require.NoError(t, json.Unmarshal(doc, &res))
	require.Equal(t, []shareView{{Reads: []readView{{Name: "w", Want: 0, Bytes: 8}}, Bytes: 8}, {Reads: []readView{{Name: "w", Want: 0, Bytes: 4}}, Bytes: 4}}, res.Shares)
	_, err = lib.shares(ctx, sharesRequest{Handle: opened.Handle, Wants: [][]fetchItem{{{Name: "w", Slice: [][3]int64{{2, 1, 2}}}}}})
	require.ErrorAs(t, err, new(requestError))

	_, err = lib.shares(ctx, sharesRequest{Handle: opened.Handle, Wants: [][]fetchItem{{{Name: "nope"}}}})
	require.ErrorAs(t, err, new(requestError))
	require.ErrorContains(t, err, `"nope"`)

	require.NoError(t, closeLazy(opened.Handle))
	_, err = lib.shares(ctx, sharesRequest{Handle: opened.Handle, Wants: [][]fetchItem{{{Name: "w"}}}})
	require.ErrorAs(t, err, new(requestError))
}
