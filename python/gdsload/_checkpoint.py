"""Checkpoints: load_file, save_file and safe_open, drop-ins for
safetensors.torch's, and the statistics of the last load."""

import os
import threading

from . import _dlpack, _native
from .dataset import _cache_request


class LoadStats:
    """What a load did, as `gdsload load --json` reports it.

    route: the data path, "gds" (cuFile, storage to GPU), "bounce" (pinned
    host buffers, then copies to the GPU) or "host"; reason: why that route
    (and why better ones were refused); bytes, seconds, gib_per_s: the
    bandwidth; device; checkpoint: the file or index loaded; files: one dict
    per file (name, bytes, whether O_DIRECT was used); allocations: one
    (address, size, file) per file, the memory its tensors view. raw holds
    the whole document.
    """

    __slots__ = ("route", "reason", "bytes", "seconds", "gib_per_s", "device", "checkpoint", "files",
                 "allocations", "raw")

    def __init__(self, doc=None):
        self.update(doc or {})

    def update(self, doc):
        self.raw = dict(doc)
        self.allocations = [tuple(a) for a in doc.get("allocations", [])]
        self.route = doc.get("path")
        self.reason = doc.get("reason")
        self.bytes = doc.get("bytes", 0)
        self.seconds = doc.get("seconds", 0.0)
        self.gib_per_s = doc.get("gib_per_s", 0.0)
        self.device = doc.get("device")
        self.checkpoint = doc.get("checkpoint")
        self.files = doc.get("files") or []

    def __repr__(self):
        return (f"LoadStats(route={self.route!r}, reason={self.reason!r}, bytes={self.bytes}, "
                f"seconds={self.seconds:.3f}, gib_per_s={self.gib_per_s:.2f}, device={self.device!r})")


_last = threading.local()


def last_stats():
    """The LoadStats of this thread's last load (load_file or safe_open), or
    None before the first."""
    return getattr(_last, "stats", None)


def _device(device):
    """Normalizes a device as safetensors accepts it: "cpu", "cuda",
    "cuda:N", an int N, or a torch.device."""
    if isinstance(device, int):
        return f"cuda:{device}"
    d = str(device)
    if d == "cuda":
        try:
            import torch

            if torch.cuda.is_available():
                return f"cuda:{torch.cuda.current_device()}"
        except ImportError:
            pass
        return "cuda:0"
    return d


def _path(filename):
    if isinstance(filename, (bytes, os.PathLike)):
        filename = os.fsdecode(filename)
    if not isinstance(filename, str):
        raise TypeError(f"gdsload: a file name or URL, not {type(filename).__name__}")
    return filename


class _Loaded:
    """A load's result: its allocations (one reference each, until
    release) and a view per tensor."""

    def __init__(self, doc):
        self.allocations = [_dlpack.Allocation(a) for a in doc["allocations"]]
        self.metadata = doc.get("metadata")
        stats = dict(doc["stats"])
        stats["allocations"] = [(a["ptr"], a["size"], a["file"]) for a in doc["allocations"]]
        self.stats = LoadStats(stats)
        self.order = []  # tensor names in file order
        self.dtypes = {}
        self.views = {}
        for t in doc["tensors"]:
            code, bits = _dlpack.DLPACK.get(t["dtype"], (None, None))
            self.order.append(t["name"])
            self.dtypes[t["name"]] = t["dtype"]
            if code is not None:
                self.views[t["name"]] = _dlpack.View(self.allocations[t["alloc"]], t["offset"], code, bits, t["shape"] or ())

    def tensor(self, name, framework):
        dtype = self.dtypes[name]
        view = self.views.get(name)
        if view is None:
            raise ValueError(f"gdsload: tensor {name!r} has dtype {dtype}, which no framework here can view "
                             "(sub-byte types are packed)")
        if framework == "np":
            return _dlpack.to_numpy(view, dtype)
        return _dlpack.to_torch(view, dtype)

    def release(self):
        for a in self.allocations:
            a.release()


def _free_result(doc):
    for a in doc.get("allocations", []):
        _dlpack.Allocation(a).release()


