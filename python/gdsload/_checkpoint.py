"""Checkpoints: load_file, save_file, safe_open, load and save, drop-ins
for safetensors.torch's (the same results and exception classes), and the
statistics of the last load."""

import os
import tempfile
import threading

from . import _distributed, _dlpack, _lazy, _native
from ._native import InvalidFile, SafetensorError
from .dataset import _cache_request


class MissingTensor(SafetensorError, KeyError):
    """A tensor name the checkpoint does not hold."""

    def __str__(self):  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class BadSlice(SafetensorError, IndexError):
    """A get_slice index outside the tensor (framework "np", as
    safetensors raises it; "pt" gets torch's IndexError, as there)."""


class NotATensor(ValueError, TypeError):
    """save_file given something other than a tensor or array, or tensors
    that are not a dict (safetensors: ValueError)."""


class BadMetadata(TypeError, ValueError):
    """Metadata that is not a dict of str to str (safetensors: TypeError)."""


class CannotSave(NotImplementedError, ValueError):
    """A tensor whose memory cannot be read: a meta tensor, or one on a
    device other than the CPU and CUDA (safetensors: torch's
    NotImplementedError, a RuntimeError)."""


_CLOSED = "File is closed"


class LoadStats:
    """What a load did, as `gdsload load --json` reports it.

    route: the data path, "gds" (cuFile, storage to GPU), "bounce" (pinned
    host buffers, then copies to the GPU) or "host"; reason: why that route
    (and why better ones were refused); bytes, seconds, gib_per_s: the
    bandwidth; bytes_read: the bytes read from storage (headers and data;
    stats["bytes_read"] works too); device; checkpoint: the file or index loaded; files: one dict
    per file (name, bytes, whether O_DIRECT was used); allocations: one
    (address, size, file) per file, the memory its tensors view. raw holds
    the whole document.
    """

    __slots__ = ("route", "reason", "bytes", "bytes_read", "seconds", "gib_per_s", "device", "checkpoint",
                 "files", "allocations", "raw")

    def __init__(self, doc=None):
        self.update(doc or {})

    def update(self, doc):
        self.raw = dict(doc)
        self.allocations = [tuple(a) for a in doc.get("allocations", [])]
        self.route = doc.get("path")
        self.reason = doc.get("reason")
        self.bytes = doc.get("bytes", 0)
        self.bytes_read = doc.get("bytes_read", 0)
        self.seconds = doc.get("seconds", 0.0)
        self.gib_per_s = doc.get("gib_per_s", 0.0)
        self.device = doc.get("device")
        self.checkpoint = doc.get("checkpoint")
        self.files = doc.get("files") or []

    def __getitem__(self, key):
        """stats["bytes_read"] and the like: an attribute, else a key of
        the whole document (KeyError if neither)."""
        if key in self.__slots__ and key != "raw":
            return getattr(self, key)
        return self.raw[key]

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
    loaded = _native.run_job(L.gdsload_load, req, finish=_Loaded, on_abandoned=_free_result, filename=path,
                             invalid=InvalidFile)
    _last.stats = loaded.stats
    return loaded


