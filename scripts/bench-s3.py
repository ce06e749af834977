"""The Python sides of scripts/bench-s3.sh, run in the script's own venv
(boto3, runai-model-streamer, runai-model-streamer-s3, safetensors; Debian's
torch). Each timed mode prints one JSON line {"seconds", "bytes"} with the
seconds taken inside the process around the transfer alone (the imports and
the interpreter's start, the same for every Python tool, excluded), or with
--sha256 (untimed) also "sha256": the SHA-256 of the bytes read (for the
checkpoint modes: of every tensor's bytes, in the order of the names).

Modes:
  write PATH BYTES        a safetensors checkpoint of about BYTES (32 MiB
                          tensors of bf16, f32, f16 random bits) with
                          safetensors.torch.save_file
  boto3 BUCKET KEY DST    boto3's download_file with
                          TransferConfig(max_concurrency=CONCURRENCY)
  gdsload URL             gdsload.load_file(URL, device="cpu")
  runai URL               Run:ai Model Streamer's SafetensorsStreamer
                          (RUNAI_STREAMER_CONCURRENCY from the environment),
                          every tensor kept in a dict, as CPU tensors
  local PATH              safetensors.safe_open + get_tensor over a local
                          file: the reference for the checkpoint digests
"""

import hashlib
import json
import os
import sys
import time


def digest_tensors(tensors):
    import torch

    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def nbytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors.values())


def main():
    args = [a for a in sys.argv[1:] if a != "--sha256"]
    want_sha = "--sha256" in sys.argv
    mode = args[0]
    out = {}
    if mode == "write":
        import torch
        from safetensors.torch import save_file

        path, total, per = args[1], int(args[2]), 32 << 20
        g = torch.Generator().manual_seed(1)
        tensors = {}
        for i in range(max(1, total // per)):
            dt, bits = ((torch.bfloat16, torch.int16), (torch.float32, torch.int32), (torch.float16, torch.int16))[i % 3]
            n = per // torch.tensor([], dtype=dt).element_size()
            raw = torch.randint(-(1 << 15), 1 << 15, (n,), generator=g, dtype=bits)
            tensors[f"layers.{i:03d}.weight"] = raw.view(dt).reshape(-1, 1024)
        save_file(tensors, path)
        return
    if mode == "boto3":
        import boto3
        from boto3.s3.transfer import TransferConfig

        bucket, key, dst = args[1], args[2], args[3]
        s3 = boto3.client("s3")
        cfg = TransferConfig(max_concurrency=int(os.environ.get("CONCURRENCY", "16")))
        t0 = time.perf_counter()
        s3.download_file(bucket, key, dst, Config=cfg)
        out["seconds"] = time.perf_counter() - t0
        out["bytes"] = os.path.getsize(dst)
        if want_sha:
            h = hashlib.sha256()
            with open(dst, "rb") as f:
                while b := f.read(1 << 24):
                    h.update(b)
            out["sha256"] = h.hexdigest()
    elif mode == "gdsload":
        import gdsload

        gdsload.build_info()  # the library and its runtime start outside the timed part
        t0 = time.perf_counter()
        tensors = gdsload.load_file(args[1], device="cpu")
        out["seconds"] = time.perf_counter() - t0
    elif mode == "runai":
        from runai_model_streamer import SafetensorsStreamer

        t0 = time.perf_counter()
        tensors = {}
        with SafetensorsStreamer() as s:
            s.stream_file(args[1])
            for name, t in s.get_tensors():
                tensors[name] = t
        out["seconds"] = time.perf_counter() - t0
    elif mode == "local":
        from safetensors import safe_open

        t0 = time.perf_counter()
        with safe_open(args[1], framework="pt") as f:
            tensors = {k: f.get_tensor(k) for k in f.keys()}
        out["seconds"] = time.perf_counter() - t0
    else:
        sys.exit(f"unknown mode {mode}")
    if mode != "boto3":
        out["bytes"] = nbytes(tensors)
        if want_sha:
            out["sha256"] = digest_tensors(tensors)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
