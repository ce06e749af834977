package checkpoint

import (
	"fmt"
	"sort"
)

// Share is what one rank of a distributed load reads from storage: whole
// tensors, in checkpoint order (files in load order, each file's tensors
// in data order), and their bytes.
type Share struct {
	Tensors []string
	Bytes   int64
}

// Shares splits the tensors the ranks of a distributed load want among
// len(wants) ranks, so that each wanted tensor is read from storage by
// exactly one rank, which then hands the others what they want of it.
// wants[r] names the tensors rank r wants, whole or in part (a name may
// repeat). A tensor nobody wants is in no share. A tensor one rank alone
// wants is that rank's: it needs no exchange. The others are cut into
// runs that are consecutive in checkpoint order, one run per rank, in rank
// order, so a rank's reads are neighbours in its files.
//
// Balance: each tensor counts its whole size. The runs fill the ranks up
// to a common level L, the level at which the bytes of the shared tensors
// are used up when every rank below L (counting the tensors it alone
// wants) is raised to L and no rank above it gets any. Each run ends at
// the tensor boundary nearest its target, so a rank's total differs from
// max(L, the bytes of the tensors it alone wants) by at most the largest
// shared tensor; with no tensor wanted by a single rank, every rank is
// within the largest tensor of an equal split.
//
// A name the checkpoint lacks is an error wrapping ErrNoTensor.
func (c *Checkpoint) Shares(wants [][]string) ([]Share, error) {
	if len(wants) == 0 {
		return nil, fmt.Errorf("checkpoint %s: shares: no ranks; want one list of tensor names per rank", c.path)
	}
	var names []string
	var sizes []int64
	index := map[string]int{}
	for _, s := range c.files {
		for _, t := range s.header.Tensors {
			index[t.Name] = len(names)
			names = append(names, t.Name)
			sizes = append(sizes, t.Bytes())
		}
	}
	wanters := make([][]int, len(names))
	for r, list := range wants {
		for _, n := range list {
			i, ok := index[n]
			if !ok {
				return nil, fmt.Errorf("checkpoint %s: shares: rank %d wants %q: %w", c.path, r, n, ErrNoTensor)
			}
			if w := wanters[i]; len(w) == 0 || w[len(w)-1] != r {
				wanters[i] = append(w, r)
			}
		}
	}
	out := make([]Share, len(wants))
	for i, o := range splitShares(sizes, wanters, len(wants)) {
		if o >= 0 {
			out[o].Tensors = append(out[o].Tensors, names[i])
			out[o].Bytes += sizes[i]
		}
	}
	return out, nil
}

// splitShares returns the owner of each tensor (sizes in checkpoint order,
// wanters[i] the distinct ranks wanting tensor i, ascending), or -1 for one
// nobody wants: the plan Shares documents.
func splitShares(sizes []int64, wanters [][]int, ranks int) []int {
	owner := make([]int, len(sizes))
	own := make([]int64, ranks) // bytes of the tensors each rank alone wants
	var shared []int            // tensors several ranks want, in order
	var total int64
	for i, w := range wanters {
		switch len(w) {
		case 0:
			owner[i] = -1
		case 1:
			owner[i] = w[0]
			own[w[0]] += sizes[i]
		default:
			shared = append(shared, i)
			total += sizes[i]
		}
	}
	level := waterLevel(own, total)
	// Cut the shared run at the boundaries nearest the cumulative quotas.
	var quota, at float64 // the target so far; the bytes up to boundary b
	b := 0
	for r := range ranks {
		if r == ranks-1 {
			quota = float64(total)
		} else if q := level - float64(own[r]); q > 0 {
			quota += q
		}
		for b < len(shared) && r < ranks-1 {
			next := at + float64(sizes[shared[b]])
			if next-quota >= quota-at { // the boundary before is as near
				break
			}
			owner[shared[b]], at = r, next
			b++
		}
		for ; r == ranks-1 && b < len(shared); b++ {
			owner[shared[b]] = r
		}
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
