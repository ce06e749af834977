"""DLPack views of gdsload's allocations, and their hand-over to torch and
numpy without a copy."""

import ctypes

from . import _native

# DLPack device types and type codes (capi/dlpack.h).
KDL_CPU, KDL_CUDA, KDL_CUDA_HOST = 1, 2, 3
INT, UINT, FLOAT, BFLOAT, COMPLEX, BOOL = 0, 1, 2, 4, 5, 6

# safetensors dtype -> (DLPack code, bits).
DLPACK = {
    "BOOL": (BOOL, 8),
    "U8": (UINT, 8), "I8": (INT, 8),
    "U16": (UINT, 16), "I16": (INT, 16), "F16": (FLOAT, 16), "BF16": (BFLOAT, 16),
    "U32": (UINT, 32), "I32": (INT, 32), "F32": (FLOAT, 32),
    "U64": (UINT, 64), "I64": (INT, 64), "F64": (FLOAT, 64), "C64": (COMPLEX, 64),
    "F8_E4M3": (10, 8), "F8_E4M3FNUZ": (11, 8), "F8_E5M2": (12, 8), "F8_E5M2FNUZ": (13, 8),
    "F8_E8M0": (14, 8),
}

# Torch dtypes by name, for the safetensors dtypes that have one; those
# missing from the installed torch are skipped.
TORCH_NAMES = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8", "U16": "uint16", "I16": "int16",
    "F16": "float16", "BF16": "bfloat16", "U32": "uint32", "I32": "int32", "F32": "float32",
    "U64": "uint64", "I64": "int64", "F64": "float64", "C64": "complex64",
    "F8_E4M3": "float8_e4m3fn", "F8_E4M3FNUZ": "float8_e4m3fnuz", "F8_E5M2": "float8_e5m2",
    "F8_E5M2FNUZ": "float8_e5m2fnuz", "F8_E8M0": "float8_e8m0fnu",
}

NUMPY_NAMES = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8", "U16": "uint16", "I16": "int16",
    "F16": "float16", "U32": "uint32", "I32": "int32", "F32": "float32",
    "U64": "uint64", "I64": "int64", "F64": "float64", "C64": "complex64",
}

# Same-width integer stand-ins, for consumers whose DLPack import lacks a
# code (torch 1.13 has no bool, no float8): viewed as the real dtype after.
_STANDIN = {8: (UINT, 8), 16: (INT, 16), 32: (INT, 32), 64: (INT, 64)}


class _Capsules:
    """CPython's PyCapsule_New, with the library's destructor and names."""

    def __init__(self):
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self.new = new
        L = _native.lib(go=False)
        self.destructor = ctypes.cast(L.gdsload_capsule_destructor, ctypes.c_void_p).value
        self.names = {False: L.gdsload_capsule_name(0), True: L.gdsload_capsule_name(1)}


_capsules = None


def capsules():
    global _capsules
    if _capsules is None:
        _capsules = _Capsules()
    return _capsules


class Allocation:
    """One reference to an allocation of gdsload's (one checkpoint file's
    data), dropped by release() or when this object dies. Views hold their
    own references, so tensors outlive it."""

    __slots__ = ("handle", "ptr", "size", "device", "file", "__weakref__")

    def __init__(self, doc):
        self.handle = doc["handle"]
        self.ptr = doc["ptr"]
        self.size = doc["size"]
        self.device = (doc["device_type"], doc["device_id"])
        self.file = doc["file"]

    def release(self):
        h, self.handle = self.handle, 0
        if h:
            _native.lib(go=False).gdsload_alloc_release(h)

    def __del__(self):
        try:
            self.release()
        except Exception:  # interpreter shutdown: the process frees it
            pass


