// Package npy owns the NumPy .npy format (versions 1.0, 2.0 and 3.0) used for
// raw tensor shards: parsing and strictly validating a file's header, whose
// text is a Python dict literal such as
//
//	{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
//
// and writing files numpy reads back. Only plain numeric dtypes (bool,
// signed and unsigned integers, floats, complex) are supported; object and
// structured dtypes are refused with a clear error, because their data is not
// a flat array of fixed-size elements a loader can place in device memory.
// The package reads nothing beyond the header.
package npy
