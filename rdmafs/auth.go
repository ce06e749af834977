package rdmafs

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

// Proof labels keep the two directions distinct, so a server proof can never
// be replayed as a client proof (or the reverse), and tie proofs to the
// protocol version.
const (
	serverLabel = "rdmafs/1 server proof"
	clientLabel = "rdmafs/1 client proof"
)

// proof computes HMAC-SHA256(token, label || first || second).
func proof(token []byte, label string, first, second *[wire.NonceSize]byte) [wire.ProofSize]byte {
	m := hmac.New(sha256.New, token)
	m.Write([]byte(label))
	m.Write(first[:])
	m.Write(second[:])
	var out [wire.ProofSize]byte
	copy(out[:], m.Sum(nil))
	return out
}

// serverProof is what the server sends: it proves the server knows the token
// and binds the client's fresh nonce.
func serverProof(token []byte, clientNonce, serverNonce *[wire.NonceSize]byte) [wire.ProofSize]byte {
	return proof(token, serverLabel, clientNonce, serverNonce)
}

// clientProof is what the client sends back, bound to the server's nonce.
func clientProof(token []byte, clientNonce, serverNonce *[wire.NonceSize]byte) [wire.ProofSize]byte {
	return proof(token, clientLabel, serverNonce, clientNonce)
}

// proofEqual compares proofs in constant time.
func proofEqual(a, b [wire.ProofSize]byte) bool { return hmac.Equal(a[:], b[:]) }

func newNonce() [wire.NonceSize]byte {
	var n [wire.NonceSize]byte
	// crypto/rand.Read never fails on supported platforms (Go 1.24+).
	rand.Read(n[:])
	return n
}
