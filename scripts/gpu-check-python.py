"""gpu-check-python.py: the Python face on a real GPU, in one process, called
by scripts/gpu-check.sh with the safetensors file it wrote:

  1. gdsload.load_file(path, device="cuda:0") against
     safetensors.torch.load_file(path, device="cuda:0"), cold page cache
     (dropped before each; needs root) and warm (the file read just before),
     each timed to a CUDA synchronize, CHECK_PAIRS (3) pairs with the order
     alternating, each pair's figures and the stronger printed, then the
     median ratio and its spread, and the time each part took; every run's
     tensors must hold the file's data region, gdsload's values must equal
     safetensors' (checked once) and its tensors must be views of its
     device allocation;
  2. gdsload.save_file from CUDA tensors, read back by safetensors.

Usage: python3 scripts/gpu-check-python.py FILE.safetensors OUTDIR
(gdsload importable: PYTHONPATH=.gpu/python after make gpu-binaries).
Writes OUTDIR/python.json and exits non-zero when a check fails.
"""

import gc
import json
import os
import statistics
import struct
import sys
import time

import torch

import gdsload


def drop_caches():
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError as e:
        print(f"cannot drop the page cache ({e}): the 'cold' runs are warm", flush=True)
        return False


def warm(path):
    with open(path, "rb") as f:
        while f.read(64 << 20):
            pass


