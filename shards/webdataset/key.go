package webdataset

import "strings"

// SplitKey splits a member path into its sample key and extension exactly as
// WebDataset's base_plus_ext does with the pattern
// ^((?:.*/|)[^.]+)[.]([^/]*)$: normally the key is the path up to the first
// dot of the base name (directory part kept) and the extension is everything
// after that dot, so "a/b/x.y.z" gives "a/b/x" and "y.z". ok is false when
// WebDataset would skip the member, for example when the base name has no
// dot. The extension is returned as stored; callers lowercase it.
func SplitKey(path string) (key, ext string, ok bool) {
	// The regexp tries the longest "(.*/)" first, then shorter ones, then
	// none; ".*" does not cross a newline. For each start p, "[^.]+" runs to
	// the first dot after p, and the rest must hold no slash.
	p := len(path)
	for {
		i := strings.LastIndexByte(path[:p], '/')
		if i < 0 {
			p = 0
		} else {
			p = i + 1
		}
		if p == 0 || strings.IndexByte(path[:p-1], '\n') < 0 {
			dot := strings.IndexByte(path[p:], '.')
			if dot > 0 && strings.IndexByte(path[p+dot+1:], '/') < 0 {
				return path[:p+dot], path[p+dot+1:], true
			}
		}
		if p == 0 {
			return "", "", false
		}
		p-- // before the slash just tried
	}
}

// isMeta reports whether WebDataset's tar_file_iterator skips a member as
// metadata: a top-level name that starts and ends with "__", or any path
// matching ^__[^/]*__($|/).
func isMeta(name string) bool {
	if !strings.HasPrefix(name, "__") {
		return false
	}
	first, _, nested := strings.Cut(name, "/")
	if !nested && strings.HasSuffix(name, "__") {
		return true
	}
	return len(first) >= 4 && strings.HasSuffix(first, "__")
}
