package checkpoint

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// all returns wanters for n tensors that every one of ranks ranks wants.
func all(n, ranks int) [][]int {
	w := make([][]int, n)
	for i := range w {
		for r := range ranks {
			w[i] = append(w[i], r)
		}
	}
	return w
}

// checkShares checks what Shares promises of owners: wanted tensors have
// one owner, unwanted none, a tensor one rank alone wants is its, the
// shared tensors' owners do not decrease along the checkpoint (one run per
// rank), and every rank's bytes are within the largest shared tensor of
// max(level, the bytes it alone wants).
func checkShares(t *testing.T, sizes []int64, wanters [][]int, ranks int, owner []int) {
	t.Helper()
	require.Len(t, owner, len(sizes))
	own := make([]int64, ranks)
	load := make([]int64, ranks)
	var total, largest int64
	last := 0
	for i, w := range wanters {
		switch len(w) {
		case 0:
			assert.Equal(t, -1, owner[i], "tensor %d is wanted by nobody", i)
			continue
		case 1:
			assert.Equal(t, w[0], owner[i], "tensor %d is wanted by rank %d alone", i, w[0])
			own[w[0]] += sizes[i]
		default:
			assert.GreaterOrEqual(t, owner[i], last, "tensor %d: shared owners go up the checkpoint", i)
			last = owner[i]
			total += sizes[i]
			largest = max(largest, sizes[i])
		}
		require.True(t, owner[i] >= 0 && owner[i] < ranks, "tensor %d: owner %d of %d ranks", i, owner[i], ranks)
		load[owner[i]] += sizes[i]
	}
	level := waterLevel(own, total)
	for r := range ranks {
		want := max(level, float64(own[r]))
		assert.InDelta(t, want, float64(load[r]), float64(largest)+1e-6, "rank %d: %d bytes, level %.1f", r, load[r], level)
	}
}