def timed(fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    return out, time.perf_counter() - t0


def free(*objs):
    del objs
    gc.collect()
    torch.cuda.empty_cache()


# Alternated pairs per comparison (gpu-check.sh passes its CHECK_PAIRS).
PAIRS = int(os.environ.get("CHECK_PAIRS", "3"))

INTS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def same(a, b):
    return (a.dtype == b.dtype and a.shape == b.shape and a.device == b.device
            and torch.equal(a.view(INTS[a.element_size()]), b.view(INTS[b.element_size()])))


def main():
    path, outdir = sys.argv[1], sys.argv[2]
    import safetensors
    from safetensors.torch import load_file as st_load

    size = os.path.getsize(path)
    gib = size / 2**30
    res = {"file": path, "bytes": size, "torch": torch.__version__, "safetensors": safetensors.__version__,
           "gdsload": gdsload.build_info(), "runs": {}, "failures": []}
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}), safetensors {safetensors.__version__}, "
          f"gdsload {res['gdsload']}; {path}: {gib:.2f} GiB", flush=True)
    torch.empty(1, device="cuda:0")  # CUDA context up before any timing
    dev = torch.device("cuda:0")

    def fail(msg):
        print("FAIL:", msg, flush=True)
        res["failures"].append(msg)

    cold = drop_caches()
    res["cold_is_cold"] = cold
    res["pairs"] = PAIRS
    with open(path, "rb") as f:
        data_bytes = size - 8 - struct.unpack("<Q", f.read(8))[0]  # the data region
    checked = False
    for cache in ("cold", "warm"):
        t_part = time.perf_counter()
        # page-cache reads of a cold file: the same disk, slower path
        whos = ["safetensors", "gdsload"] + (["gdsload-direct-off"] if cache == "warm" else [])
        for pair in range(1, PAIRS + 1):
            order = whos if pair % 2 else whos[::-1]
            figs = {}
            for who in order:
                drop_caches() if cache == "cold" else warm(path)
                stats = gdsload.LoadStats()
                if who == "safetensors":
                    ts, secs = timed(lambda: st_load(path, device="cuda:0"))
                else:
                    opts = {"direct": "off"} if who == "gdsload-direct-off" else {}
                    ts, secs = timed(lambda: gdsload.load_file(path, device="cuda:0", stats=stats, **opts))
                run = {"pair": pair, "seconds": secs, "gib_per_s": gib / secs}
                # Every timed run's bytes: its tensors hold the data region.
                got = sum(t.numel() * t.element_size() for t in ts.values())
                if got != data_bytes:
                    fail(f"{who} {cache} pair {pair}: tensors hold {got} bytes, the data region {data_bytes}")
                if who != "safetensors":
                    run.update(route=stats.route, reason=stats.reason, loader_gib_per_s=stats.gib_per_s)
                    # Zero copy: every tensor lies inside gdsload's device allocation.
                    ptr, n, _ = stats.allocations[0]
                    outside = [k for k, t in ts.items() if not (ptr <= t.data_ptr() and t.data_ptr() + t.numel() * t.element_size() <= ptr + n)]
                    if outside or any(t.device != dev for t in ts.values()):
                        fail(f"{who} {cache}: tensors outside gdsload's allocation or off cuda:0: {outside[:3]}")
                    if cache == "warm" and who == "gdsload" and not checked:
                        checked = True  # once, untimed: the values are safetensors'
                        ref = st_load(path, device="cuda:0")
                        bad = [k for k in ref if k not in ts or not same(ts[k], ref[k])]
                        run["equal_to_safetensors"] = not bad and set(ts) == set(ref)
                        if bad or set(ts) != set(ref):
                            fail(f"gdsload's tensors differ from safetensors': {bad[:5]}")
                        free(ref)
                res["runs"].setdefault(f"{who}-{cache}", []).append(run)
                figs[who] = secs
                print(f"{cache:5} pair {pair} {who:19} {secs:7.3f} s {gib / secs:7.2f} GiB/s"
                      + (f"  route {run['route']} ({run['reason']})" if "route" in run else ""), flush=True)
                free(ts)
            best = min(figs, key=figs.get)
            print(f"{cache:5} pair {pair} ({order[0]} first): stronger: {best}; "
                  + ", ".join(f"{w} / safetensors {figs['safetensors'] / figs[w]:.2f}x" for w in whos[1:]), flush=True)
        res[f"{cache}_part_seconds"] = time.perf_counter() - t_part
        print(f"{cache}: {PAIRS} alternated pairs took {res[f'{cache}_part_seconds']:.1f} s", flush=True)
    for cache in ("cold", "warm"):
        st = [r["seconds"] for r in res["runs"][f"safetensors-{cache}"]]
        for who in ("gdsload", "gdsload-direct-off"):
            rs = res["runs"].get(f"{who}-{cache}")
            if not rs:
                continue
            ratios = [a / r["seconds"] for a, r in zip(st, rs)]
            res[f"ratio_{who}_{cache}"] = {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}
            print(f"{cache}: {who} / safetensors.torch.load_file: {statistics.median(ratios):.2f}x "
                  f"(median of {len(ratios)} alternated pairs, spread {min(ratios):.2f}..{max(ratios):.2f})", flush=True)

    # save_file from CUDA tensors, read back by the safetensors library.
    g = torch.Generator(device="cuda").manual_seed(5)
    cuda = {
        "w.bf16": torch.randn(1024, 4096, device=dev, generator=g).to(torch.bfloat16),
        "w.f32": torch.randn(333, 77, device=dev, generator=g),
        "i.i64": torch.randint(-1000, 1000, (4097,), device=dev, generator=g),
        "b.bool": torch.rand(100, device=dev, generator=g) > 0.5,
        "s.f16": torch.tensor(1.5, dtype=torch.float16, device=dev),
        "e.empty": torch.empty(0, 3, device=dev),
    }
    out = os.path.join(outdir, "saved-from-cuda.safetensors")
    t_part = time.perf_counter()
    _, secs = timed(lambda: gdsload.save_file(cuda, out, metadata={"from": "cuda"}))
    back = st_load(out)  # CPU, by the safetensors library
    bad = [k for k in cuda if k not in back or not same(back[k], cuda[k].cpu())]
    with safetensors.safe_open(out, framework="pt") as f:
        meta = f.metadata()
    res["save_from_cuda"] = {"seconds": secs, "read_back_equal": not bad, "metadata": meta}
    print(f"save_file from CUDA tensors: {secs:.3f} s; safetensors reads it back equal: {not bad}; metadata {meta}", flush=True)
    if bad or meta != {"from": "cuda"}:
        fail(f"safetensors reads save_file's output differently: {bad}, metadata {meta}")
    os.remove(out)
    print(f"save part took {time.perf_counter() - t_part:.1f} s", flush=True)

    with open(os.path.join(outdir, "python.json"), "w") as f:
        json.dump(res, f, indent=1)
    sys.exit(1 if res["failures"] else 0)


if __name__ == "__main__":
    main()
