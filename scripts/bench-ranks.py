"""scripts/bench-ranks.sh's worker: one run of RANKS ranks (processes in a
gloo group) loading a sharded checkpoint with a tensor-parallel plan
(every 2-D weight's rows along dimension 0, split evenly; every other
tensor whole), in one of three ways:

  gdsload          gdsload.safe_open(index, process_group=WORLD) and one
                   prefetch of the plan: each byte read once among the ranks
  safetensors      what vLLM does with the real library: per file
                   safetensors.safe_open, then get_slice(name)[rows] per
                   weight (get_tensor for the others)
  fastsafetensors  fastsafetensors.SafeTensorsFileLoader(WORLD, "cpu",
                   nogds=True), the files dealt round-robin to the ranks,
                   get_sharded(name, 0) per weight, get_tensor otherwise

Usage:
  bench-ranks.py write DIR BYTES     writes DIR/model-*.safetensors + index
  bench-ranks.py run MODE DIR RANKS  one run; prints one JSON line
  bench-ranks.py rank MODE DIR RANKS RANK PORT   (run starts these)

Each way's tensors are then copied into fresh tensors, as vLLM's weight
loaders copy into the model's parameters (timed: a loader that hands out
views of a mapped file reads only then).

A run's JSON: "wall" (seconds from the ranks' common start, after a
barrier, to the last rank's end; imports, the libraries' start and the
group's setup are not timed), and per rank "read_bytes" (/proc/self/io: bytes this process
caused to be read from storage, threads and page faults included),
"hwm_kib" (VmHWM, the peak resident set), "base_kib" (VmRSS before the
load: Python and torch), "sum" (an integer checksum of every byte it
holds, per tensor) and "bytes" (what it holds).
"""

import datetime
import json
import os
import socket
import subprocess
import sys
import time

MODES = ("gdsload", "safetensors", "fastsafetensors")


def files_of(d):
    with open(os.path.join(d, "model.safetensors.index.json")) as f:
        wm = json.load(f)["weight_map"]
    return sorted(set(os.path.join(d, v) for v in wm.values()))


