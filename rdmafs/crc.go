package rdmafs

import crc32cpkg "github.com/gdsload/gdsload/internal/crc32c"

// crc32c extends crc with p (CRC-32C, Castagnoli; hardware-accelerated on
// amd64 and arm64).
func crc32c(crc uint32, p []byte) uint32 { return crc32cpkg.Update(crc, p) }

// crc32cCombine is the CRC-32C of A‖B from those of A and of B (lenB bytes).
func crc32cCombine(crcA, crcB uint32, lenB int64) uint32 { return crc32cpkg.Combine(crcA, crcB, lenB) }
