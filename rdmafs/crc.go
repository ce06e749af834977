package rdmafs

import "hash/crc32"

// castagnoli is read-only after package initialization.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crc32c extends crc with p (CRC-32C, Castagnoli; hardware-accelerated on
// amd64 and arm64).
func crc32c(crc uint32, p []byte) uint32 { return crc32.Update(crc, castagnoli, p) }