def _load(filename, device, options):
    path = _path(filename)
    req = {"path": path, "device": _device(device)}
    for k in ("gpu_path", "direct", "workers", "chunk_size", "token", "cache"):
        v = options.pop(k, None)
        if v is not None:
            req[k] = os.fspath(v) if k == "cache" else v
    if req.get("token") is None and path.startswith("rdmafs://") and os.environ.get("GDSLOAD_TOKEN"):
        req["token"] = os.environ["GDSLOAD_TOKEN"]
    _cache_request(req, options.pop("cache_limit", None))
    if options:
        raise TypeError(f"gdsload: unexpected options {sorted(options)}")
    L = _native.lib()
    loaded = _native.run_job(L.gdsload_load, req, finish=_Loaded, on_abandoned=_free_result, filename=path)
    _last.stats = loaded.stats
    return loaded


def load_file(filename, device="cpu", *, stats=None, **options):
    """Loads a safetensors checkpoint as a dict of torch tensors, like
    safetensors.torch.load_file: same keys, dtypes, shapes and values.

    filename: a .safetensors file, a sharded checkpoint's
    *.safetensors.index.json (or the directory holding it), a .npy file, or
    an rdmafs:// URL. device: "cpu", "cuda", "cuda:N" or an int. Each file
    is read into one allocation of gdsload's (page-aligned host memory, or
    GPU memory through cuFile or pinned buffers) and the tensors are views
    of it, handed over through DLPack without a copy; the memory is freed
    when the last tensor of the file dies.

    stats: a LoadStats to fill; last_stats() returns it too. Options:
    gpu_path ("auto", "gds", "bounce"), direct ("auto", "on", "off"),
    workers, chunk_size (bytes), token (rdmafs secret; default
    $GDSLOAD_TOKEN), cache (a folder on a local disk in which to keep
    copies of s3:// and rdmafs:// files, shared by the node's processes;
    default $GDSLOAD_CACHE; stats.raw["cache"] says what it did) and
    cache_limit (bytes or a size such as "200GiB"; default half the free
    space).

    Raises FileNotFoundError, PermissionError, ValueError for a corrupt or
    unsupported file (the message the gdsload CLI prints), RuntimeError when
    the device asked for is not usable, and KeyboardInterrupt on Ctrl-C,
    which cancels the load.
    """
    loaded = _load(filename, device, options)
    try:
        out = {name: loaded.tensor(name, "pt") for name in loaded.order}
    finally:
        loaded.release()
    if stats is not None:
        stats.update(loaded.stats.raw)
    return out


class _Slice:
    """safe_open's get_slice: the shape and dtype without taking the tensor,
    and indexing."""

    def __init__(self, f, name):
        self._f, self._name = f, name

    def get_shape(self):
        return list(self._f._loaded.views[self._name].shape)

    def get_dtype(self):
        return self._f._loaded.dtypes[self._name]

    def __getitem__(self, index):
        return self._f.get_tensor(self._name)[index]


class safe_open:
    """A checkpoint opened like safetensors.safe_open(filename, framework,
    device): keys(), get_tensor(name), get_slice(name), metadata(), as a
    context manager. framework "pt" gives torch tensors, "np" numpy arrays
    (device "cpu" only). The whole checkpoint is loaded when it opens (one
    allocation per file); get_tensor returns views of it, valid after the
    file closes."""

    def __init__(self, filename, framework="pt", device="cpu", **options):
        fw = {"pt": "pt", "torch": "pt", "pytorch": "pt", "np": "np", "numpy": "np"}.get(str(framework))
        if fw is None:
            raise ValueError(f"gdsload: framework {framework!r}: want \"pt\" or \"np\"")
        if fw == "np" and _device(device) not in ("cpu", "host"):
            raise ValueError("gdsload: numpy arrays live in host memory; open with device=\"cpu\"")
        self._framework = fw
        self._loaded = _load(filename, device, dict(options))

    def keys(self):
        """Tensor names, sorted."""
        return sorted(self._loaded.order)

    def offset_keys(self):
        """Tensor names in file order."""
        return list(self._loaded.order)

    def metadata(self):
        """The file's "__metadata__" (None when it has none, or for a
        sharded checkpoint)."""
        m = self._loaded.metadata
        return dict(m) if m is not None else None

    def get_tensor(self, name):
        if name not in self._loaded.dtypes:
            raise KeyError(f"gdsload: the checkpoint holds no tensor {name!r}")
        return self._loaded.tensor(name, self._framework)

    def get_slice(self, name):
        if name not in self._loaded.dtypes:
            raise KeyError(f"gdsload: the checkpoint holds no tensor {name!r}")
        return _Slice(self, name)

    @property
    def stats(self):
        return self._loaded.stats

    def close(self):
        self._loaded.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


