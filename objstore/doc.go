// Package objstore reads objects from S3-compatible stores (AWS S3, MinIO,
// Ceph RGW, Cloudflare R2, GCS through its S3 API) as loader sources.
//
// A Client finds its credentials, region and endpoint the way the AWS CLI
// does (environment, shared config and credentials files with AWS_PROFILE,
// web-identity tokens, instance metadata, AWS_ENDPOINT_URL and
// AWS_ENDPOINT_URL_S3), then stats, lists and opens objects by bucket and
// key. An opened Object reads byte ranges straight into the caller's
// buffer with parallel ranged GETs over reused connections. Every GET is
// pinned with If-Match to the ETag seen at Open, so bytes of two versions
// of an object are never mixed: a replaced object fails with ErrChanged.
// Ranges are retried with backoff and jitter on 5xx, 429, connection
// resets and stalls, up to a deadline; authentication failures are not
// retried. A missing bucket or key matches fs.ErrNotExist.
//
// The package knows nothing of the loader's destinations or of the
// command line; docs/S3.md describes credentials, endpoints, tuning and
// costs.
package objstore
