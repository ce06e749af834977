// Command mkfakecuda builds the CUDA test double into a folder (make
// fakecuda: build/fakecuda) under the real libraries' file names:
// libcuda.so.1, libcudart.so.13 and libcufile.so.0, all one shared object.
//
//	LD_LIBRARY_PATH=build/fakecuda gdsload doctor
package main

import (
	"fmt"
	"os"

	"github.com/gdsload/gdsload/internal/fakecuda"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mkfakecuda DIR")
		os.Exit(2)
	}
	if err := os.MkdirAll(os.Args[1], 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "mkfakecuda:", err)
		os.Exit(1)
	}
	l, err := fakecuda.Build(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkfakecuda:", err)
		os.Exit(1)
	}
	fmt.Printf("%s\n%s\n%s\n", l.CUDA, l.CUDART, l.CuFile)
}