def load_file(filename, device="cpu", *, stats=None, process_group=None, **options):
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

    process_group: a torch.distributed process group whose ranks all call
    load_file on the same checkpoint: each rank reads a disjoint,
    byte-balanced share of whole tensors from storage and broadcasts it,
    so every rank gets every tensor and each byte is read once
    (docs/PYTHON.md, "Many ranks"). Then also exchange_chunk (bytes per
    message, 64 MiB) and read_window (bytes of its share a rank reads per
    round, 256 MiB); stats adds bytes_received, bytes_sent, rank,
    ranks, rank_bytes_read and rank_bytes_received (every rank's).

    Raises FileNotFoundError, PermissionError, SafetensorError (also a
    ValueError) for a corrupt or unsupported file (the message the gdsload
    CLI prints), RuntimeError when
    the device asked for is not usable, and KeyboardInterrupt on Ctrl-C,
    which cancels the load.
    """
    if process_group is not None:
        out, doc = _distributed.load_file(_path(filename), _device(device), options, process_group)
        st = LoadStats(doc)
        _last.stats = st
        if stats is not None:
            stats.update(doc)
        return out
    loaded = _load(filename, device, options)
    try:
        out = {name: loaded.tensor(name, "pt") for name in loaded.order}
    finally:
        loaded.release()
    if stats is not None:
        stats.update(loaded.stats.raw)
    return out


class _Slice:
    """safe_open's get_slice: the shape and dtype from the header, and
    indexing that reads only the byte ranges the index covers."""

    def __init__(self, f, name):
        self._f, self._name = f, name

    def get_shape(self):
        return list(self._f._open().shapes[self._name])

    def get_dtype(self):
        return self._f._open().dtypes[self._name]

    def __getitem__(self, index):
        f = self._f
        shape = f._open().shapes[self._name]
        try:
            plan = _lazy.selection(index, shape, f._framework)
        except IndexError as e:
            if f._framework == "pt":
                raise
            raise BadSlice(f"Error during slicing {index!r} with shape {list(shape)}: {e}") from e
        if plan is None:  # an index the library does not plan: take the tensor
            t = f.get_tensor(self._name)
            if f._framework == "pt":
                return t[index]
            try:
                return t[index]
            except IndexError as e:
                raise BadSlice(f"Error during slicing {index!r} with shape {list(t.shape)}: {e}") from e
        sel, squeeze = plan
        t = f._take(self._name, sel)
        if squeeze:
            t = t.reshape(tuple(n for d, (_, _, n) in enumerate(sel) if d not in squeeze))
        return t


_OPEN_OPTIONS = ("gpu_path", "direct", "workers", "chunk_size", "token", "cache", "cache_limit", "max_gap",
                 "exchange_chunk", "read_window")


class safe_open:
    """A checkpoint opened like safetensors.safe_open(filename, framework,
    device): keys(), get_tensor(name), get_slice(name), metadata(), as a
    context manager. framework "pt" gives torch tensors, "np" numpy arrays
    (device "cpu" only).

    Opening reads the headers only. get_tensor(name) reads that tensor's
    bytes; get_slice(name)[index] reads only the byte ranges the index
    covers (one range for consecutive rows, and for other slices ranges
    that read through at most max_gap unselected bytes in a row, 4096 by
    default); prefetch(items) reads many of them in one pipelined load.
    Each result owns its own memory, of the size of what was asked. The
    file is opened by what it holds, whatever its name. As safetensors, a
    handle used after close() (or its with block) raises SafetensorError,
    as does a name the file does not hold (MissingTensor, also a
    KeyError). stats (and last_stats()) says what was read so far:
    stats["bytes_read"] counts the headers and every range read.

    Options: gpu_path, direct, workers, chunk_size, token, cache,
    cache_limit (as load_file), max_gap (bytes).

    process_group: a torch.distributed process group whose ranks all open
    the same checkpoint. prefetch(items) is then collective: every rank
    calls it, each with the items it wants (possibly none, but no name
    the checkpoint lacks: that raises on its rank alone). A rank reads for
    itself what it alone wants and its rows of a tensor the ranks split
    along dimension 0; every other wanted tensor is read by one rank and
    sent to the ranks that want it (a broadcast when every rank wants it
    whole, else each rank's selections only), so each byte is read once.
    get_tensor and get_slice of what was not prefetched read it locally. Also takes exchange_chunk
    and read_window (as load_file); stats adds bytes_received,
    bytes_sent, rank_bytes_read and rank_bytes_received."""

    def __init__(self, filename, framework="pt", device="cpu", *, process_group=None, **options):
        fw = {"pt": "pt", "torch": "pt", "pytorch": "pt", "np": "np", "numpy": "np"}.get(str(framework))
        if fw is None:
            raise ValueError(f"gdsload: framework {framework!r}: want \"pt\" or \"np\"")
        if fw == "np" and _device(device) not in ("cpu", "host"):
            raise InvalidFile(f"gdsload: numpy arrays live in host memory; open with device=\"cpu\", not {device!r}")
        unknown = sorted(set(options) - set(_OPEN_OPTIONS))
        if unknown:
            raise TypeError(f"gdsload: unexpected options {unknown}")
        self._framework = fw
        self._handle = None
        self._cache = {}
        path = _path(filename)
        opts = {k: v for k, v in options.items() if v is not None}
        self._exchange = (opts.pop("exchange_chunk", None), opts.pop("read_window", None))
        self._group = None if process_group is None else _distributed.Group(process_group, _device(device))
        if opts.get("token") is None and path.startswith("rdmafs://") and os.environ.get("GDSLOAD_TOKEN"):
            opts["token"] = os.environ["GDSLOAD_TOKEN"]
        self._device, self._options = _device(device), opts
        self._handle = _lazy.Handle(path, opts)
        self._stats = LoadStats({"checkpoint": self._handle.path, "device": self._device,
                                 "bytes_read": self._handle.header_bytes, "bytes": 0, "tensors": 0})
        _last.stats = self._stats

    def _open(self):
        if self._handle is None:
            raise SafetensorError(_CLOSED)
        return self._handle

    def _key(self, name, sel):
        return (name, None if sel is None else tuple(map(tuple, sel)))

    def _fetch(self, items):
        """Reads items ((name, selection or None)) in one load into the
        cache, and adds what it read to stats."""
        h = self._open()
        todo = [it for it in items if self._key(*it) not in self._cache]
        if not todo:
            return
        try:
            pieces, st = h.fetch(self._device, todo, self._options)
        except ValueError as e:  # a selection the library refused: an index outside the tensor
            if "select outside" in str(e):
                raise BadSlice(str(e)) from e
            raise
        doc = dict(self._stats.raw)
        for k in ("bytes_read", "bytes", "seconds", "tensors"):
            doc[k] = doc.get(k, 0) + st.get(k, 0)
        doc.update(path=st.get("path"), reason=st.get("reason"))
        doc["gib_per_s"] = doc["bytes"] / doc["seconds"] / 2**30 if doc["seconds"] else 0.0
        self._stats.update(doc)
        _last.stats = self._stats
        for it, piece in zip(todo, pieces):
            key = self._key(*it)
            if key in self._cache:  # asked twice in one prefetch
                piece[0].release()
            else:
                self._cache[key] = piece

    def _take(self, name, sel):
        """The tensor (sel None) or selection, read now unless prefetched;
        a prefetched one leaves the cache, so its memory is the caller's."""
        self._fetch([(name, sel)])
        got = self._cache.pop(self._key(name, sel))
        if not isinstance(got, tuple):  # a torch tensor the ranks of a process group exchanged
            return got.numpy() if self._framework == "np" else got
        alloc, piece = got
        return _lazy.materialize(alloc, piece, self._framework)

    def keys(self):
        """Tensor names, sorted."""
        return sorted(self._open().order)

    def offset_keys(self):
        """Tensor names in file order."""
        return list(self._open().order)

    def metadata(self):
        """The file's "__metadata__", or for a sharded checkpoint its
        index's "metadata" with values that are not strings in their JSON
        form ({"total_size": "1234"}); None when there is none (always
        for .npy)."""
        m = self._open().metadata
        return dict(m) if m is not None else None

    def get_tensor(self, name):
        if name not in self._open().dtypes:
            raise MissingTensor(f"File does not contain tensor {name}")
        return self._take(name, None)

    def get_slice(self, name):
        if name not in self._open().dtypes:
            raise MissingTensor(f"File does not contain tensor {name}")
        return _Slice(self, name)

    def prefetch(self, items):
        """Reads many tensors and slices in one pipelined load, so later
        get_tensor and get_slice calls for them take them from memory
        instead of storage. items: tensor names (the whole tensor) or
        (name, index) pairs, index as get_slice(name)[index] takes it.
        Each prefetched result is handed out once; what is never taken is
        freed by close()."""
        h = self._open()
        plan = []
        for it in items:
            name, index = (it, None) if isinstance(it, str) else it
            if name not in h.dtypes:
                raise MissingTensor(f"File does not contain tensor {name}")
            if index is None:
                plan.append((name, None))
                continue
            got = _lazy.selection(index, h.shapes[name], self._framework)
            if got is not None:
                plan.append((name, got[0]))
        if self._group is not None:
            self._exchange_items(plan)
            return
        self._fetch(plan)

    def _exchange_items(self, plan):
        """prefetch with a process group: every rank's items, read once
        among the ranks and exchanged (collective)."""
        h = self._open()
        todo = [it for it in plan if self._key(*it) not in self._cache]
        got, st = _distributed.exchange(h, todo, self._device, self._options, self._group, *self._exchange)
        for key, t in got.items():
            self._cache.setdefault(key, t)
        doc = dict(self._stats.raw)
        for k in ("bytes_read", "bytes", "bytes_received", "bytes_sent", "seconds", "read_seconds"):
            doc[k] = doc.get(k, 0) + st.get(k, 0)
        doc["tensors"] = doc.get("tensors", 0) + len(got)
        doc["rounds"] = doc.get("rounds", 0) + st["rounds"]
        doc["tensors_read"] = doc.get("tensors_read", []) + st["tensors_read"]
        doc["own_reads"] = doc.get("own_reads", 0) + st["own_reads"]
        doc.update(path=st.get("path") or doc.get("path"), reason=st.get("reason") or doc.get("reason"),
                   rank=st["rank"], ranks=st["ranks"], backend=st["backend"], header_bytes=h.header_bytes)
        doc["gib_per_s"] = doc["bytes"] / doc["seconds"] / 2**30 if doc["seconds"] else 0.0
        self._stats.update(_distributed.every_rank(self._group, doc))
        _last.stats = self._stats

    @property
    def stats(self):
        self._open()
        return self._stats

    def close(self):
        h, self._handle = self._handle, None
        cache, self._cache = self._cache, {}
        for got in cache.values():
            if isinstance(got, tuple):
                got[0].release()
        if h is not None:
            h.close()

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
    if type(t).__module__ == "numpy" and type(t).__name__ == "ndarray":
        import numpy as np

        if not t.flags.c_contiguous:  # safetensors' numpy face saves a C-ordered copy
            t = np.ascontiguousarray(t)
        if t.dtype.byteorder == ">" or (t.dtype.byteorder == "=" and np.little_endian is False):
            t = t.astype(t.dtype.newbyteorder("<"))  # files are little-endian; safetensors converts too
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and isinstance(t, torch.Tensor):
        if t.layout != torch.strided:
            raise ValueError(f"gdsload: tensor {name!r} is {t.layout}; save dense tensors")
        if t.device.type not in ("cpu", "cuda"):
            raise CannotSave(f"gdsload: tensor {name!r} is on {t.device}, whose memory cannot be read; "
                             "save CPU or CUDA tensors")
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
        if dtype is None:
            raise InvalidFile(f"gdsload: array {name!r} has dtype {t.dtype}, which safetensors cannot store")
        return {"name": name, "dtype": dtype, "shape": list(t.shape), "ptr": t.ctypes.data if t.nbytes else 0,
                "bytes": int(t.nbytes), "device_type": _dlpack.KDL_CPU, "device_id": 0, "numpy": True}, t
    raise NotATensor(f"gdsload: tensor {name!r} is a {type(t).__name__}; save torch tensors or numpy arrays")


def _check_shared(entries):
    """Refuses torch tensors whose memory overlaps, as safetensors.torch
    does: the file would hold the bytes twice and loading would not share
    them again. numpy arrays may overlap, as safetensors.numpy lets them."""
    spans = sorted((e["device_type"], e["device_id"], e["ptr"], e["ptr"] + e["bytes"], e["name"])
                   for e in entries if e["bytes"] and not e.get("numpy"))
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
            raise BadMetadata("gdsload: metadata must be a dict of str to str")
    if not isinstance(tensors, dict):
        raise NotATensor(f"gdsload: tensors is a dict of name to tensor, not {type(tensors).__name__}")
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
    for e in entries:
        e.pop("numpy", None)  # not part of the request
    L = _native.lib()
    doc = _native.run_job(L.gdsload_save, {"path": path, "metadata": metadata, "tensors": entries}, filename=path,
                          invalid=InvalidFile)
    del keep
    if stats is not None:
        stats.update(doc)
    return doc


def save(tensors, metadata=None):
    """The bytes of a safetensors file holding tensors, like
    safetensors.torch.save: save_file to a temporary file, read back."""
    with tempfile.TemporaryDirectory(prefix="gdsload-save-") as d:
        p = os.path.join(d, "tensors.safetensors")
        save_file(tensors, p, metadata)
        with open(p, "rb") as f:
            return f.read()


def load(data, device="cpu"):
    """The tensors of a safetensors file's bytes, like
    safetensors.torch.load: written to a temporary file and loaded with
    load_file (the tensors do not share the bytes given)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"gdsload: load takes the bytes of a safetensors file, not {type(data).__name__}")
    with tempfile.TemporaryDirectory(prefix="gdsload-load-") as d:
        p = os.path.join(d, "tensors.safetensors")
        with open(p, "wb") as f:
            f.write(data)
        return load_file(p, device)
