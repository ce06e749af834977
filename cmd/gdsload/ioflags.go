package main

import (
	"github.com/spf13/pflag"

	"github.com/gdsload/gdsload/loader"
)

// ioFlags are the data-path flags that load and stage share.
type ioFlags struct {
	direct    string
	workers   int
	chunkSize string
}

func (f *ioFlags) add(fs *pflag.FlagSet, directHelp string) {
	fs.StringVar(&f.direct, "direct", "auto", directHelp)
	fs.IntVar(&f.workers, "workers", loader.DefaultWorkers, "concurrent chunk reads")
	fs.StringVar(&f.chunkSize, "chunk-size", "auto", "chunk size, a multiple of the direct-I/O alignment, or auto: 4 MiB, and 8 MiB (one ranged GET each) where a load reads s3:// objects")
}

// parse checks the flags; its errors are usage errors.
func (f *ioFlags) parse() (mode loader.DirectMode, chunk int64, err error) {
	if mode, err = loader.ParseDirectMode(f.direct); err != nil {
		return 0, 0, usageError{err}
	}
	if f.chunkSize != "auto" { // auto: 0, the sources' preference
		if chunk, err = alignedSizeFlag("--chunk-size", f.chunkSize); err != nil {
			return 0, 0, err
		}
	}
	if err := intFlagIn("--workers", f.workers, 1, loader.MaxWorkers); err != nil {
		return 0, 0, err
	}
	return mode, chunk, nil
}
