package checkpoint

import (
	"fmt"
	"sort"

	"github.com/gdsload/gdsload/shards/safetensors"
)

// Read is one read from storage of a rank's Share.
type Read struct {
	Name string
	// Want is the index, in the rank's requests given to Shares, of the
	// request this read serves (the rank reads it for itself), or -1 for
	// a whole tensor the rank reads to hand to the ranks that want it.
	Want int
	// Bytes is what the read takes from storage: the tensor's bytes, or
	// the request's planned ranges (safetensors.PlanSlice).
	Bytes int64
}

// Share is what one rank of a distributed load reads from storage, in
// checkpoint order (files in load order, tensors in data order), and the
// bytes that is.
type Share struct {
	Reads []Read
	Bytes int64
}

// Shares plans a distributed load of len(wants) ranks so that each
// wanted byte is read from storage once: wants[r] are the requests of rank
// r (whole tensors or selections, as Fetch takes them). A tensor nobody
// wants is not read. Of each other tensor, either:
//   - each rank reads what it asked for itself, when one rank alone wants
//     the tensor, or when every request on it is one range of the file
//     (a whole tensor, consecutive rows: a compact plan) and no two
//     requests' ranges overlap, as in a tensor-parallel split along
//     dimension 0; or
//   - one rank reads it whole and hands the others their parts.
//
// Balance: the whole tensors are cut into runs consecutive in checkpoint
// order, one per rank in rank order, so a rank's reads are neighbours in
// its files. The runs fill the ranks up to a common level L: the level at
// which the bytes of the whole tensors are used up when every rank below
// L, counting what it reads for itself, is raised to L and no rank above
// it gets any. Each run ends at the tensor boundary nearest its target, so
// a rank's bytes differ from max(L, what it reads for itself) by at most
// the largest tensor read whole.
//
// opts.MaxGap is the gap the ranks' fetches will read through (the bytes
// of a selection that is not one range). A name the checkpoint lacks is an
// error wrapping ErrNoTensor, a selection outside its tensor an error too.
func (c *Checkpoint) Shares(wants [][]Request, opts FetchOptions) ([]Share, error) {
	if len(wants) == 0 {
		return nil, fmt.Errorf("checkpoint %s: shares: no ranks; want one list of requests per rank", c.path)
	}
	type tensor struct {
		info  safetensors.TensorInfo
		reqs  []Read // every rank's requests on it, Want set
		ranks []int  // the rank of each of reqs
		begin []int64
		whole bool // some request is not one range, or two overlap
	}
	var order []*tensor
	byName := map[string]*tensor{}
	for _, s := range c.files {
		for _, t := range s.header.Tensors {
			tt := &tensor{info: t}
			byName[t.Name] = tt
			order = append(order, tt)
		}
	}
	for r, list := range wants {
		for i, req := range list {
			t, ok := byName[req.Name]
			if !ok {
				return nil, fmt.Errorf("checkpoint %s: shares: rank %d wants %q: %w", c.path, r, req.Name, ErrNoTensor)
			}
			bits, _ := safetensors.DtypeBits(t.info.Dtype)
			shape, elem := t.info.Shape, bits/8
			if bits%8 != 0 && req.Slice == nil {
				shape, elem = []int64{t.info.Bytes()}, 1 // a whole packed tensor is its bytes
			}
			p, err := safetensors.PlanSlice(shape, elem, req.Slice, opts.MaxGap)
			if err != nil {
				return nil, fmt.Errorf("checkpoint %s: shares: rank %d, tensor %q: %w", c.path, r, req.Name, err)
			}
			var begin int64
			if len(p.Ranges) > 0 {
				begin = p.Ranges[0].Offset
			}
			t.whole = t.whole || !p.Compact || len(p.Ranges) > 1
			t.reqs = append(t.reqs, Read{Name: req.Name, Want: i, Bytes: p.Size})
			t.ranks = append(t.ranks, r)
			t.begin = append(t.begin, begin)
		}
	}
	var sizes []int64 // of the tensors read whole
	var whole []*tensor
	own := make([]int64, len(wants))
	for _, t := range order {
		if len(t.reqs) == 0 {
			continue
		}
		alone := true
		for _, r := range t.ranks {
			alone = alone && r == t.ranks[0]
		}
		if !alone && !t.whole && overlap(t.begin, t.reqs) {
			t.whole = true
		}
		if alone || !t.whole {
			for i, rd := range t.reqs {
				own[t.ranks[i]] += rd.Bytes
			}
			continue
		}
		whole = append(whole, t)
		sizes = append(sizes, t.info.Bytes())
	}
	owner := cutRuns(sizes, own, len(wants))
	next := 0
	out := make([]Share, len(wants))
	for _, t := range order {
		if next < len(whole) && whole[next] == t {
			o := owner[next]
			out[o].Reads = append(out[o].Reads, Read{Name: t.info.Name, Want: -1, Bytes: t.info.Bytes()})
			out[o].Bytes += t.info.Bytes()
			next++
			continue
		}
		for i, rd := range t.reqs {
			r := t.ranks[i]
			out[r].Reads = append(out[r].Reads, rd)
			out[r].Bytes += rd.Bytes
		}
	}
	return out, nil
}

