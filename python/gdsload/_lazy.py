"""safe_open's lazy reads: the checkpoint opened from its headers alone
(gdsload_checkpoint_open), then each tensor or slice read when asked
(gdsload_checkpoint_fetch). The library plans which byte ranges a slice
covers; this module only turns Python indices into per-dimension
(start, step, count) selections and wraps what comes back."""

import operator
import os

from . import _dlpack, _native
from .dataset import _cache_request
from ._native import InvalidFile


def _need_lazy(L):
    if L.gdsload_abi_minor() < 1:
        raise ImportError("gdsload: the shared library lacks lazily opened checkpoints (C ABI minor 1); "
                          "rebuild it with 'make python' from the same checkout")


class Handle:
    """An opened checkpoint: names, dtypes, shapes and metadata from its
    headers; header_bytes is what opening read."""

    def __init__(self, path, options):
        self.id = 0
        L = _native.lib()
        _need_lazy(L)
        req = {"path": path}
        for k in ("direct", "token", "cache"):
            if options.get(k) is not None:
                req[k] = os.fspath(options[k]) if k == "cache" else options[k]
        _cache_request(req, options.get("cache_limit"))
        doc = _native.run_job(L.gdsload_checkpoint_open, req, filename=path, invalid=InvalidFile)
        self.id = doc["checkpoint"]
        self.path = doc["path"]
        self.metadata = doc.get("metadata")
        self.header_bytes = doc.get("header_bytes", 0)
        self.order = [t["name"] for t in doc["tensors"]]
        self.dtypes = {t["name"]: t["dtype"] for t in doc["tensors"]}
        self.shapes = {t["name"]: list(t["shape"]) for t in doc["tensors"]}

    def fetch(self, device, items, options):
        """Reads items, each (name, selection or None), in one load; returns
        (pieces, stats): per item a (allocation, piece document)."""
        L = _native.lib()
        req = {"checkpoint": self.id, "device": device,
               "requests": [{"name": n, "slice": s} for n, s in items]}
        for k in ("gpu_path", "workers", "chunk_size", "max_gap"):
            if options.get(k) is not None:
                req[k] = options[k]
        doc = _native.run_job(L.gdsload_checkpoint_fetch, req, on_abandoned=_free, filename=self.path,
                              invalid=InvalidFile)
        allocs = [_dlpack.Allocation(a) for a in doc["allocations"]]
        try:
            return [(allocs[p["alloc"]], p) for p in doc["pieces"]], doc["stats"]
        except BaseException:
            for a in allocs:
                a.release()
            raise

    def close(self):
        if self.id:
            _native.lib().gdsload_checkpoint_close(self.id)
            self.id = 0

    def __del__(self):
        # A handle never closed still lets its files go; not in a forked
        # child, where lib() refuses to run Go code.
        try:
            self.close()
        except Exception:
            pass


def _free(doc):
    for a in doc.get("allocations", []):
        _dlpack.Allocation(a).release()


def materialize(alloc, piece, framework):
    """The tensor or array a fetched piece holds, owning exactly the
    selection's memory: a view of the allocation when it is compact, else
    a strided view copied out of it (after which the allocation dies with
    the view)."""
    dtype = piece["dtype"]
    code, bits = _dlpack.DLPACK.get(dtype, (None, None))
    if code is None:
        raise ValueError(f"gdsload: tensor {piece['name']!r} has dtype {dtype}, which no framework here can view "
                         "(sub-byte types are packed)")
    shape = tuple(piece["shape"])
    try:
        if piece["compact"]:
            view = _dlpack.View(alloc, 0, code, bits, shape)
            return _dlpack.to_numpy(view, dtype) if framework == "np" else _dlpack.to_torch(view, dtype)
        esize = bits // 8
        flat = _dlpack.View(alloc, 0, code, bits, (alloc.size // esize,))
        strides = [s // esize for s in piece["strides"]]
        if framework == "np":
            import numpy as np

            a = _dlpack.to_numpy(flat, dtype)
            return np.lib.stride_tricks.as_strided(a[piece["base"] // esize:], shape, piece["strides"]).copy()
        t = _dlpack.to_torch(flat, dtype)
        return t.as_strided(shape, strides, piece["base"] // esize).clone()
    finally:
        alloc.release()


def selection(index, shape, framework):
    """Turns a get_slice index into (selection, squeeze): per dimension
    [start, step, count], and the dimensions an integer index drops. Returns
    None for indices it does not plan (lists, tensors, None, booleans): the
    caller then indexes the whole tensor. Raises as torch indexing does
    (IndexError, ValueError) for indices outside the tensor."""
    if not isinstance(index, tuple):
        index = (index,)
    if sum(1 for i in index if i is Ellipsis) > 1:
        return None
    n = len(shape)
    plain = [i for i in index if i is not Ellipsis]
    if len(plain) > n:
        raise IndexError(f"too many indices for tensor of dimension {n}")
    if any(i is Ellipsis for i in index):
        at = index.index(Ellipsis)
        index = index[:at] + (slice(None),) * (n - len(plain)) + index[at + 1:]
    index = tuple(index) + (slice(None),) * (n - len(index))
    sel, squeeze = [], []
    for d, (i, size) in enumerate(zip(index, shape)):
        if isinstance(i, slice):
            if i.step is not None and operator.index(i.step) <= 0:
                if framework == "np":
                    raise IndexError(f"Slice step must be a positive integer, got {operator.index(i.step)}")
                raise ValueError("step must be greater than zero")
            if framework == "np":
                _strict(i, size, d)
            start, stop, step = i.indices(size)
            count = max(0, (stop - start + step - 1) // step)
            sel.append([start if count else 0, step, count])
        elif isinstance(i, bool) or not hasattr(i, "__index__") or (hasattr(i, "shape") and i.shape != ()):
            return None
        else:
            k = operator.index(i)
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {d} with size {size}")
            sel.append([k % size, 1, 1])
            squeeze.append(d)
    return sel, squeeze


def _strict(i, size, d):
    """safetensors' numpy face does not clip a slice to the dimension as
    torch and numpy do: a stop past the end, or a start at or past it, is
    an error."""
    start = None if i.start is None else operator.index(i.start)
    stop = None if i.stop is None else operator.index(i.stop)
    if start is not None and start < 0:
        start += size
    if stop is not None and stop < 0:
        stop += size
    if (stop is not None and stop > size) or (start is not None and start >= size and (stop is None or stop > start)):
        raise IndexError(f"index out of bounds for tensor dimension #{d} of size {size}")
