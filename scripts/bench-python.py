"""One timed run of scripts/bench-python.sh, in a fresh process: loads a
safetensors file on the CPU with gdsload or with a Python reader doing what
safetensors.torch.load_file does, and prints {"seconds", "bytes"}.

Modes:
  gdsload     gdsload.load_file(path, device="cpu")
  st-mmap     the header, mmap of the file, torch.frombuffer per tensor and a
              copy (.clone()) of each: safetensors.torch.load_file's CPU path
  read-views  the header, one readinto of the data region into a bytearray,
              torch.frombuffer views without a copy: the least a one-thread
              Python reader can do
  write       writes the benchmark file (argv[3] bytes) with gdsload.save_file
  check       loads with gdsload and st-mmap and compares every tensor
"""

import json
import mmap
import struct
import sys
import time

import warnings

import torch

warnings.filterwarnings("ignore", message="The given buffer is not writable")

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64, "U8": torch.uint8}


def header(f):
    (n,) = struct.unpack("<Q", f.read(8))
    h = json.loads(f.read(n))
    h.pop("__metadata__", None)
    return 8 + n, h


def st_mmap(path):
    with open(path, "rb") as f:
        start, h = header(f)
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    out = {}
    for name, t in h.items():
        b, e = t["data_offsets"]
        dt = DTYPES[t["dtype"]]
        n = (e - b) // torch.tensor([], dtype=dt).element_size()
        out[name] = torch.frombuffer(mm, dtype=dt, count=n, offset=start + b).reshape(t["shape"]).clone()
    return out


def read_views(path):
    with open(path, "rb") as f:
        start, h = header(f)
        size = f.seek(0, 2) - start
        f.seek(start)
        buf = bytearray(size)
        f.readinto(buf)
    out = {}
    for name, t in h.items():
        b, e = t["data_offsets"]
        dt = DTYPES[t["dtype"]]
        n = (e - b) // torch.tensor([], dtype=dt).element_size()
        out[name] = torch.frombuffer(buf, dtype=dt, count=n, offset=b).reshape(t["shape"])
    return out


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "write":
        import gdsload

        total, per = int(sys.argv[3]), 32 << 20
        g = torch.Generator().manual_seed(1)
        tensors = {}
        for i in range(total // per):
            dt, bits = ((torch.bfloat16, torch.int16), (torch.float32, torch.int32), (torch.float16, torch.int16))[i % 3]
            n = per // torch.tensor([], dtype=dt).element_size()
            raw = torch.randint(-(1 << 15), 1 << 15, (n,), generator=g, dtype=bits)
            tensors[f"layers.{i:03d}.weight"] = raw.view(dt).reshape(-1, 1024)
        gdsload.save_file(tensors, path)
        return
    if mode == "check":
        import gdsload

        a, b = gdsload.load_file(path), st_mmap(path)
        ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
        bad = [k for k in b if a[k].dtype != b[k].dtype or not torch.equal(a[k].view(ints[a[k].element_size()]), b[k].view(ints[b[k].element_size()]))]
        print(json.dumps({"tensors": len(b), "differ": bad}))
        sys.exit(1 if bad or set(a) != set(b) else 0)
    if mode == "gdsload":
        import gdsload

        gdsload.build_info()  # the library and its runtime start outside the timed part
        t0 = time.perf_counter()
        out = gdsload.load_file(path, device="cpu")
    elif mode == "st-mmap":
        t0 = time.perf_counter()
        out = st_mmap(path)
    elif mode == "read-views":
        t0 = time.perf_counter()
        out = read_views(path)
    else:
        raise SystemExit(f"unknown mode {mode}")
    secs = time.perf_counter() - t0
    print(json.dumps({"seconds": secs, "bytes": sum(t.numel() * t.element_size() for t in out.values())}))


if __name__ == "__main__":
    main()
