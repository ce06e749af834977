// Package rdmafs is gdsload's remote storage protocol: a read-only file
// server, its client and the transports they run over.
//
// A Server exports one directory; a Client stats, lists and reads files by
// name. On the tcp transport the data follows each reply on the stream and
// is read straight into the caller's buffer; on region transports (verbs,
// and the in-process loopback that reproduces its semantics for tests) the
// client advertises a destination region with each READ and the server
// writes the data there before sending the completion.
//
// Trust model: connections are authenticated with a shared token
// (HMAC-SHA256 challenge-response in both directions) but not encrypted.
// Use rdmafs on trusted networks or inside a tunnel. docs/PROTOCOL.md
// describes the wire format.
package rdmafs
