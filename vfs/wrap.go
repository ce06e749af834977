package vfs

// WithSchemeWrapper has New pass each scheme it serves except file (the
// registered ones, such as s3fs's and rdmafsfs's, and those options add,
// whatever the order of the options) through wrap, after every other
// option: wrap returns the Scheme to serve name with, s itself to leave it
// be. It is how a layer over remote files (package vfs/cache) plugs in.
func WithSchemeWrapper(wrap func(name string, s Scheme) Scheme) Option {
	return func(m *Mux) error {
		m.wrappers = append(m.wrappers, wrap)
		return nil
	}
}

// applyWrappers runs the WithSchemeWrapper functions over the schemes.
func (m *Mux) applyWrappers() {
	for _, w := range m.wrappers {
		for name, s := range m.schemes {
			m.schemes[name] = w(name, s)
		}
	}
}
