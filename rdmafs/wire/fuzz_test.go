package wire

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzDecode feeds arbitrary bytes to the frame reader and every payload
// decoder. Nothing may panic, and whatever decodes must re-encode to the
// same payload (the encoding is canonical).
func FuzzDecode(f *testing.F) {
	f.Add(AppendFrame(nil, TypeRead, 1, Read{Length: 10, Flags: ReadRegion, Region: Region{Key: 1}, Name: "a"}.Append(nil)))
	f.Add(AppendFrame(nil, TypeListOK, 1, ListOK{Entries: []FileInfo{{Name: "x"}}}.Append(nil)))
	f.Add(AppendFrame(nil, TypeError, 0, ErrorMsg{Code: 1, Message: "m"}.Append(nil)))
	f.Add(AppendFrame(nil, TypeWelcome, 0, Welcome{1, 1 << 16, 1, 1, 0}.Append(nil)))
	f.Add([]byte("RF\x01\x0a\x00\x00\x00\x01\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		buf := make([]byte, MaxPayload)
		h, p, err := ReadFrame(bytes.NewReader(b), buf, MaxPayload)
		if err != nil {
			return
		}
		type enc interface{ Append([]byte) []byte }
		var m enc
		switch h.Type {
		case TypeHello:
			m, err = DecodeHello(p)
		case TypeChallenge:
			m, err = DecodeChallenge(p)
		case TypeAuth:
			m, err = DecodeAuth(p)
		case TypeWelcome:
			m, err = DecodeWelcome(p)
		case TypeError:
			var e ErrorMsg
			e, err = DecodeError(p)
			m = e
		case TypeStat:
			m, err = DecodeStat(p)
		case TypeStatOK:
			m, err = DecodeFileInfo(p)
		case TypeList:
			m, err = DecodeList(p)
		case TypeListOK:
			m, err = DecodeListOK(p)
		case TypeRead:
			m, err = DecodeRead(p)
		case TypeData:
			m, err = DecodeData(p)
		case TypeReadDone:
			m, err = DecodeReadDone(p)
		case TypeGoodbye:
			m, err = DecodeGoodbye(p)
		default:
			return
		}
		if err != nil {
			return
		}
		got := m.Append(nil)
		require.True(t, bytes.Equal(got, p), "%s: decode/encode not canonical:\n in  %x\n out %x", h.Type, p, got)
	})
}
