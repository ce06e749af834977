"""The shared library (libgdsload.so) through ctypes: loading it once per
process, the fork guard, jobs polled so Ctrl-C cancels them, and the
mapping of its status codes to Python exceptions.

The library embeds a Go runtime that starts when the library is loaded and
does not survive fork(). So it is loaded lazily, on the first call that
needs it, and a process forked from one that had loaded it is refused (see
ForkError). Deleting tensors needs no Go and works anywhere.
"""

import ctypes
import errno
import json
import os
import signal
import threading

ABI_VERSION = 1

# gdsload_status (gdsload.h)
OK, NOT_FOUND, PERMISSION, INVALID, CANCELED, IO, PENDING, END, UNAVAILABLE = range(9)

# How long one wait call blocks: the latency of Ctrl-C.
_POLL_MS = 100

FORK_ADVICE = (
    "gdsload's runtime was started in a parent process and does not survive fork(); "
    "this process is a forked child of it. Give the DataLoader "
    'multiprocessing_context="spawn" or "forkserver", or do not use gdsload in the parent '
    "before its workers fork (a ShardDataset only opens itself when a worker iterates it, "
    "so creating one is safe), or open what the worker needs in worker_init_fn after a spawn"
)


class ForkError(RuntimeError):
    """Raised in a process forked after gdsload's runtime started in its
    parent: the Go runtime does not survive fork()."""


class SafetensorError(Exception):
    """safetensors' SafetensorError: a file that is not a valid
    checkpoint, a tensor the file does not hold, a handle used after it
    closed. Subclasses also derive from the built-in exception gdsload
    raised before (ValueError, KeyError, IndexError), so code catching
    either catches them."""


class InvalidFile(SafetensorError, ValueError):
    """A corrupt or unsupported checkpoint, or a request the library
    refuses (an unknown device)."""


class _State:
    lock = threading.Lock()
    cdll = None
    pid = None  # the process that loaded the library


def library_path():
    """The shared object to load: $GDSLOAD_LIBRARY, else the one beside this
    package (put there by `make python` or inside a wheel)."""
    env = os.environ.get("GDSLOAD_LIBRARY")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libgdsload.so")


