package objstore

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"strings"

	"github.com/gdsload/gdsload/internal/crc32c"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// crc64NVME is CRC-64/NVME (reflected polynomial 0x9a6c9329ac4bc9b5, init
// and final xor all ones: the conventions of hash/crc64).
var crc64NVME = crc64.MakeTable(0x9a6c9329ac4bc9b5)

// checksumError: a whole-object read's bytes do not match the store's
// checksum.
type checksumError struct {
	algorithm, want, got string
}

func (e *checksumError) Error() string {
	return fmt.Sprintf("%s of the bytes read is %s, the store says %s; the data was damaged in transit or at rest",
		e.algorithm, e.got, e.want)
}

func (e *checksumError) Unwrap() error { return ErrChecksum }

// verifier checks a whole-object body against one x-amz-checksum-* of its
// response. A nil *verifier checks nothing.
type verifier struct {
	algorithm, want string
	h               hash.Hash
}

// newVerifier picks the first full-object checksum the response carries,
// strongest first. Composite checksums of multipart uploads ("…-N") cover
// parts, not the bytes, and are skipped; so are algorithms the standard
// library lacks (XXHASH*).
func newVerifier(out *s3.GetObjectOutput) *verifier {
	cands := []struct {
		name string
		v    *string
		h    func() hash.Hash
	}{
		{"SHA256", out.ChecksumSHA256, sha256.New},
		{"SHA512", out.ChecksumSHA512, sha512.New},
		{"SHA1", out.ChecksumSHA1, sha1.New},
		{"CRC64NVME", out.ChecksumCRC64NVME, func() hash.Hash { return crc64.New(crc64NVME) }},
		{"CRC32C", out.ChecksumCRC32C, func() hash.Hash { return crc32c.New() }},
		{"CRC32", out.ChecksumCRC32, func() hash.Hash { return crc32.NewIEEE() }},
		{"MD5", out.ChecksumMD5, md5.New},
	}
	for _, c := range cands {
		if c.v == nil || *c.v == "" || strings.Contains(*c.v, "-") {
			continue
		}
		return &verifier{algorithm: c.name, want: *c.v, h: c.h()}
	}
	return nil
}

func (v *verifier) write(p []byte) {
	if v != nil {
		v.h.Write(p)
	}
}

// check returns a *checksumError when the bytes written differ.
func (v *verifier) check() error {
	if v == nil {
		return nil
	}
	got := base64.StdEncoding.EncodeToString(v.h.Sum(nil))
	if got != v.want {
		return &checksumError{algorithm: v.algorithm, want: v.want, got: got}
	}
	return nil
}

// name is the algorithm checked, "" for none.
func (v *verifier) name() string {
	if v == nil {
		return ""
	}
	return v.algorithm
}
