package rdmafs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		content string
		mode    os.FileMode
		want    string
		errHas  string
	}{
		{"trailing newline trimmed", "0123456789abcdefXYZ\n", 0o600, "0123456789abcdefXYZ", ""},
		{"crlf trimmed", "0123456789abcdefXYZ\r\n", 0o400, "0123456789abcdefXYZ", ""},
		{"only one newline trimmed", "0123456789abcdefXYZ\n\n", 0o600, "0123456789abcdefXYZ\n", ""},
		{"group readable", "0123456789abcdefXYZ", 0o640, "", "chmod 600"},
		{"world readable", "0123456789abcdefXYZ", 0o604, "", "chmod 600"},
		{"empty", "\n", 0o600, "", "empty"},
		{"short", "abc\n", 0o600, "", "at least"},
		{"too large", strings.Repeat("x", 5000), 0o600, "", "larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			require.NoError(t, os.WriteFile(p, []byte(tc.content), 0o600))
			require.NoError(t, os.Chmod(p, tc.mode))
			tok, err := ReadTokenFile(p)
			if tc.errHas != "" {
				require.Error(t, err, "err = %v, want one mentioning %q", err, tc.errHas)
				require.ErrorContains(t, err, tc.errHas, "err = %v, want one mentioning %q", err, tc.errHas)
				return
			}
			require.NoError(t, err, "token %q, err %v; want %q", tok, err, tc.want)
			require.EqualValues(t, tc.want, string(tok), "token %q, err %v; want %q", tok, err, tc.want)
		})
	}
	_, err := ReadTokenFile(filepath.Join(dir, "missing"))
	require.Error(t, err, "missing file accepted")
}

// The token a client presents: a file wins over GDSLOAD_TOKEN, which is
// checked like a file's, and neither gives none.
func TestClientToken(t *testing.T) {
	t.Setenv("GDSLOAD_TOKEN", "env-token-0123456789\n")
	tok, err := ClientToken("")
	require.NoError(t, err, "from env: %q, %v", tok, err)
	require.EqualValues(t, "env-token-0123456789", string(tok), "from env: %q, %v", tok, err)
	f := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(f, []byte("file-token-0123456789\n"), 0o600)
	tok, err = ClientToken(f)
	require.NoError(t, err, "file wins over env: %q, %v", tok, err)
	require.Equal(t, "file-token-0123456789", string(tok), "file wins over env: %q, %v", tok, err)
	t.Setenv("GDSLOAD_TOKEN", "short")
	_, err = ClientToken("")
	require.Error(t, err, "short env token accepted")
	os.Unsetenv("GDSLOAD_TOKEN")
	tok, err = ClientToken("")
	require.Nil(t, tok, "no token: %q, %v", tok, err)
	require.NoError(t, err, "no token: %q, %v", tok, err)
}

// WithToken refuses a token a server would refuse, before any server sees
// it (the server would only say that the tokens differ).
func TestWithTokenRefusesShortTokens(t *testing.T) {
	for _, tc := range []struct {
		tok  string
		want string
	}{
		{"", "empty"},
		{"12345", "at least 16"},
		{"0123456789abcdef", ""},
	} {
		err := CheckOptions(WithToken([]byte(tc.tok)))
		if tc.want == "" {
			assert.NoError(t, err, "token %q: %v", tc.tok, err)
			continue
		}
		assert.Error(t, err, "token %q: err %v, want one saying %q", tc.tok, err, tc.want)
		assert.ErrorContains(t, err, tc.want, "token %q: err %v, want one saying %q", tc.tok, err, tc.want)
		_, err = Dial(t.Context(), "127.0.0.1:1", WithToken([]byte(tc.tok)))
		assert.Error(t, err, "Dial with token %q: err %v, want the option's refusal", tc.tok, err)
		assert.ErrorContains(t, err, tc.want, "Dial with token %q: err %v, want the option's refusal", tc.tok, err)
	}
}

// Options refuse values outside their documented range instead of
// clamping them.
func TestOptionsRefuseOutOfRange(t *testing.T) {
	for name, o := range map[string]Option{
		"connections 0":     WithConnections(0),
		"connections 65":    WithConnections(MaxConnections + 1),
		"requests 0":        WithRequestsPerConn(0),
		"timeout 0":         WithTimeout(0),
		"retry deadline -1": WithRetryDeadline(-1),
		"chunk 1 KiB":       WithChunkSize(1 << 10),
		"nil transport":     WithTransport(nil),
	} {
		err := CheckOptions(o)
		assert.Error(t, err, "%s accepted", name)
	}
	assert.NoError(t, CheckOptions(WithConnections(MaxConnections), WithChunkSize(MinChunkSize), WithRetryDeadline(0), nil), "values at the bounds refused")
}