def _declare(cdll):
    c = ctypes
    u64p, vpp = c.POINTER(c.c_uint64), c.POINTER(c.c_void_p)
    sigs = {
        "gdsload_abi_version": (c.c_int32, []),
        "gdsload_abi_minor": (c.c_int32, []),
        "gdsload_checkpoint_open": (c.c_int, [c.c_char_p, u64p, vpp]),
        "gdsload_checkpoint_fetch": (c.c_int, [c.c_char_p, u64p, vpp]),
        "gdsload_checkpoint_close": (None, [c.c_uint64]),
        "gdsload_checkpoint_shares": (c.c_int, [c.c_char_p, u64p, vpp]),
        "gdsload_free": (None, [c.c_void_p]),
        "gdsload_build_info": (c.c_void_p, []),
        "gdsload_load": (c.c_int, [c.c_char_p, u64p, vpp]),
        "gdsload_save": (c.c_int, [c.c_char_p, u64p, vpp]),
        "gdsload_dataset_open": (c.c_int, [c.c_char_p, u64p, vpp]),
        "gdsload_wait": (c.c_int, [c.c_uint64, c.c_int32, vpp, vpp]),
        "gdsload_cancel": (None, [c.c_uint64]),
        "gdsload_next": (c.c_int, [c.c_uint64, c.c_int32, vpp, u64p, vpp]),
        "gdsload_state": (c.c_int, [c.c_uint64, vpp, vpp]),
        "gdsload_iterator_close": (None, [c.c_uint64]),
        "gdsload_dlpack": (c.c_void_p, [c.c_void_p, c.c_uint64, c.c_uint8, c.c_uint8, c.c_int32,
                                        c.POINTER(c.c_int64), c.c_int32, c.c_int32]),
        "gdsload_dlpack_delete": (None, [c.c_void_p, c.c_int32]),
        "gdsload_alloc_retain": (None, [c.c_void_p]),
        "gdsload_alloc_release": (None, [c.c_void_p]),
        "gdsload_live_allocations": (c.c_int64, []),
        "gdsload_capsule_api": (None, [c.c_void_p, c.c_void_p]),
        "gdsload_capsule_name": (c.c_void_p, [c.c_int32]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(cdll, name)
        f.restype, f.argtypes = res, args
    api = ctypes.pythonapi
    cdll.gdsload_capsule_api(ctypes.cast(api.PyCapsule_IsValid, c.c_void_p),
                             ctypes.cast(api.PyCapsule_GetPointer, c.c_void_p))


def _load():
    path = library_path()
    if not os.path.exists(path):
        raise ImportError(
            f"gdsload: the shared library {path} is missing: build it with 'make python' "
            "(or install a gdsload wheel), or point GDSLOAD_LIBRARY at libgdsload.so")
    cdll = ctypes.CDLL(path)
    _declare(cdll)
    abi = cdll.gdsload_abi_version()
    if abi != ABI_VERSION:
        raise ImportError(f"gdsload: {path} has C ABI version {abi}, this package wants {ABI_VERSION}; "
                          "rebuild it with 'make python' from the same checkout")
    return cdll


def lib(go=True):
    """The loaded library, loading it in this process on first use. With go
    (every call that runs Go code), a forked child of a process that had
    loaded it gets ForkError instead."""
    pid = os.getpid()
    s = _State
    if s.cdll is not None and (s.pid == pid or not go):
        return s.cdll
    with s.lock:
        if s.cdll is None:
            s.cdll = _load()
            s.pid = pid
        elif s.pid != pid and go:
            raise ForkError(FORK_ADVICE)
        return s.cdll


def started():
    """Whether this process (or a parent it was forked from) loaded the
    library, so its Go runtime runs or ran."""
    return _State.cdll is not None


def usable_here():
    """Whether Go code can run in this process: never loaded, or loaded by
    this very process."""
    return _State.cdll is None or _State.pid == os.getpid()


def take_string(ptr):
    """Copies a malloc'd C string from the library and frees it."""
    if not ptr:
        return ""
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        lib(go=False).gdsload_free(ptr)


def error_for(status, message, filename=None, invalid=ValueError, errnum=0):
    """The Python exception for a gdsload_status; invalid is the class for
    a corrupt file or a refused request. errnum, the system error number
    the library reported, picks the OSError subclass of an I/O error
    (IsADirectoryError, NotADirectoryError, ENOSPC's OSError, ...)."""
    if status == NOT_FOUND:
        return FileNotFoundError(errno.ENOENT, message, filename) if filename else FileNotFoundError(errno.ENOENT, message)
    if status == PERMISSION:
        return PermissionError(errno.EACCES, message, filename) if filename else PermissionError(errno.EACCES, message)
    if status == INVALID:
        return invalid(message)
    if status == UNAVAILABLE:
        return RuntimeError(message)
    if status == CANCELED:
        return InterruptedError(errno.ECANCELED, message)
    if errnum:
        return OSError(errnum, message, filename) if filename else OSError(errnum, message)
    return OSError(errno.EIO, message)


def build_info():
    return json.loads(take_string(lib().gdsload_build_info()))


class _Interrupts:
    """Ctrl-C during a job, recorded rather than raised where it lands: in
    the main thread with Python's default SIGINT handler, a handler that
    notes the signal replaces it for the job's duration, so the poll loop
    cancels the job at a known point and a result that arrived is owned by
    Python objects before KeyboardInterrupt is raised. Elsewhere (another
    thread, a handler of the application's) nothing changes."""

    def __enter__(self):
        self.got = False
        self.old = None
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self.old = signal.signal(signal.SIGINT, self._note)
        return self

    def _note(self, signum, frame):
        self.got = True

    def __exit__(self, typ, value, tb):
        if self.old is not None:
            signal.signal(signal.SIGINT, self.old)
        if self.got and typ is None:
            raise KeyboardInterrupt
        return False


def _drain(L, job, res, err):
    """Waits for a cancelled job's final status, ignoring further Ctrl-C."""
    while True:
        try:
            st = L.gdsload_wait(job, _POLL_MS, ctypes.byref(res), ctypes.byref(err))
            if st != PENDING:
                return st
        except KeyboardInterrupt:
            continue


def run_job(start, request, finish=None, on_abandoned=None, filename=None, invalid=ValueError):
    """Starts a job with start (a gdsload_* starter) and request (a dict),
    polls it, and returns finish(result document) (the document itself
    without finish). Ctrl-C cancels the job and waits for it to stop before
    KeyboardInterrupt propagates; a result that arrived anyway goes to
    on_abandoned so its memory is freed."""
    L = lib()
    body = json.dumps(request).encode()
    job = ctypes.c_uint64(0)  # job ids start at 1
    err = ctypes.c_void_p()
    res = ctypes.c_void_p()
    st = PENDING
    with _Interrupts() as intr:
        try:
            started = start(body, ctypes.byref(job), ctypes.byref(err))
            if started != OK:
                job.value = 0
                raise error_for(started, take_string(err.value), filename, invalid)
            while st == PENDING:
                if intr.got:
                    raise KeyboardInterrupt
                st = L.gdsload_wait(job.value, _POLL_MS, ctypes.byref(res), ctypes.byref(err))
            if st != OK:
                raise error_for(st, take_string(err.value), filename, invalid, _errno_of(res))
            doc = json.loads(take_string(res.value))
            res.value = None
            return finish(doc) if finish is not None else doc
        except BaseException:
            if job.value and st == PENDING:
                # Interrupted while the job ran: stop it and collect it, so
                # nothing it made stays behind (one chunk at most).
                L.gdsload_cancel(job.value)
                st = _drain(L, job.value, res, err)
                if st != OK:
                    take_string(err.value)
                    _errno_of(res)
            if st == OK and res.value and on_abandoned is not None:
                on_abandoned(json.loads(take_string(res.value)))
            raise


def _errno_of(res):
    """The errno of a failed job's {"errno": N} document, freed (0 when
    there is none)."""
    if not res.value:
        return 0
    doc = take_string(res.value)
    res.value = None
    try:
        return int(json.loads(doc).get("errno", 0))
    except (ValueError, AttributeError, TypeError):
        return 0


def live_allocations():
    """Tensor allocations alive in this process: made by gdsload and not yet
    freed (each is freed when the last tensor viewing it is deleted)."""
    if _State.cdll is None:
        return 0
    return lib(go=False).gdsload_live_allocations()
