// dlsym.h: filling a table of function pointers from a dlopen handle.
#ifndef GDSLOAD_DLSYM_H
#define GDSLOAD_DLSYM_H
#include <dlfcn.h>

// GD_SYM sets f->field to symbol name of h, or returns name from the
// enclosing loader function when the library lacks it.
#define GD_SYM(h, f, field, name) \
	if ((*(void **)(&(f)->field) = dlsym((h), (name))) == NULL) return (name);
// GD_OPT sets f->field to symbol name of h, NULL when the library lacks it.
#define GD_OPT(h, f, field, name) *(void **)(&(f)->field) = dlsym((h), (name));

#endif
