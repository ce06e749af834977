package main

import "github.com/gdsload/gdsload/internal/buildinfo"

// versionInfo is gdsload_build_info's document: the build (as `gdsload
// version --json` prints it) and the C ABI version.
type versionInfo struct {
	ABI int `json:"abi"`
	buildinfo.Info
}

// abiVersion is GDSLOAD_ABI_VERSION; a test checks they agree.
const abiVersion = 1

func buildVersion() versionInfo {
	return versionInfo{ABI: abiVersion, Info: buildinfo.Read()}
}
