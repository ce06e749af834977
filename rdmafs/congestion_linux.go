package rdmafs

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// setTCPCongestion sets the congestion control of TCP socket c (a
// connection, or a listener whose future connections inherit it) to name
// (TCP_CONGESTION). It fails with ENOENT when the kernel lacks it and
// EPERM when an unprivileged process may not choose it
// (net.ipv4.tcp_allowed_congestion_control).
func setTCPCongestion(c syscall.Conn, name string) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
	}); err != nil {
		return err
	}
	return serr
}

// tcpCongestion returns the congestion control of TCP connection c.
func tcpCongestion(c syscall.Conn) (string, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return "", err
	}
	var name string
	var serr error
	if err := rc.Control(func(fd uintptr) {
		name, serr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	}); err != nil {
		return "", err
	}
	return name, serr
}
