// Package vfs opens any URL gdsload reads — local paths, file://,
// rdmafs://host:port/path and s3://bucket/key — as loader sources.
//
// A Mux is the registry: it resolves a URL's scheme and authority (the
// host:port of an rdmafs server, an object store's bucket) to an FS, made
// once per authority and kept until Mux.Close, and offers what every
// caller needs on top: Stat, List, Walk (every regular file at or below a
// URL, in lexical order), Open, OpenAll (directories expanded, files
// opened) and ReadFile. Local paths and file:// are built in; rdmafs:// is
// configured with WithRDMAFS (token, connections, CRC, transport); s3://
// (S3-compatible object stores, through package objstore: a bucket's
// prefixes are directories) with WithS3, else from the AWS environment;
// other schemes plug in with WithScheme. The Mux holds no global state: make
// one, pass it to iterator, checkpoint, stage and bench, and Close it.
//
// Opening returns a File: a loader.Source (ReadAt, Name, Size) with the
// modification time, an identity (device, inode and change time locally,
// an ETag in an object store) and Close. Capabilities the loader looks for
// pass through unchanged: a local file's O_DIRECT descriptor, a remote
// file's ReadAtContext and ReadAtDevice.
//
// Errors match fs.ErrNotExist for a missing path and fs.ErrPermission for
// a refused one, whatever the scheme, through errors.Is.
//
// The package sits between the engine and its users: it imports loader,
// rdmafs and objstore, and shards, stage and bench import it; loader,
// rdmafs, objstore and cufile never import it.
package vfs
