// Package npy owns the NumPy .npy format (versions 1.0, 2.0 and 3.0) used for
// raw tensor shards: parsing and validating a file's header, whose text is
// a Python literal such as
//
//	{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
//
// and writing files numpy reads back.
//
// ParseHeader accepts what numpy.load (numpy 1.24, allow_pickle=False)
// accepts and refuses the rest: the header is evaluated as Python's
// ast.literal_eval does (every string prefix, quote and escape but
// \N{name}, ints in every base, comments, line continuations), Python 2's
// long-integer suffixes ("(3L, 4L)") are dropped from version 1.0 and 2.0
// headers as numpy does, and the descr is read as numpy.dtype reads it:
// byte orders, kinds and sizes, type codes and names, datetime64 and
// timedelta64 units, comma strings, lists of fields (records, nested,
// with titles, padding and subarrays) and (dtype, shape) tuples. A shape
// dimension of -1 is worked out from the data, and bytes after the data
// are ignored (Header.Trailing), as numpy.load does. Object arrays are
// refused (ErrObjectDtype): their data is pickled Python objects, not
// fixed-size elements a loader can place in device memory. A test loads a
// corpus of some 900 header spellings with numpy itself and compares.
//
// Which dtypes a loader can view as a tensor is the loader's business
// (shards/checkpoint views plain little-endian numbers). The package reads
// nothing beyond the header.
package npy
