package iterator

import "sort"

// order holds what, besides the dataset and the epoch, decides the epoch
// order. It is fixed for a run and recorded in State.
type order struct {
	seed        uint64
	partitions  int
	shuffle     bool
	windowBytes int64 // shuffle window per partition; 0: no sample shuffle
}

// portion is the part [lo, hi) of one shard's samples that a window holds,
// starting at offset off within the window.
type portion struct {
	shard  int
	lo, hi int64
	off    int64
}

// window is a run of consecutive partition positions [start, end) whose
// samples are shuffled among themselves. Its portions are whole shards
// except at partition edges.
type window struct {
	start, end int64
	portions   []portion
}

// layout is one epoch's order: the shard permutation cut into P partitions
// of (almost) equal sample counts, each cut into shuffle windows. Global
// position e belongs to partition e mod P at index e / P, so the order
// interleaves the partitions sample by sample.
type layout struct {
	n       int64
	p       int64
	windows [][]window // per partition, by start
	ord     order
	epoch   int64
}

func newLayout(d *Dataset, ord order, epoch int64) *layout {
	shards := shardOrder(d, ord, epoch)
	cum := make([]int64, len(shards)+1)
	for k, s := range shards {
		cum[k+1] = cum[k] + d.Shards[s].Samples
	}
	l := &layout{n: cum[len(shards)], p: int64(ord.partitions), ord: ord, epoch: epoch}
	l.windows = make([][]window, ord.partitions)
	base, extra := l.n/l.p, l.n%l.p
	for part := range ord.partitions {
		p := int64(part)
		a := p*base + min(p, extra)
		b := a + base
		if p < extra {
			b++
		}
		var wins []window
		var cur *window
		var curBytes int64
		k := sort.Search(len(shards), func(k int) bool { return cum[k+1] > a })
		for ; k < len(shards) && cum[k] < b; k++ {
			sh := d.Shards[shards[k]]
			lo, hi := max(a, cum[k])-cum[k], min(b, cum[k+1])-cum[k]
			if hi <= lo {
				continue
			}
			weight := sh.memBytes() * (hi - lo) / sh.Samples
			if cur == nil || !ord.shuffle || ord.windowBytes == 0 || curBytes+weight > ord.windowBytes {
				start := a
				if cur != nil {
					start = cur.end
				}
				wins = append(wins, window{start: start, end: start})
				cur, curBytes = &wins[len(wins)-1], 0
			}
			cur.portions = append(cur.portions, portion{shard: shards[k], lo: lo, hi: hi, off: cur.end - cur.start})
			cur.end += hi - lo
			curBytes += weight
		}
		// Partition indices are relative to the partition: [0, b-a).
		for i := range wins {
			wins[i].start -= a
			wins[i].end -= a
		}
		l.windows[part] = wins
	}
	return l
}

// windowOf returns the index of partition p's window holding index i.
func (l *layout) windowOf(p int, i int64) int {
	ws := l.windows[p]
	return sort.Search(len(ws), func(w int) bool { return ws[w].end > i })
}

// perm returns window w's shuffle: position j of the window emits the
// window's stored sample perm[j]; nil means stored order.
func (l *layout) perm(p, w int) []int32 {
	win := &l.windows[p][w]
	if !l.ord.shuffle || l.ord.windowBytes == 0 || win.end-win.start < 2 {
		return nil
	}
	return newRNG(l.ord.seed, uint64(l.epoch), uint64(p), uint64(w), tagWindow).perm(int(win.end - win.start))
}

// locate maps a stored offset within a window to its shard and the
// sample's index in that shard.
func (win *window) locate(off int64) (shard int, index int64) {
	k := sort.Search(len(win.portions), func(k int) bool {
		pt := win.portions[k]
		return pt.off+pt.hi-pt.lo > off
	})
	pt := win.portions[k]
	return pt.shard, pt.lo + off - pt.off
}
