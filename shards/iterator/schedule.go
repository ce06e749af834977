package iterator

// schedule is one rank's share of an epoch: global positions
// g = start + rank + k*world for k in [0, count). Positions at or past n
// wrap around (padding) to g mod n.
type schedule struct {
	n, start    int64
	rank, world int64
	count       int64
}

// newSchedule splits the positions [start, n) between world ranks. With
// drop, every rank gets floor(rest/world) positions and the remainder is
// dropped; otherwise ceil(rest/world), the last ones wrapping around.
func newSchedule(n, start int64, rank, world int, drop bool) schedule {
	s := schedule{n: n, start: start, rank: int64(rank), world: int64(world)}
	rest := n - start
	if rest <= 0 || n == 0 {
		return s
	}
	if drop {
		s.count = rest / s.world
	} else {
		s.count = (rest + s.world - 1) / s.world
	}
	return s
}

func (s schedule) global(k int64) int64 { return s.start + s.rank + k*s.world }

// split gives consumer c of consumers its share of the schedule: the
// positions k ≡ c (mod consumers). That is itself a schedule, of rank
// rank + c·world in a world of world·consumers, whose count comes from the
// rank's (so padding and dropping stay the rank's, not those of the larger
// world).
func (s schedule) split(c, consumers int) schedule {
	if consumers <= 1 {
		return s
	}
	cs, k := int64(consumers), int64(c)
	out := schedule{n: s.n, start: s.start, rank: s.rank + k*s.world, world: s.world * cs}
	if s.count > k {
		out.count = (s.count - k + cs - 1) / cs
	}
	return out
}

// visit is one stay of a rank in one window of one partition: the indices
// iStart, iStart+step, ... < iEnd of partition part that the rank takes,
// all in window win, within one lap over the epoch order.
type visit struct {
	epoch             int64 // set by the pipeline, which runs on across epochs
	part, win         int
	lap               int64
	iStart, step, end int64
	perm              []int32
	jobs              []*job
	samples           []loaded // by place in the visit: (i-iStart)/step for partition index i; a nil sample was skipped
}

func (v *visit) count() int64 { return (v.end - v.iStart + v.step - 1) / v.step }

// walker follows a schedule position by position and says when a new
// visit starts. The prefetcher and the consumer run identical walkers, so
// they agree on the visit sequence without sharing state.
type walker struct {
	lay  *layout
	sch  schedule
	k    int64
	step int64 // partition index stride of one rank: world / gcd(P, world)
	cur  []*visit
}

func newWalker(lay *layout, sch schedule) *walker {
	return &walker{lay: lay, sch: sch, step: sch.world / gcd(lay.p, sch.world), cur: make([]*visit, lay.p)}
}

// next advances to the next position of the schedule. It returns the
// index there within its partition, the visit serving it (v.part is the
// partition), and whether that visit starts here; ok is false after the
// last position.
func (w *walker) next() (i int64, v *visit, fresh, ok bool) {
	if w.k >= w.sch.count {
		return 0, nil, false, false
	}
	g := w.sch.global(w.k)
	w.k++
	lap, e := g/w.lay.n, g%w.lay.n
	part, i := int(e%w.lay.p), e/w.lay.p
	v = w.cur[part]
	if v != nil && v.lap == lap && i >= v.iStart && i < v.end {
		return i, v, false, true
	}
	win := w.lay.windowOf(part, i)
	// The last position this rank takes in this lap bounds the visit.
	last := w.sch.global(w.sch.count - 1)
	eMax := min(w.lay.n-1, last-lap*w.lay.n)
	iMax := (eMax-int64(part))/w.lay.p + 1 // exclusive bound from the lap
	v = &visit{
		part: part, win: win, lap: lap,
		iStart: i, step: w.step,
		end: min(w.lay.windows[part][win].end, iMax),
	}
	w.cur[part] = v
	return i, v, true, true
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
