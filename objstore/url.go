package objstore

import (
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Scheme is the URL scheme of objects: s3://bucket/key.
const Scheme = "s3"

// MaxKeyLen is the longest key S3 accepts, in bytes.
const MaxKeyLen = 1024

// URL formats bucket and key as s3://bucket/key, percent-escaping the
// bytes of the key a URL cannot hold as they are ('%', '?', '#', spaces,
// control bytes), as gdsload writes every URL: ParseURL(URL(b, k)) returns
// b and k for every bucket and key ParseURL accepts.
func URL(bucket, key string) string {
	return (&url.URL{Scheme: Scheme, Host: bucket, Path: "/" + key}).String()
}

// ParseURL splits "s3://bucket/key" into bucket and key, decoding
// percent-escapes in the key (write '?' as %3F, '#' as %23 and '%' as
// %25), like every URL gdsload reads. An empty key ("s3://bucket" or
// "s3://bucket/") names the whole bucket; a key ending in '/' names a
// prefix. Bucket names are 1 to 255 letters, digits, '.', '-' and '_'
// (wider than AWS's rules, as MinIO and Ceph allow); keys are valid UTF-8
// of at most MaxKeyLen bytes.
func ParseURL(s string) (bucket, key string, err error) {
	if !strings.HasPrefix(s, Scheme+"://") {
		return "", "", fmt.Errorf("%w: %q is not an s3://bucket/key URL", ErrInvalid, s)
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", "", fmt.Errorf("%w: URL %q: %v", ErrInvalid, s, err)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", "", fmt.Errorf("%w: URL %q: user info, query and fragment are not supported (write '?' in a key as %%3F and '#' as %%23)", ErrInvalid, s)
	}
	bucket, key = u.Host, strings.TrimPrefix(u.Path, "/")
	if err := checkBucket(bucket); err != nil {
		return "", "", fmt.Errorf("%w: URL %q: %v", ErrInvalid, s, err)
	}
	if err := checkKey(key); err != nil {
		return "", "", fmt.Errorf("%w: URL %q: %v", ErrInvalid, s, err)
	}
	return bucket, key, nil
}

// CheckBucket refuses a bucket name ParseURL would refuse.
func CheckBucket(name string) error {
	if err := checkBucket(name); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

func checkBucket(b string) error {
	if b == "" || len(b) > 255 {
		return fmt.Errorf("bucket name must be 1 to 255 bytes, got %d", len(b))
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_') {
			return fmt.Errorf("bucket name %q has %q; bucket names are letters, digits, '.', '-' and '_'", b, c)
		}
	}
	return nil
}

func checkKey(k string) error {
	if len(k) > MaxKeyLen {
		return fmt.Errorf("key is %d bytes, over S3's %d", len(k), MaxKeyLen)
	}
	if !utf8.ValidString(k) {
		return fmt.Errorf("key %q is not valid UTF-8", k)
	}
	return nil
}
