//go:build !linux

package testenv

// DirectIO reports that O_DIRECT is not probed off Linux.
func DirectIO(string) (bool, string) { return false, "O_DIRECT is probed on Linux only" }
