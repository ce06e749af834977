package safetensors

import "fmt"

// Plan is how to read a file's data region into one allocation with aligned
// I/O: read the file range [FileOffset, FileOffset+Length) into the start of
// an allocation of at least AllocLength bytes; tensor views then start at
// Views[i].Offset. Because FileOffset is a multiple of Alignment, each byte's
// position in the allocation equals its file offset modulo Alignment.
type Plan struct {
	Alignment   int64  // the I/O alignment A
	FileOffset  int64  // DataOffset rounded down to a multiple of A: file offset of allocation byte 0
	Length      int64  // bytes to read: from FileOffset to end of file
	AllocLength int64  // Length rounded up to a multiple of A, room for whole-block reads
	HeadSlack   int64  // header bytes read before the data region: DataOffset - FileOffset
	Views       []View // one per tensor, in Header.Tensors order
}

// View locates one tensor inside the allocation of a Plan.
type View struct {
	Name   string
	Dtype  string
	Shape  []int64
	Offset int64 // byte offset in the allocation
	Bytes  int64
}

// Plan computes the aligned read plan of the file h was parsed from for
// an I/O alignment align (e.g. 4096, or the file's direct-I/O alignment),
// which must be positive. It does no I/O.
func (h *Header) Plan(align int64) (Plan, error) {
	if align <= 0 {
		return Plan{}, fmt.Errorf("plan: alignment %d must be positive", align)
	}
	start := h.DataOffset - h.DataOffset%align
	length := h.FileSize() - start
	alloc := length
	if r := alloc % align; r != 0 {
		alloc += align - r
	}
	p := Plan{
		Alignment: align, FileOffset: start, Length: length, AllocLength: alloc,
		HeadSlack: h.DataOffset - start, Views: make([]View, len(h.Tensors)),
	}
	for i, t := range h.Tensors {
		p.Views[i] = View{Name: t.Name, Dtype: t.Dtype, Shape: t.Shape, Offset: p.HeadSlack + t.Begin, Bytes: t.Bytes()}
	}
	return p, nil
}
