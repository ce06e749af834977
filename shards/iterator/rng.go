package iterator

import "math/bits"

// rng is splitmix64: tiny, fast, and good enough to shuffle training data.
// Each stream is keyed by the values that must change its output, so no
// state is shared between partitions, windows or epochs.
type rng struct{ s uint64 }

func newRNG(keys ...uint64) *rng {
	r := &rng{s: 0x9e3779b97f4a7c15}
	for _, k := range keys {
		r.s ^= k
		r.s = r.next()
	}
	return r
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// below returns a uniform value in [0, n) (Lemire's method, unbiased).
func (r *rng) below(n uint64) uint64 {
	hi, lo := bits.Mul64(r.next(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(r.next(), n)
		}
	}
	return hi
}

// perm returns a uniformly random permutation of [0, n) (Fisher-Yates).
func (r *rng) perm(n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(i)
	}
	for i := n - 1; i > 0; i-- {
		j := r.below(uint64(i + 1))
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// Stream tags keep the shard order and the window shuffles independent.
const (
	tagShards uint64 = 1
	tagWindow uint64 = 2
)
