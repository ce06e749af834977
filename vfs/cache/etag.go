package cache

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"hash"
	"regexp"
	"strconv"
	"strings"

	"github.com/gdsload/gdsload/vfs"
)

// md5ETag matches an ETag that is the MD5 of the bytes: a single-part
// upload's. multipartETag matches a multipart upload's: the MD5 of its
// parts' MD5s, then "-" and the number of parts.
var (
	md5ETag       = regexp.MustCompile(`^"?([0-9a-fA-F]{32})"?$`)
	multipartETag = regexp.MustCompile(`^"?([0-9a-fA-F]{32})-([0-9]+)"?$`)
)

// partLister is an optional capability of a remote file that was uploaded
// in parts: *objstore.Object tells its part size (one HEAD).
type partLister interface {
	Parts(ctx context.Context) (partSize int64, parts int, err error)
}

// etagCheck checks a download against the ETag of the object it came
// from, when the ETag is an MD5 of its bytes or of its parts' MD5s.
type etagCheck struct {
	want     string // hex
	parts    int    // 0: a single-part ETag
	partSize int64
	h        hash.Hash // the whole object's, or the current part's
	sums     []byte    // the MD5s of the finished parts
	inPart   int64     // bytes of the current part so far
}

// newETagCheck returns the check for remote's ETag; nil when the ETag is
// of neither form (an encrypted object's, a store's own) or the part size
// cannot be learnt, in which case only the size is checked.
func newETagCheck(ctx context.Context, remote vfs.File) (*etagCheck, error) {
	e, ok := remote.(interface{ ETag() string })
	if !ok {
		return nil, nil
	}
	if m := md5ETag.FindStringSubmatch(e.ETag()); m != nil {
		return &etagCheck{want: strings.ToLower(m[1]), h: md5.New()}, nil
	}
	m := multipartETag.FindStringSubmatch(e.ETag())
	pl, ok := remote.(partLister)
	if m == nil || !ok {
		return nil, nil
	}
	n, err := strconv.Atoi(m[2])
	if err != nil || n < 1 {
		return nil, nil
	}
	size, parts, err := pl.Parts(ctx)
	if err != nil {
		return nil, fmt.Errorf("cache: learning the part size of %s to check its ETag: %w", remote.Name(), err)
	}
	if parts != n || size <= 0 {
		return nil, nil // not the store's usual multipart ETag
	}
	return &etagCheck{want: strings.ToLower(m[1]), parts: n, partSize: size, h: md5.New()}, nil
}

// write adds p, the next bytes of the object.
func (c *etagCheck) write(p []byte) {
	if c == nil {
		return
	}
	for c.parts > 0 && c.inPart+int64(len(p)) >= c.partSize {
		k := c.partSize - c.inPart
		c.h.Write(p[:k])
		c.sums = c.h.Sum(c.sums)
		c.h.Reset()
		c.inPart, p = 0, p[k:]
	}
	c.h.Write(p)
	c.inPart += int64(len(p))
}

// check returns an error when the bytes written do not give the ETag, and
// what was checked ("etag-md5", "etag-multipart-md5") when they do.
func (c *etagCheck) check(url string) (string, error) {
	if c.parts == 0 {
		if got := hex.EncodeToString(c.h.Sum(nil)); got != c.want {
			return "", fmt.Errorf("cache: MD5 of %s as downloaded is %s, its ETag says %s; the bytes were damaged in transit, try again", url, got, c.want)
		}
		return "etag-md5", nil
	}
	sums := c.sums
	if c.inPart > 0 {
		sums = c.h.Sum(sums)
	}
	total := md5.Sum(sums)
	got := hex.EncodeToString(total[:])
	if len(sums)/md5.Size != c.parts || got != c.want {
		return "", fmt.Errorf("cache: the MD5 of the %d parts' MD5s of %s as downloaded is %s-%d, its ETag says %s-%d; the bytes were damaged in transit, try again",
			len(sums)/md5.Size, url, got, len(sums)/md5.Size, c.want, c.parts)
	}
	return "etag-multipart-md5", nil
}
