package rdmafs

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
)

// MinTokenLen is the shortest token accepted. Shorter secrets are refused:
// they are guessable offline from one recorded handshake.
const MinTokenLen = 16

const maxTokenFile = 4096

// ReadTokenFile reads a shared-secret token from path. One trailing newline
// (\n or \r\n) is trimmed. The file must not be readable or writable by group
// or others (mode 0600 or stricter), and the token must be at least
// MinTokenLen bytes.
func ReadTokenFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("token file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("token file %s has mode %04o: it must not be accessible by group or others; run: chmod 600 %s", path, perm, path)
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return nil, fmt.Errorf("read token file %s: %w", path, err)
	}
	if len(raw) > maxTokenFile {
		return nil, fmt.Errorf("token file %s is larger than %d bytes; it should hold one secret", path, maxTokenFile)
	}
	tok := bytes.TrimSuffix(raw, []byte("\n"))
	tok = bytes.TrimSuffix(tok, []byte("\r"))
	return CheckToken(tok, "token file "+path)
}

// TokenEnv is the environment variable clients read their token from when
// no token file is given.
const TokenEnv = "GDSLOAD_TOKEN"

// ClientToken returns the token a client should present: read from
// tokenFile when it is not "" (ReadTokenFile's checks apply), else from
// the TokenEnv environment variable (one trailing newline dropped), else
// nil, which only a server running without authentication accepts.
func ClientToken(tokenFile string) ([]byte, error) {
	if tokenFile != "" {
		return ReadTokenFile(tokenFile)
	}
	if v, ok := os.LookupEnv(TokenEnv); ok {
		v = strings.TrimSuffix(strings.TrimSuffix(v, "\n"), "\r")
		return CheckToken([]byte(v), TokenEnv)
	}
	return nil, nil
}

// CheckToken validates a token from any source (what names it in errors).
func CheckToken(tok []byte, what string) ([]byte, error) {
	if len(tok) == 0 {
		return nil, fmt.Errorf("%s is empty", what)
	}
	if len(tok) < MinTokenLen {
		return nil, fmt.Errorf("%s holds %d bytes; use at least %d random bytes (e.g. openssl rand -hex 32)", what, len(tok), MinTokenLen)
	}
	return tok, nil
}
