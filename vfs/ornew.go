package vfs

import "context"

// OrNew returns m, or when m is nil a Mux made with New(opts...): what an
// operation's Options with a nil FS mean, a Mux made for the call. done
// closes the Mux OrNew made, and does nothing to a given m, which stays
// its owner's to close.
func OrNew(m *Mux, opts ...Option) (_ *Mux, done func(), err error) {
	if m != nil {
		return m, func() {}, nil
	}
	if m, err = New(opts...); err != nil {
		return nil, nil, err
	}
	return m, func() { _ = m.Close() }, nil
}

// WalkRels is Walk's Rel paths: the slash-separated paths, relative to
// raw, of the regular files at or below it, sorted.
func (m *Mux) WalkRels(ctx context.Context, raw string) ([]string, error) {
	ents, err := m.Walk(ctx, raw)
	if err != nil {
		return nil, err
	}
	rels := make([]string, len(ents))
	for i, e := range ents {
		rels[i] = e.Rel
	}
	return rels, nil
}
