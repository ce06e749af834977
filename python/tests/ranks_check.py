"""One rank of test_ranks: joins a gloo process group, loads a checkpoint
with process_group in one of the test's modes, compares what it got with
the reference library (safetensors, reading every shard whole) and prints
JSON: the mismatches, the bytes it asked of each tensor and its stats.

    ranks_check.py RANK WORLD PORT INDEX MODE...

It prints one line per MODE, run in turn in the same group: "replicated" (load_file: every tensor), "tp" (safe_open and
prefetch: every 2-D weight's rows along dim 0, a ".down" weight's columns
along dim 1, every other tensor whole), "pipeline" (safe_open: tensor i
on rank i % WORLD only)."""

import datetime
import glob
import json
import os
import sys

import safetensors.torch
import torch
import torch.distributed as dist

import gdsload

# Small windows and messages, so the fixture takes many rounds and chunks.
SMALL = {"read_window": 8 << 10, "exchange_chunk": 1 << 10}


def reference(index):
    out = {}
    for f in sorted(glob.glob(os.path.join(os.path.dirname(index), "*.safetensors"))):
        out.update(safetensors.torch.load_file(f))
    return out


def part(name, shape, rank, world):
    """What the tensor-parallel plan asks of tensor name: an index, or None
    for the whole tensor."""
    if len(shape) != 2:
        return None
    dim = 1 if name.endswith(".down") else 0
    n = shape[dim]
    rows = slice(rank * n // world, (rank + 1) * n // world)
    return (slice(None), rows) if dim else rows


def nbytes(t):
    return t.numel() * t.element_size()


def run(mode, rank, world, index, ref):
    bad, asked = [], {}  # tensor name -> bytes asked of it

    def check(what, got, want):
        if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
            bad.append(f"{what}: got {got.dtype} {tuple(got.shape)}, want {want.dtype} {tuple(want.shape)}")

    if mode == "replicated":
        st = gdsload.LoadStats()
        got = gdsload.load_file(index, process_group=dist.group.WORLD, stats=st, **SMALL)
        if sorted(got) != sorted(ref):
            bad.append(f"keys {sorted(got)} != {sorted(ref)}")
        for name, want in ref.items():
            check(name, got[name], want)
            asked[name] = nbytes(want)
        stats = st.raw
    else:
        with gdsload.safe_open(index, framework="pt", process_group=dist.group.WORLD, **SMALL) as f:
            names = f.keys()
            if mode == "tp":
                plan = {n: part(n, f.get_slice(n).get_shape(), rank, world) for n in names}
            else:
                plan = {n: None for i, n in enumerate(f.offset_keys()) if i % world == rank}
            again = [("layers.0.bias", slice(1, 5))] if mode == "tp" else []  # also wanted whole
            f.prefetch([n if ix is None else (n, ix) for n, ix in list(plan.items()) + again])
            for n, ix in plan.items():
                got = f.get_tensor(n) if ix is None else f.get_slice(n)[ix]
                want = ref[n] if ix is None else ref[n][ix]
                check(n, got, want)
                asked[n] = nbytes(want)
            for n, ix in again:  # cut from the whole tensor here: nothing more travels
                check(f"{n}[{ix}]", f.get_slice(n)[ix], ref[n][ix])
            stats = f.stats.raw
    return {"mode": mode, "rank": rank, "bad": bad, "asked": asked, "stats": stats,
            "data_bytes": sum(nbytes(t) for t in ref.values())}


def main():
    rank, world, port, index = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    ref = reference(index)
    for mode in sys.argv[5:]:
        print(json.dumps(run(mode, rank, world, index, ref)), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
