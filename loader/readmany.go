package loader

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/gdsload/gdsload/internal/uring"
)

// Range is Len bytes of a file at offset Off.
type Range struct{ Off, Len int64 }

// RangeRead is one range as ReadMany hands it over.
type RangeRead struct {
	// Index is the range's place in the ranges given to ReadMany.
	Index int
	// Data holds the range's bytes. It is valid until the callback
	// returns; ReadMany then reads other ranges into it.
	Data []byte
	// Latency is the time from the read's submission to its completion.
	Latency time.Duration
	// Err is io.EOF when the range reaches past the end of the file (Data
	// then holds the bytes before it), as ReadAt says it, or why the read
	// failed.
	Err error
}

// ReadMany reads every range of ranges and hands each to fn as it
// completes: in completion order, not the order given, on the calling
// goroutine. It keeps up to depth reads in flight at once where the file
// is read with O_DIRECT and the process's io_uring is available (package
// internal/uring); elsewhere it reads them one at a time with ReadAt.
// It suits many small reads, such as samples at random offsets: one
// goroutine drives them all, so a completion wakes no goroutine of its
// own (4 KiB random reads took far less CPU than as 32 goroutines calling
// ReadAt; docs/PERFORMANCE-NOTES.md, loader).
//
// It holds one buffer per read in flight, each as long as the longest
// range (the part inside the file, rounded to the direct-I/O alignment),
// and depth is capped at the ring's entries (uring.Entries). A range with
// a negative offset or length, or one whose end overflows, is refused
// before any read. When fn returns an error, ReadMany starts no more reads, waits for
// those in flight (without handing them to fn), and returns that error;
// otherwise it returns nil once every range has been handed to fn, the
// failed ones with their Err.
func (f *File) ReadMany(ranges []Range, depth int, fn func(RangeRead) error) error {
	var longest int64 // the most bytes of one range inside the file
	for i, r := range ranges {
		if r.Off < 0 || r.Len < 0 || r.Len > math.MaxInt64-r.Off {
			return fmt.Errorf("read %s: range %d (offset %d, length %d) is negative or ends past the largest offset", f.name, i, r.Off, r.Len)
		}
		n, _ := f.inFile(r)
		longest = max(longest, n)
	}
	if !f.ring || depth <= 1 { // ring: direct reads, io_uring here
		return f.readManyInOrder(ranges, longest, fn)
	}
	return f.readManyRing(ranges, longest, min(depth, len(ranges), uring.Entries), fn)
}

// inFile is how many bytes of r lie inside the file, and io.EOF when r
// reaches past its end, as ReadAt says it.
func (f *File) inFile(r Range) (int64, error) {
	n := min(r.Len, max(f.size-r.Off, 0))
	if n < r.Len {
		return n, io.EOF
	}
	return n, nil
}

// readManyInOrder is ReadMany one range at a time through ReadAt.
func (f *File) readManyInOrder(ranges []Range, longest int64, fn func(RangeRead) error) error {
	buf := alignedSlice(int(longest), int(max(f.memAlign, 4096)))
	for i, r := range ranges {
		t0 := time.Now()
		// Only the bytes inside the file, so that buf need not be longer
		// than the file; the io.EOF past its end is ReadAt's.
		want, eof := f.inFile(r)
		n, err := f.ReadAt(buf[:want], r.Off)
		if err == nil {
			err = eof
		}
		if err := fn(RangeRead{Index: i, Data: buf[:n], Latency: time.Since(t0), Err: err}); err != nil {
			return err
		}
	}
	return nil
}

// readManyRing is ReadMany through uring.ReadBatch: each range is read as
// the aligned span that covers it, into one of depth slots of one
// aligned allocation, and handed to fn from there.
func (f *File) readManyRing(ranges []Range, longest int64, depth int, fn func(RangeRead) error) error {
	slotLen := alignUp(longest, f.align) + f.align // an unaligned range spans one more block
	slab := alignedSlice(int(slotLen)*depth, int(max(f.memAlign, 4096)))
	free := make([]int, depth)
	for s := range free {
		free[s] = s
	}
	// What each slot holds: the range's index, and when its read went out.
	type inFlight struct {
		index   int
		started time.Time
	}
	slots := make([]inFlight, depth)
	var stop error
	hand := func(rr RangeRead) {
		if stop == nil {
			stop = fn(rr)
		}
	}
	next := 0
	fd := int(f.f.Fd())
	uring.ReadBatch(fd, depth, func() (uring.Req, bool) {
		for stop == nil && next < len(ranges) {
			i, r := next, ranges[next]
			next++
			if want, eof := f.inFile(r); want == 0 {
				// Nothing to read: ReadAt's answer, without a trip to the disk.
				hand(RangeRead{Index: i, Err: eof})
				continue
			}
			s := free[len(free)-1]
			free = free[:len(free)-1]
			start := r.Off / f.align * f.align
			end := alignUp(min(r.Off+r.Len, f.size), f.align)
			slots[s] = inFlight{i, time.Now()}
			buf := slab[int64(s)*slotLen:][:end-start]
			return uring.Req{Buf: buf, Off: start, Tag: s}, true
		}
		return uring.Req{}, false
	}, func(q uring.Req, n int, err error) {
		s := q.Tag
		defer func() { free = append(free, s) }() // after fn is done with the slot
		i, r := slots[s].index, ranges[slots[s].index]
		lat := time.Since(slots[s].started)
		if stop != nil {
			return
		}
		skip := r.Off - q.Off
		want, eof := f.inFile(r)
		data := q.Buf[skip : skip+want]
		switch {
		case err != nil:
			err = fmt.Errorf("direct read at offset %d: %w", q.Off, err)
			hand(RangeRead{Index: i, Latency: lat, Err: err})
			return
		case int64(n) < skip+want:
			// A short read inside the file (a file that shrank, or a read
			// the kernel cut short): ReadAt finishes it or says why not
			// (ErrChanged for a file that shrank: data lies inside the
			// size it had when opened, so ReadAt has no io.EOF to give).
			got, rerr := f.ReadAt(data, r.Off)
			data, lat = data[:got], time.Since(slots[s].started)
			if rerr != nil {
				eof = rerr
			}
		}
		hand(RangeRead{Index: i, Data: data, Latency: lat, Err: eof})
	})
	return stop
}
