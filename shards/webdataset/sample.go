package webdataset

// Field is one member of a sample: its extension (lowercased, without the
// leading dot, e.g. "png" or "seg.png") and its bytes.
type Field struct {
	Ext  string
	Data []byte
}

// Sample is a run of consecutive tar members sharing a key. Fields keep the
// members' order in the tar; extensions within a sample are unique.
type Sample struct {
	Key    string
	Fields []Field
}

// Get returns the bytes of the field with extension ext (lowercase).
func (s *Sample) Get(ext string) ([]byte, bool) {
	for _, f := range s.Fields {
		if f.Ext == ext {
			return f.Data, true
		}
	}
	return nil, false
}

// Size returns the total number of field bytes in the sample.
func (s *Sample) Size() int64 {
	var n int64
	for _, f := range s.Fields {
		n += int64(len(f.Data))
	}
	return n
}
