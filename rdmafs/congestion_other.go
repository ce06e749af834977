//go:build !linux

package rdmafs

import (
	"errors"
	"syscall"
)

func setTCPCongestion(syscall.Conn, string) error { return errors.ErrUnsupported }

func tcpCongestion(syscall.Conn) (string, error) { return "", errors.ErrUnsupported }
