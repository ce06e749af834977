"""One timed run of scripts/bench-python.sh, in a fresh process of the
script's venv (Debian's torch; safetensors, runai-model-streamer,
fastsafetensors from PyPI): loads a safetensors file into CPU tensors with
gdsload or with a peer library, and prints {"seconds", "bytes"}: the seconds
around the load alone (imports and the library's start excluded) and a
touch of every page of every tensor (safetensors 0.8's default mmap
backend returns tensors over a mapping of the file, read on first touch: a
load is done when the bytes are in memory; for the tools that read eagerly
the touch costs a few ms), and the bytes of the tensors it returned. With --sha256 (untimed) it also prints "sha256",
the SHA-256 of every tensor's bytes in the order of the names.

Modes:
  gdsload         gdsload.load_file(path, device="cpu")
  st-load-file    safetensors.torch.load_file(path)
  st-pread        safetensors.torch.load_file(path, backend="pread")
  st-safe-open    safetensors.safe_open(path, "pt") and get_tensor of each name
  runai           Run:ai Model Streamer's SafetensorsStreamer, local file
                  (RUNAI_STREAMER_CONCURRENCY from the environment: 16)
  fastsafetensors fastsafe_open(path, nogds=True, device="cpu") and
                  get_tensor of each name (its CPU path, no GPU)
  write           writes the benchmark file (argv[3] bytes) with gdsload.save_file
"""

import hashlib
import json
import sys
import time


def digest(tensors):
    import torch

    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        h.update(t.view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def touch(tensors):
    """Reads one byte of every page of every tensor."""
    import torch

    n = 0
    for t in tensors.values():
        n += int(t.reshape(-1).view(torch.uint8)[::4096].sum())
    return n


def load(mode, path):
    """Returns (seconds, tensors)."""
    if mode == "gdsload":
        import gdsload

        gdsload.build_info()  # the library and its runtime start outside the timed part
        t0 = time.perf_counter()
        out = gdsload.load_file(path, device="cpu")
    elif mode == "st-load-file":
        from safetensors.torch import load_file

        t0 = time.perf_counter()
        out = load_file(path)
    elif mode == "st-pread":
        from safetensors.torch import load_file

        t0 = time.perf_counter()
        out = load_file(path, backend="pread")
    elif mode == "st-safe-open":
        from safetensors import safe_open

        t0 = time.perf_counter()
        with safe_open(path, framework="pt") as f:
            out = {k: f.get_tensor(k) for k in f.keys()}
    elif mode == "runai":
        from runai_model_streamer import SafetensorsStreamer

        t0 = time.perf_counter()
        out = {}
        with SafetensorsStreamer() as s:
            s.stream_file(path)
            for name, t in s.get_tensors():
                out[name] = t
    elif mode == "fastsafetensors":
        from fastsafetensors import fastsafe_open

        t0 = time.perf_counter()
        with fastsafe_open(filenames=[path], nogds=True, device="cpu") as f:
            out = {k: f.get_tensor(k) for k in f.keys()}
    else:
        raise SystemExit(f"unknown mode {mode}")
    touch(out)
    return time.perf_counter() - t0, out


def main():
    args = [a for a in sys.argv[1:] if a != "--sha256"]
    mode, path = args[0], args[1]
    if mode == "write":
        import gdsload
        import torch

        total, per = int(args[2]), 32 << 20
        g = torch.Generator().manual_seed(1)
        tensors = {}
        for i in range(max(1, total // per)):
            dt, bits = ((torch.bfloat16, torch.int16), (torch.float32, torch.int32), (torch.float16, torch.int16))[i % 3]
            n = per // torch.tensor([], dtype=dt).element_size()
            raw = torch.randint(-(1 << 15), 1 << 15, (n,), generator=g, dtype=bits)
            tensors[f"layers.{i:03d}.weight"] = raw.view(dt).reshape(-1, 1024)
        gdsload.save_file(tensors, path)
        return
    secs, out = load(mode, path)
    res = {"seconds": secs, "bytes": sum(t.numel() * t.element_size() for t in out.values()), "tensors": len(out)}
    if "--sha256" in sys.argv:
        res["sha256"] = digest(out)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
