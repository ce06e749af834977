"""Run by test_gpu_fake in a fresh interpreter whose environment points
gdsload at the CUDA test double (internal/fakecuda): loads into "GPU" memory,
reads it back through the double's cudaMemcpy, saves from device pointers,
and is interrupted mid-load by SIGINT."""

import ctypes
import gc
import json
import os
import signal
import sys
import threading
import time

import torch

import gdsload
from gdsload import _checkpoint, _native

d, fake = sys.argv[1], sys.argv[2]
F = ctypes.CDLL(fake)  # the same mapping cufile loaded: one state
F.fakecuda_counter.restype, F.fakecuda_counter.argtypes = ctypes.c_longlong, [ctypes.c_char_p]
F.fakecuda_control.restype, F.fakecuda_control.argtypes = ctypes.c_int, [ctypes.c_char_p]
F.cudaMemcpy.restype, F.cudaMemcpy.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
LEAKS = ("allocs", "pinned", "streams", "events", "handles", "bufreg")


def counters():
    return {c: F.fakecuda_counter(c.encode()) for c in LEAKS}


def raw(t):
    return t.contiguous().view(torch.uint8 if t.element_size() == 1 else {2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]).numpy().tobytes()


res = {"loads": []}
want = {"a": torch.randn(300, 70), "b": torch.arange(1000, dtype=torch.int16), "s": torch.tensor(2.0, dtype=torch.float64)}
p = os.path.join(d, "g.safetensors")
gdsload.save_file(want, p)
for gpu_path in ("auto", "bounce"):
    one = {"gpu_path": gpu_path, "equal": {}}
    loaded = _checkpoint._load(p, "cuda:0", {"gpu_path": gpu_path})
    one["route"], one["reason"] = loaded.stats.route, loaded.stats.reason
    one["devices"] = sorted({a.device for a in loaded.allocations})
    entries = []
    for name, t in want.items():
        view = loaded.views[name]
        n = t.numel() * t.element_size()
        buf = ctypes.create_string_buffer(n)
        rc = F.cudaMemcpy(buf, view.alloc.ptr + view.offset, n, 2)  # device to host
        one["equal"][name] = rc == 0 and buf.raw == raw(t)
        one["dlpack_device"] = list(view.__dlpack_device__())
        cap = view.__dlpack__(stream=1)
        del cap  # unconsumed: its view is deleted with it
        entries.append({"name": name, "dtype": {torch.float32: "F32", torch.int16: "I16", torch.float64: "F64"}[t.dtype],
                        "shape": list(t.shape), "ptr": view.alloc.ptr + view.offset, "bytes": n, "device_type": 2, "device_id": 0})
    # save_file's path for CUDA tensors: the library copies from device pointers.
    out = os.path.join(d, f"from-gpu-{gpu_path}.safetensors")
    _native.run_job(_native.lib().gdsload_save, {"path": out, "metadata": {"from": "gpu"}, "tensors": entries})
    back = gdsload.load_file(out)
    one["saved_equal"] = all(torch.equal(back[k], want[k]) for k in want)
    one["live_while_held"] = gdsload.live_allocations()
    one["device_allocs_while_held"] = F.fakecuda_counter(b"allocs")
    del back
    loaded.release()
    del loaded
    gc.collect()
    one["live_after"] = gdsload.live_allocations()
    one["counters_after"] = counters()
    res["loads"].append(one)

# Ctrl-C in the middle of a load whose copies the double makes slow.
big = os.path.join(d, "big.safetensors")
gdsload.save_file({"z": torch.zeros(10 << 20, dtype=torch.float32)}, big)
F.fakecuda_control(b"delay_us=20000")
fired = {}


def interrupt():
    deadline = time.monotonic() + 60
    while F.fakecuda_counter(b"allocs") == 0 and time.monotonic() < deadline:
        time.sleep(0.001)
    fired["at"] = time.monotonic()
    os.kill(os.getpid(), signal.SIGINT)


th = threading.Thread(target=interrupt)
th.start()
try:
    _checkpoint._load(big, "cuda:0", {"gpu_path": "bounce", "chunk_size": 1 << 20, "workers": 2})
    res["interrupt"] = "finished"
except KeyboardInterrupt:
    res["interrupt"] = "KeyboardInterrupt"
    res["interrupt_seconds"] = time.monotonic() - fired["at"]
th.join()
F.fakecuda_control(b"delay_us=0")
gc.collect()
res["after_interrupt"] = counters()
res["live_after_interrupt"] = gdsload.live_allocations()
print(json.dumps(res))
