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

	doc, err = lib.shares(ctx, sharesRequest{Handle: opened.Handle, Wants: [][]string{{"w"}, {"w"}, {}}})
	require.NoError(t, err)
	var res sharesResult
	require.NoError(t, json.Unmarshal(doc, &res))
	// Three ranks share 12 bytes: the tensor goes to the rank whose quota
	// (4 to 8 bytes) its end is nearest, rank 1, even if rank 2 wants none.
	require.Equal(t, []shareView{{Tensors: []string{}}, {Tensors: []string{"w"}, Bytes: 12}, {Tensors: []string{}}}, res.Shares)

	_, err = lib.shares(ctx, sharesRequest{Handle: opened.Handle, Wants: [][]string{{"nope"}}})
	require.ErrorAs(t, err, new(requestError))
	require.ErrorContains(t, err, `"nope"`)

	require.NoError(t, closeLazy(opened.Handle))
	_, err = lib.shares(ctx, sharesRequest{Handle: opened.Handle, Wants: [][]string{{"w"}}})
	require.ErrorAs(t, err, new(requestError))
}