# torch dtype name -> safetensors dtype
_SAFETENSORS_OF_TORCH = {v: k for k, v in _dlpack.TORCH_NAMES.items()}
_SAFETENSORS_OF_NUMPY = {v: k for k, v in _dlpack.NUMPY_NAMES.items()}


def _describe(name, t):
    """(entry for the save request, object to keep alive) for one tensor."""
    if not isinstance(name, str):
        raise TypeError(f"gdsload: tensor names are strings, not {type(name).__name__}")
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and isinstance(t, torch.Tensor):
        if t.layout != torch.strided:
            raise ValueError(f"gdsload: tensor {name!r} is {t.layout}; save dense tensors")
        if not t.is_contiguous():
            raise ValueError(f"gdsload: tensor {name!r} is not contiguous; call .contiguous() first "
                             "(as safetensors asks)")
        dtype = _SAFETENSORS_OF_TORCH.get(str(t.dtype).removeprefix("torch."))
        if dtype is None:
            raise ValueError(f"gdsload: tensor {name!r} has dtype {t.dtype}, which safetensors cannot store")
        if t.device.type == "cuda":
            dev = (_dlpack.KDL_CUDA, t.device.index if t.device.index is not None else torch.cuda.current_device())
        elif t.device.type == "cpu":
            dev = (_dlpack.KDL_CPU, 0)
        else:
            raise ValueError(f"gdsload: tensor {name!r} is on {t.device}; save CPU or CUDA tensors")
        nbytes = t.numel() * t.element_size()
        return {"name": name, "dtype": dtype, "shape": list(t.shape), "ptr": t.data_ptr() if nbytes else 0,
                "bytes": nbytes, "device_type": dev[0], "device_id": dev[1]}, t
    try:
        import numpy as np
    except ImportError:
        np = None
    if np is not None and isinstance(t, np.ndarray):
        if not t.flags.c_contiguous:
            raise ValueError(f"gdsload: array {name!r} is not C-contiguous; use np.ascontiguousarray first")
        dtype = _SAFETENSORS_OF_NUMPY.get(t.dtype.name)
        if dtype is None or t.dtype.byteorder == ">":
            raise ValueError(f"gdsload: array {name!r} has dtype {t.dtype}, which safetensors cannot store")
        return {"name": name, "dtype": dtype, "shape": list(t.shape), "ptr": t.ctypes.data if t.nbytes else 0,
                "bytes": int(t.nbytes), "device_type": _dlpack.KDL_CPU, "device_id": 0}, t
    raise TypeError(f"gdsload: tensor {name!r} is a {type(t).__name__}; save torch tensors or numpy arrays")


def _check_shared(entries):
    """Refuses tensors whose memory overlaps, as safetensors does: the file
    would hold the bytes twice and loading would not share them again."""
    spans = sorted((e["device_type"], e["device_id"], e["ptr"], e["ptr"] + e["bytes"], e["name"])
                   for e in entries if e["bytes"])
    for a, b in zip(spans, spans[1:]):
        if a[:2] == b[:2] and b[2] < a[3]:
            raise RuntimeError(f"gdsload: tensors {a[4]!r} and {b[4]!r} share memory; save a clone of one "
                               "(safetensors refuses shared tensors too)")


def save_file(tensors, filename, metadata=None, *, stats=None):
    """Writes tensors (a dict of torch tensors on CPU or CUDA, or numpy
    arrays) as a safetensors file, like safetensors.torch.save_file:
    metadata is a dict of strings stored as "__metadata__". The file is
    written atomically: a temporary file in the same directory, fsync,
    rename, so the path never holds a partial file. Returns the save's
    statistics (and fills stats, a dict, if given)."""
    path = _path(filename)
    if metadata is not None:
        if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise ValueError("gdsload: metadata must be a dict of str to str")
    if not isinstance(tensors, dict):
        raise TypeError(f"gdsload: tensors is a dict of name to tensor, not {type(tensors).__name__}")
    entries, keep = [], []
    for name, t in tensors.items():
        e, obj = _describe(name, t)
        entries.append(e)
        keep.append(obj)
    _check_shared(entries)
    cuda = {e["device_id"] for e in entries if e["device_type"] == _dlpack.KDL_CUDA}
    if cuda:
        import torch

        for d in cuda:  # kernels still writing the tensors must finish first
            torch.cuda.synchronize(d)
    L = _native.lib()
    doc = _native.run_job(L.gdsload_save, {"path": path, "metadata": metadata, "tensors": entries}, filename=path)
    del keep
    if stats is not None:
        stats.update(doc)
    return doc
