//go:build !amd64 || purego

package crc32c

// routines: there are no folding routines here.
func routines() map[string]func(crc uint32, p []byte) uint32 { return nil }