func TestSplitShares(t *testing.T) {
	cases := []struct {
		name    string
		sizes   []int64
		wanters [][]int
		ranks   int
		want    []int
	}{
		{"equal sizes", []int64{4, 4, 4, 4, 4, 4, 4, 4}, all(8, 4), 4, []int{0, 0, 1, 1, 2, 2, 3, 3}},
		{"one rank", []int64{1, 2, 3}, all(3, 1), 1, []int{0, 0, 0}},
		{"big first tensor", []int64{10, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, all(11, 2), 2, []int{0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
		{"more ranks than tensors", []int64{5, 5}, all(2, 4), 4, []int{1, 3}},
		{"nobody wants", []int64{3, 3, 3}, [][]int{{0, 1}, nil, {0, 1}}, 2, []int{0, -1, 1}},
		{"one wanter keeps its tensor", []int64{6, 2, 2, 2}, [][]int{{1}, {0, 1}, {0, 1}, {0, 1}}, 2, []int{1, 0, 0, 0}},
		{"heavy own tensors", []int64{100, 1, 1, 1, 1}, [][]int{{0}, {0, 1, 2}, {0, 1, 2}, {0, 1, 2}, {0, 1, 2}}, 3, []int{0, 1, 1, 2, 2}},
		{"zero-size tensors", []int64{0, 8, 0, 8, 0}, all(5, 2), 2, []int{0, 0, 1, 1, 1}},
		{"no tensors", nil, nil, 3, []int{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := splitShares(tc.sizes, tc.wanters, tc.ranks)
			assert.Equal(t, tc.want, got)
			checkShares(t, tc.sizes, tc.wanters, tc.ranks, got)
		})
	}
}

// TestSplitSharesRandom checks the promises on random checkpoints and
// random wants, ranks 1 to 8.
func TestSplitSharesRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		n, ranks := rng.IntN(40), 1+rng.IntN(8)
		sizes := make([]int64, n)
		wanters := make([][]int, n)
		for i := range sizes {
			sizes[i] = rng.Int64N(1 << uint(rng.IntN(24)))
			for r := range ranks {
				if rng.IntN(4) != 0 {
					wanters[i] = append(wanters[i], r)
				}
			}
		}
		checkShares(t, sizes, wanters, ranks, splitShares(sizes, wanters, ranks))
	}
}

// whole returns requests for the whole of each named tensor.
func whole(names ...string) []Request {
	out := make([]Request, len(names))
	for i, n := range names {
		out[i] = Request{Name: n}
	}
	return out
}

// rows selects rows [from, to) of a 2-D tensor of cols columns.
func rows(name string, from, to, cols int64) Request {
	return Request{Name: name, Slice: []safetensors.DimSlice{{Start: from, Step: 1, Count: to - from}, {Start: 0, Step: 1, Count: cols}}}
}

func TestShares(t *testing.T) {
	s := writeSharded(t)
	c, err := Open(context.Background(), s.index, Options{})
	require.NoError(t, err)
	defer c.Close()
	var names []string
	for _, f := range c.Files() {
		for _, tt := range f.Tensors {
			names = append(names, tt.Name)
		}
	}
	// embed.weight is BF16 [333, 257]: 514 bytes a row.
	const row = 514

	t.Run("every rank wants all", func(t *testing.T) {
		shares, err := c.Shares([][]Request{whole(names...), whole(names...), whole(names...)}, FetchOptions{})
		require.NoError(t, err)
		require.Len(t, shares, 3)
		var got []string
		var bytes int64
		for _, sh := range shares {
			for _, rd := range sh.Reads {
				if rd.Name == "layer.0.empty" { // no byte: every rank "reads" its own
					assert.Equal(t, Read{Name: rd.Name, Want: 4}, rd)
					continue
				}
				got = append(got, rd.Name)
				assert.Equal(t, -1, rd.Want, "%s is read whole for the others", rd.Name)
			}
			bytes += sh.Bytes
		}
		want := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "layer.0.empty" })
		assert.Equal(t, want, got, "the shares are consecutive runs covering the checkpoint in order")
		assert.Equal(t, c.Bytes(), bytes)
	})

	t.Run("rows split along dimension 0 are read by their ranks", func(t *testing.T) {
		shares, err := c.Shares([][]Request{
			{rows("embed.weight", 0, 100, 257), {Name: "head"}},
			{{Name: "odd"}, rows("embed.weight", 100, 333, 257), {Name: "head"}},
		}, FetchOptions{})
		require.NoError(t, err)
		assert.Equal(t, []Read{{Name: "embed.weight", Want: 0, Bytes: 100 * row}, {Name: "head", Want: -1, Bytes: 21}},
			shares[0].Reads, "head, which both want, goes to the lighter rank")
		assert.Equal(t, []Read{{Name: "embed.weight", Want: 1, Bytes: 233 * row}, {Name: "odd", Want: 0, Bytes: 4099}}, shares[1].Reads)
		assert.Equal(t, int64(100*row+21), shares[0].Bytes)
	})

	t.Run("overlapping rows or columns are read whole", func(t *testing.T) {
		cols := Request{Name: "embed.weight", Slice: []safetensors.DimSlice{{Start: 0, Step: 1, Count: 333}, {Start: 0, Step: 1, Count: 100}}}
		for _, w := range [][][]Request{
			{{rows("embed.weight", 0, 101, 257)}, {rows("embed.weight", 100, 333, 257)}},
			{{cols}, {rows("embed.weight", 0, 1, 257)}},
		} {
			shares, err := c.Shares(w, FetchOptions{})
			require.NoError(t, err)
			all := append(shares[0].Reads, shares[1].Reads...)
			assert.Equal(t, []Read{{Name: "embed.weight", Want: -1, Bytes: 333 * row}}, all)
		}
	})

	t.Run("errors", func(t *testing.T) {
		_, err := c.Shares(nil, FetchOptions{})
		assert.ErrorContains(t, err, "no ranks")
		_, err = c.Shares([][]Request{whole("head"), whole("nope")}, FetchOptions{})
		require.ErrorIs(t, err, ErrNoTensor)
		assert.ErrorContains(t, err, `rank 1 wants "nope"`)
		_, err = c.Shares([][]Request{{rows("embed.weight", 300, 400, 257)}}, FetchOptions{})
		assert.ErrorContains(t, err, "select outside")
	})
}
