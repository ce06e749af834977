package webdataset

// Bytes is the stored size of every shard listed.
func (m *Manifest) Bytes() int64 {
	var n int64
	for _, e := range m.Shards {
		n += e.Bytes
	}
	return n
}
