package main

/*
#include <stdlib.h>
extern char **environ;
static char *gd_environ_at(size_t i) { return environ[i]; }
*/
import "C"

import (
	"os"
	"strings"
	"sync"
)

// syncedPrefixes name the environment variables that say where and how to
// reach storage: AWS_* (credentials, profile, region, endpoint, CA
// bundle), GDSLOAD_* (the rdmafs token, the S3 retry deadline) and the
// proxies.
var syncedPrefixes = []string{"AWS_", "GDSLOAD_", "HTTP_PROXY=", "HTTPS_PROXY=", "NO_PROXY=", "http_proxy=", "https_proxy=", "no_proxy="}

var envMu sync.Mutex

// syncEnviron copies the process's C environment into Go's, for the
// variables of syncedPrefixes. The Go runtime of a shared library takes
// its environment once, when the library is loaded; a host that changes
// its environment afterwards (os.environ in Python calls putenv) would go
// unseen, so credentials fixed in os.environ after a refused load were
// never read. Called before each request that may open URLs.
func syncEnviron() {
	envMu.Lock()
	defer envMu.Unlock()
	seen := map[string]bool{}
	for i := C.size_t(0); ; i++ {
		p := C.gd_environ_at(i)
		if p == nil {
			break
		}
		kv := C.GoString(p)
		if !synced(kv) {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		seen[k] = true
		if cur, set := os.LookupEnv(k); !set || cur != v {
			os.Setenv(k, v)
		}
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); synced(kv) && !seen[k] {
			os.Unsetenv(k) // unset in the host since
		}
	}
}

func synced(kv string) bool {
	for _, p := range syncedPrefixes {
		if strings.HasPrefix(kv, p) {
			return true
		}
	}
	return false
}