class View:
    """A DLPack producer for one tensor inside an Allocation. Each
    __dlpack__ call makes a new capsule that holds the allocation until the
    consumer's tensor (or the unconsumed capsule) dies."""

    __slots__ = ("alloc", "offset", "code", "bits", "shape")

    def __init__(self, alloc, offset, code, bits, shape):
        self.alloc, self.offset, self.code, self.bits, self.shape = alloc, offset, code, bits, tuple(shape)

    def __dlpack_device__(self):
        return self.alloc.device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        # The bytes are in place when the load returns (GPU copies are
        # synchronized), so any stream may use them at once.
        if dl_device is not None and tuple(dl_device) != self.alloc.device:
            raise BufferError(f"gdsload: tensor lives on DLPack device {self.alloc.device}, not {tuple(dl_device)}")
        if copy:
            raise BufferError("gdsload: views are never copies; copy the tensor after taking it")
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        return self.capsule(self.code, self.bits, versioned)

    def capsule(self, code, bits, versioned=False):
        if not self.alloc.handle:
            raise BufferError("gdsload: the allocation was released")
        L = _native.lib(go=False)
        shape = (ctypes.c_int64 * max(1, len(self.shape)))(*self.shape)
        t = L.gdsload_dlpack(self.alloc.handle, self.offset, code, bits, len(self.shape), shape, int(versioned), 0)
        if not t:
            raise BufferError(f"gdsload: cannot make a DLPack view of {bits}-bit shape {self.shape} at offset {self.offset} "
                              f"of a {self.alloc.size}-byte allocation")
        c = capsules()
        try:
            return c.new(t, c.names[versioned], c.destructor)
        except BaseException:
            L.gdsload_dlpack_delete(t, int(versioned))
            raise


class _StandIn:
    """A View seen through a same-width integer dtype."""

    __slots__ = ("view",)

    def __init__(self, view):
        self.view = view

    def __dlpack_device__(self):
        return self.view.__dlpack_device__()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        code, bits = _STANDIN[self.view.bits]
        return self.view.capsule(code, bits, max_version is not None and tuple(max_version)[0] >= 1)


_torch_direct = {}  # (code, bits) -> whether torch's DLPack import takes it


def to_torch(view, dtype_name):
    """A torch tensor viewing view's bytes, without a copy."""
    from torch.utils import dlpack as tdl

    return _import(view, torch_dtype(dtype_name), _torch_direct, tdl.from_dlpack)


def torch_dtype(name):
    import torch

    attr = TORCH_NAMES.get(name)
    dt = getattr(torch, attr, None) if attr else None
    if not isinstance(dt, torch.dtype):
        raise ValueError(f"gdsload: dtype {name} has no torch dtype in torch {torch.__version__}")
    return dt


def numpy_dtype(name):
    import numpy as np

    attr = NUMPY_NAMES.get(name)
    if attr is None:
        raise ValueError(f"gdsload: dtype {name} has no numpy dtype; use framework=\"pt\"")
    return np.dtype(attr)


_numpy_direct = {}  # (code, bits) -> whether numpy's DLPack import takes it


def to_numpy(view, dtype_name):
    """A numpy array viewing view's bytes (host memory only), without a copy."""
    import numpy as np

    target = numpy_dtype(dtype_name)
    if view.alloc.device[0] not in (KDL_CPU, KDL_CUDA_HOST):
        raise ValueError("gdsload: numpy arrays live in host memory; load with device=\"cpu\"")
    return _import(view, target, _numpy_direct, np.from_dlpack)


def _import(view, target, direct, from_dlpack):
    """from_dlpack(view) where the framework takes the view's DLPack dtype as
    target, else from_dlpack of a stand-in reinterpreted as target. Which
    way works is remembered in direct, per (code, bits)."""
    key = (view.code, view.bits)
    if direct.get(key, True):
        try:
            x = from_dlpack(view)
            if x.dtype == target:
                direct[key] = True
                return x
        except (RuntimeError, BufferError, TypeError):
            pass
        direct[key] = False
    return from_dlpack(_StandIn(view)).view(target)
