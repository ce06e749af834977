package wire

import "fmt"

// Code is an error code carried in ERROR frames. Codes are part of the
// protocol: never renumber them.
type Code uint16

// Error codes.
const (
	CodeInternal     Code = 1  // server bug or unexpected failure
	CodeProtocol     Code = 2  // malformed or unexpected frame; connection closes
	CodeAuth         Code = 3  // authentication failed; connection closes
	CodeNotFound     Code = 4  // no such file or directory
	CodePermission   Code = 5  // path refused: escapes the root, or not readable
	CodeInvalid      Code = 6  // bad name or argument (NUL, too long, absolute, ..)
	CodeIsDir        Code = 7  // READ of a directory
	CodeNotDir       Code = 8  // LIST of a file
	CodeNotRegular   Code = 9  // READ of a device, FIFO or socket
	CodeIO           Code = 10 // storage read failed
	CodeTooLarge     Code = 11 // frame or READ length over the announced limit
	CodeCredits      Code = 12 // more outstanding requests than announced credits
	CodeShuttingDown Code = 13 // server draining; retry on a new connection later
	CodeBusy         Code = 14 // server at its connection limit; retry later
	CodeRegion       Code = 15 // destination region refused (key, range)
)

func (c Code) String() string {
	switch c {
	case CodeInternal:
		return "INTERNAL"
	case CodeProtocol:
		return "PROTOCOL"
	case CodeAuth:
		return "AUTH"
	case CodeNotFound:
		return "NOT_FOUND"
	case CodePermission:
		return "PERMISSION"
	case CodeInvalid:
		return "INVALID"
	case CodeIsDir:
		return "IS_DIR"
	case CodeNotDir:
		return "NOT_DIR"
	case CodeNotRegular:
		return "NOT_REGULAR"
	case CodeIO:
		return "IO"
	case CodeTooLarge:
		return "TOO_LARGE"
	case CodeCredits:
		return "CREDITS"
	case CodeShuttingDown:
		return "SHUTTING_DOWN"
	case CodeBusy:
		return "BUSY"
	case CodeRegion:
		return "REGION"
	}
	return fmt.Sprintf("CODE(%d)", uint16(c))
}
