package vfs

import "context"

type expectKey struct{}

// ExpectSHA256 returns ctx carrying the SHA-256 (lower-case hex) that the
// bytes of a file opened with it must have, as a manifest lists it; ""
// returns ctx as it is. A layer that copies files whole (package
// vfs/cache) checks each copy against it and refuses one that differs;
// other FSs ignore it.
func ExpectSHA256(ctx context.Context, sum string) context.Context {
	if sum == "" {
		return ctx
	}
	return context.WithValue(ctx, expectKey{}, sum)
}

// ExpectedSHA256 is the SHA-256 ExpectSHA256 put in ctx, "" for none.
func ExpectedSHA256(ctx context.Context) string {
	s, _ := ctx.Value(expectKey{}).(string)
	return s
}