// overlap reports whether any two of the one-range requests (starting at
// begin, reqs[i].Bytes long) share a byte.
func overlap(begin []int64, reqs []Read) bool {
	idx := make([]int, len(begin))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return begin[idx[a]] < begin[idx[b]] })
	end := int64(-1)
	for _, i := range idx {
		if reqs[i].Bytes == 0 {
			continue
		}
		if begin[i] < end {
			return true
		}
		end = begin[i] + reqs[i].Bytes
	}
	return false
}

// splitShares returns the owner of each tensor (sizes in checkpoint order,
// wanters[i] the distinct ranks wanting tensor i, ascending), or -1 for one
// nobody wants, when a tensor one rank wants is its and the others are
// read whole: the balance Shares documents.
func splitShares(sizes []int64, wanters [][]int, ranks int) []int {
	owner := make([]int, len(sizes))
	own := make([]int64, ranks)
	var shared []int // tensors several ranks want, in order
	var sharedSizes []int64
	for i, w := range wanters {
		switch len(w) {
		case 0:
			owner[i] = -1
		case 1:
			owner[i] = w[0]
			own[w[0]] += sizes[i]
		default:
			shared = append(shared, i)
			sharedSizes = append(sharedSizes, sizes[i])
		}
	}
	for j, o := range cutRuns(sharedSizes, own, ranks) {
		owner[shared[j]] = o
	}
	return owner
}

// cutRuns returns the owner of each of the tensors read whole (sizes, in
// order) when ranks already read own[r] bytes for themselves: consecutive
// runs, rank by rank, each ending at the boundary nearest the cumulative
// quota that raises the ranks to the water level.
func cutRuns(sizes []int64, own []int64, ranks int) []int {
	owner := make([]int, len(sizes))
	var total int64
	for _, s := range sizes {
		total += s
	}
	level := waterLevel(own, total)
	var quota, at float64 // the target so far; the bytes up to boundary b
	b := 0
	for r := range ranks - 1 {
		if q := level - float64(own[r]); q > 0 {
			quota += q
		}
		for b < len(sizes) {
			next := at + float64(sizes[b])
			if next-quota >= quota-at { // the boundary before is as near
				break
			}
			owner[b], at = r, next
			b++
		}
	}
	for ; b < len(sizes); b++ {
		owner[b] = ranks - 1
	}
	return owner
}

// waterLevel returns L such that the sum over ranks of max(0, L-own[r])
// is total: the level the shared bytes raise the ranks to.
func waterLevel(own []int64, total int64) float64 {
	p := append([]int64{}, own...)
	sort.Slice(p, func(i, j int) bool { return p[i] < p[j] })
	sum := float64(total)
	for k := range p {
		sum += float64(p[k])
		l := sum / float64(k+1)
		if k == len(p)-1 || l <= float64(p[k+1]) {
			return l
		}
	}
	return 0 // no ranks
}