def write(d, total):
    """Four shards of BF16 [4096, 4096] weights (32 MiB each) and an F32
    norm [4096] after every weight, to total bytes."""
    import torch
    import safetensors.torch

    os.makedirs(d, exist_ok=True)
    per = 32 << 20
    n = max(4, total // per)
    g = torch.Generator().manual_seed(1)
    wm = {}
    shards = 4
    for s in range(shards):
        name = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        tensors = {}
        for i in range(s * n // shards, (s + 1) * n // shards):
            tensors[f"layers.{i}.weight"] = torch.randn(4096, 4096, generator=g).to(torch.bfloat16)
            tensors[f"layers.{i}.norm"] = torch.randn(4096, generator=g)
        safetensors.torch.save_file(tensors, os.path.join(d, name + ".tmp"), metadata={"format": "pt"})
        os.rename(os.path.join(d, name + ".tmp"), os.path.join(d, name))
        wm.update({k: name for k in tensors})
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": wm}, f)


def proc(field, path="/proc/self/status"):
    with open(path) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k == field:
                return int(v.split()[0])
    raise KeyError(field)


def rows(n, rank, world):
    return slice(rank * n // world, (rank + 1) * n // world)


def load_gdsload(d, rank, world, dist):
    import gdsload

    out = {}
    with gdsload.safe_open(os.path.join(d, "model.safetensors.index.json"), "pt",
                           process_group=dist.group.WORLD) as f:
        plan = {}
        for n in f.keys():
            shape = f.get_slice(n).get_shape()
            plan[n] = rows(shape[0], rank, world) if len(shape) == 2 else None
        f.prefetch([n if ix is None else (n, ix) for n, ix in plan.items()])
        for n, ix in plan.items():
            out[n] = f.get_tensor(n) if ix is None else f.get_slice(n)[ix]
    return out


def load_safetensors(d, rank, world, dist):
    from safetensors import safe_open

    out = {}
    for path in files_of(d):
        with safe_open(path, framework="pt") as f:
            for n in f.keys():
                sl = f.get_slice(n)
                shape = sl.get_shape()
                out[n] = sl[rows(shape[0], rank, world)] if len(shape) == 2 else f.get_tensor(n)
    return out


def load_fastsafetensors(d, rank, world, dist):
    from fastsafetensors import SafeTensorsFileLoader

    files = files_of(d)
    loader = SafeTensorsFileLoader(dist.group.WORLD, "cpu", nogds=True)
    try:
        loader.add_filenames({r: files[r::world] for r in range(world)})
        fb = loader.copy_files_to_device()
        try:
            out = {}
            for n in sorted(fb.key_to_rank_lidx):
                shape = fb.get_shape(n)
                t = fb.get_sharded(n, 0) if len(shape) == 2 else fb.get_tensor(n)
                out[n] = t.clone()  # the buffer is freed by close()
        finally:
            fb.close()
    finally:
        loader.close()
    return out


def rank_main(mode, d, world, rank, port):
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=600))
    load = {"gdsload": load_gdsload, "safetensors": load_safetensors, "fastsafetensors": load_fastsafetensors}[mode]
    if mode == "gdsload":
        import gdsload  # imported and started before the timed part, as the peers' libraries are

        gdsload.build_info()
    elif mode == "safetensors":
        import safetensors  # noqa: F401
    else:
        import fastsafetensors  # noqa: F401
    # The script dropped the page cache before starting the ranks; the
    # imports above read the libraries back. Now the checkpoint's pages
    # leave the cache again (any a warm-up brought in), and the libraries'
    # stay, so the timed part's storage reads are the checkpoint's.
    dist.barrier()
    if rank == 0:
        for path in files_of(d):
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    base = proc("VmRSS")
    io0 = proc("read_bytes", "/proc/self/io")
    dist.barrier()
    t0 = time.time()
    err = None
    try:
        # Then each tensor is copied into memory of the model's, as vLLM's
        # weight loaders copy into their parameters: a loader that hands
        # out views of a mapped file has read nothing until then.
        out = {n: torch.empty_like(t).copy_(t) for n, t in load(d, rank, world, dist).items()}
    except Exception as e:  # reported, not raised: the other ranks may wait
        out, err = {}, f"{type(e).__name__}: {e}"
    t1 = time.time()
    io1 = proc("read_bytes", "/proc/self/io")
    hwm = proc("VmHWM")
    sums = {n: int(t.contiguous().view(torch.uint8).to(torch.int64).sum()) for n, t in out.items()}
    held = sum(t.numel() * t.element_size() for t in out.values())
    doc = {"rank": rank, "t0": t0, "t1": t1, "read_bytes": io1 - io0, "hwm_kib": hwm, "base_kib": base,
           "bytes": held, "sum": sums, "error": err}
    if err is None:
        dist.barrier()
        dist.destroy_process_group()
    print(json.dumps(doc), flush=True)
    if err is not None:
        os._exit(0)  # the group may be broken; do not wait in its teardown


def run(mode, d, world):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ)
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    procs = [subprocess.Popen([sys.executable, __file__, "rank", mode, d, str(world), str(r), str(port)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(world)]
    reps, errs = [], []
    for p in procs:
        try:
            out, err = p.communicate(timeout=900)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            out, err = p.communicate()
        lines = out.strip().splitlines()
        if p.returncode != 0 or not lines:
            errs.append(f"exit {p.returncode}: {err.strip().splitlines()[-1] if err.strip() else ''}")
            continue
        reps.append(json.loads(lines[-1]))
        if reps[-1]["error"]:
            errs.append(reps[-1]["error"])
    if errs:
        print(json.dumps({"mode": mode, "error": errs[0]}))
        return
    print(json.dumps({"mode": mode, "wall": max(r["t1"] for r in reps) - min(r["t0"] for r in reps),
                      "ranks": sorted(reps, key=lambda r: r["rank"])}))


def main():
    cmd = sys.argv[1]
    if cmd == "write":
        write(sys.argv[2], int(sys.argv[3]))
    elif cmd == "run":
        run(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif cmd == "rank":
        rank_main(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
