package loader

import (
	"context"
	"fmt"
	"sort"
)

// Concat returns a SaveSource made of parts laid end to end (a file header
// in host memory followed by tensors in device memory, say). SaveFile reads
// it through host buffers: each part is copied in place or read back from
// its device.
func Concat(parts ...SaveSource) SaveSource { return newRegions(parts) }

// regions is the SaveSource Concat returns.
type regions struct {
	parts  []SaveSource
	starts []int64
	size   int64
}

func newRegions(parts []SaveSource) *regions {
	r := &regions{parts: parts, starts: make([]int64, len(parts))}
	for i, p := range parts {
		r.starts[i] = r.size
		r.size += p.Size()
	}
	return r
}

func (r *regions) Size() int64 { return r.size }

// ReadBack copies bytes [off, off+len(p)) of the concatenation into p.
func (r *regions) ReadBack(ctx context.Context, off int64, p []byte) error {
	i := sort.Search(len(r.parts), func(i int) bool { return r.starts[i]+r.parts[i].Size() > off })
	for len(p) > 0 {
		if i >= len(r.parts) {
			return fmt.Errorf("bytes [%d, %d) past the end of %d", off, off+int64(len(p)), r.size)
		}
		part, in := r.parts[i], off-r.starts[i]
		n := min(int64(len(p)), part.Size()-in)
		switch s := part.(type) {
		case HostSource:
			copy(p[:n], s.Bytes()[in:in+n])
		case DeviceReader:
			if err := s.ReadBack(ctx, in, p[:n]); err != nil {
				return fmt.Errorf("part %d: %w", i, err)
			}
		default:
			return fmt.Errorf("part %d is neither host memory nor a DeviceReader", i)
		}
		p, off, i = p[n:], off+n, i+1
	}
	return nil
}

// hostOnly reports whether every part is host memory.
func (r *regions) hostOnly() bool {
	for _, p := range r.parts {
		if _, ok := p.(HostSource); !ok {
			return false
		}
	}
	return true
}

// PinHost pins mem for the first part that can (the parts of one save live
// on one device).
func (r *regions) PinHost(mem []byte) (func(), error) {
	for _, p := range r.parts {
		if hp, ok := p.(HostPinner); ok {
			return hp.PinHost(mem)
		}
	}
	return func() {}, nil
}
