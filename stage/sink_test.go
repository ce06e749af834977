package stage

import (
	"crypto/sha256"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/crc32c"
	"github.com/gdsload/gdsload/loader"
)

// The checksum a sink hands the loader is the digest asked for, and takes
// the CRC32C of each chunk written to it in the same pass.
func TestSinkChecksumTakesChunkCRCs(t *testing.T) {
	s := &sink{}
	require.Nil(t, s.NewChecksum(loader.ChecksumNone), "no checksum pass, nothing to tee")
	h := s.NewChecksum(loader.ChecksumSHA256)
	require.NotNil(t, h)
	r := rand.New(rand.NewPCG(1, 2))
	all := sha256.New()
	for _, n := range []int{0, 1, teePiece - 1, teePiece, teePiece + 1, 3*teePiece + 17, 4 << 20} {
		chunk := make([]byte, n)
		for i := range chunk {
			chunk[i] = byte(r.Uint32())
		}
		h.Write(chunk)
		all.Write(chunk)
		crc, got := s.takeCRC()
		require.Equal(t, int64(n), got)
		require.Equal(t, crc32c.Checksum(chunk), crc, "chunk of %d bytes", n)
	}
	require.Equal(t, all.Sum(nil), h.Sum(nil), "the digest is the loader's")
}
