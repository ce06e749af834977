//go:build amd64 && !purego

package crc32c

import "hash/crc32"

// routines are the folding routines this CPU can run, by name, each
// finished with hash/crc32 as Update finishes the one it picks, so that
// tests check all of them and not only the one Update picks (an AVX-512
// CPU runs the 256-bit routines too).
func routines() map[string]func(crc uint32, p []byte) uint32 {
	var rs []routine
	if canFold512 {
		rs = append(rs, fold512)
	}
	if canFold256 {
		rs = append(rs, fold256, hybrid256)
	}
	m := map[string]func(uint32, []byte) uint32{}
	for _, r := range rs {
		m[r.String()] = func(crc uint32, p []byte) uint32 {
			crc, p = foldWith(r, crc, p)
			return crc32.Update(crc, table, p)
		}
	}
	return m
}
