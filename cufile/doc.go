// Package cufile binds gdsload to NVIDIA's GPUDirect Storage library
// (libcufile), the CUDA runtime (libcudart) and a subset of the CUDA driver
// API (libcuda), all loaded at run time with dlopen.
//
// Nothing here links against CUDA: a plain go build works on any Linux
// machine with a C compiler, and the program still runs where CUDA is
// missing. Every way the GPU stack can be absent — a library not found, a
// symbol missing, no GPU, a driver that refuses to open — is reported as an
// error for which errors.Is(err, ErrUnavailable) holds, never as a crash.
//
// Libraries are searched, in order: the path named by an environment
// variable (GDSLOAD_LIBCUFILE, GDSLOAD_LIBCUDART, GDSLOAD_LIBCUDA; when set,
// nothing else is tried); then for each file name, newest version first
// (libcudart.so.13, .12, .11.0, .11), the dynamic loader's own search
// (LD_LIBRARY_PATH, ld.so.cache), $CUDA_HOME/lib64, /usr/local/cuda/lib64,
// and the nvidia/*/lib folders of Python site-packages, where pip installs
// CUDA. libcufile is looked for first beside the CUDA runtime that search
// finds (its folder, or the same site-packages), so that both come from one
// CUDA release even when another libcufile is installed system-wide.
//
// libcufile prints diagnostics on standard output and writes cufile.log
// into the current folder. Driver.Open captures the first (OpError.Output,
// Driver.Messages) and points the log elsewhere (Config.LogFile,
// CUFILE_LOGFILE_PATH).
//
// A loaded library stays mapped until the process exits: the CUDA libraries
// start threads and register exit handlers, so unloading them is unsafe.
//
// The CUDA runtime keeps the current device per OS thread. Device methods
// lock the calling goroutine to its thread and select their device first;
// Device.Do runs a function the same way.
//
// The package requires cgo (as does go-nvml). It knows nothing of loaders,
// formats or the command line.
package cufile
