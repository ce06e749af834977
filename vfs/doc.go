// Package vfs opens any URL gdsload reads — local paths, file://, and the
// URLs of the schemes a program registers, such as rdmafs://host:port/path
// and s3://bucket/key — as loader sources.
//
// A Mux is the registry: it resolves a URL's scheme and authority (the
// host:port of an rdmafs server, an object store's bucket) to an FS, made
// once per authority and kept until Mux.Close, and offers what every
// caller needs on top: Stat, List, Walk (every regular file at or below a
// URL, in lexical order), Open, OpenAll (directories expanded, files
// opened) and ReadFile. Local paths and file:// are built in. Other
// schemes are backends, registered from outside as database/sql drivers
// are: importing package vfs/s3fs serves s3:// (S3-compatible object
// stores, through package objstore: a bucket's prefixes are directories)
// in every Mux, with credentials from the AWS environment, and s3fs.With
// sets one Mux's client options; importing vfs/rdmafsfs serves rdmafs://
// likewise, and rdmafsfs.With sets the token, connections, CRC and
// transport. WithScheme plugs any other Scheme into one Mux; Register
// makes one a backend. The Mux holds no global state beyond the registered
// backends: make one, pass it to iterator, checkpoint, stage and bench,
// and Close it.
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
// The package sits between the engine and its users: it imports loader
// only; shards, stage and bench import it. The backend packages
// vfs/rdmafsfs and vfs/s3fs import it and rdmafs or objstore; the
// programs that read remote URLs (cmd/gdsload, capi) import them, so a
// program that reads only local files links neither the AWS SDK nor
// rdmafs. loader, rdmafs, objstore and cufile never import vfs.
package vfs
