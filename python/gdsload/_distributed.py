"""Loads shared by the ranks of a torch.distributed process group, so that
each byte of a checkpoint is read from storage once.

Every rank says what it wants (tensors, whole or slices); the library
(gdsload_checkpoint_shares, checkpoint.Checkpoint.Shares in Go) plans
disjoint, byte-balanced shares: a rank reads for itself what it alone
wants and its rows of a tensor the ranks split along dimension 0 (disjoint
single ranges), and the other wanted tensors are read whole by one rank
each. Each rank reads its share, a window of bytes at a time, and hands
the others what they asked for of the tensors it read whole: a broadcast
for a tensor every rank wants whole, else each rank's own selections,
point to point. Messages are at most
exchange_chunk bytes; a rank holds at most two windows of its share (the
one being exchanged and the next, read meanwhile) besides what it asked
for. gloo (and other CPU backends) exchange host memory; NCCL exchanges
GPU memory, read there directly.
"""

import concurrent.futures
import time

from . import _dlpack, _lazy, _native

EXCHANGE_CHUNK = 64 << 20  # bytes per message
READ_WINDOW = 256 << 20  # bytes of its share a rank reads per round

_ABI_MINOR = 2  # gdsload_checkpoint_shares


class Group:
    """A process group as the exchange uses it: this rank, the group's
    size, each group rank's global rank (what torch.distributed's calls
    take), and where messages live ("cpu", or the GPU for NCCL)."""

    def __init__(self, pg, device):
        import torch.distributed as dist

        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError("gdsload: process_group given, but torch.distributed is not initialized; "
                               "call torch.distributed.init_process_group first")
        self.dist = dist
        self.pg = pg
        self.rank = dist.get_rank(pg)
        self.size = dist.get_world_size(pg)
        if self.rank < 0:
            raise ValueError("gdsload: this process is not a member of process_group")
        if pg is None or pg is dist.group.WORLD:
            self.globals = list(range(self.size))
        else:
            get = getattr(dist, "get_global_rank", None) or dist.distributed_c10d._get_global_rank
            self.globals = [get(pg, r) for r in range(self.size)]
        self.backend = str(dist.get_backend(pg)).lower()
        if self.backend == "nccl":
            if not device.startswith("cuda"):
                raise ValueError(f"gdsload: a process group of backend nccl exchanges GPU memory; load to a "
                                 f"device \"cuda:N\", not {device!r}, or use a gloo group")
            self.comm = device
        else:
            self.comm = "cpu"

    def gather(self, obj):
        """obj of every rank, in group rank order."""
        out = [None] * self.size
        self.dist.all_gather_object(out, obj, group=self.pg)
        return out


def _key(name, sel):
    return (name, None if sel is None else tuple(map(tuple, sel)))


def _nbytes(dtype, shape):
    _, bits = _dlpack.DLPACK.get(dtype, (None, 8))
    n = 1
    for d in shape:
        n *= d
    return (n * (bits or 8) + 7) // 8


def _shape(sel, shape):
    return list(shape) if sel is None else [c for _, _, c in sel]


def _cut(t, sel):
    """The selection sel of tensor t, a view."""
    if sel is None:
        return t
    return t[tuple(slice(s, s + st * (c - 1) + 1, st) if c else slice(0, 0) for s, st, c in sel)]


def _flat(t):
    """A contiguous tensor's bytes as a 1-D uint8 tensor (a view)."""
    import torch

    return t.reshape(-1).view(torch.uint8)


def _chunks(buf, size):
    for at in range(0, buf.numel(), size):
        yield buf[at:at + size]


def shares(handle, wants, max_gap=None):
    """Per rank {"reads": [{"name", "want", "bytes"}], "bytes": N}: the
    library's plan of who reads what (gdsload_checkpoint_shares). wants:
    per rank, its (name, selection or None) items."""
    L = _native.lib()
    if L.gdsload_abi_minor() < _ABI_MINOR:
        raise ImportError("gdsload: the shared library lacks distributed shares (C ABI minor 2); "
                          "rebuild it with 'make python' from the same checkout")
    req = {"checkpoint": handle.id, "wants": [[{"name": n, "slice": s} for n, s in items] for items in wants]}
    if max_gap is not None:
        req["max_gap"] = max_gap
    return _native.run_job(L.gdsload_checkpoint_shares, req, filename=handle.path)["shares"]


class _Plan:
    """What every rank does, the same on all of them: the library's shares
    cut into windows, and for each tensor read whole, its owner and how it
    travels."""

    def __init__(self, handle, everyone, group, window, max_gap=None):
        self.everyone = everyone
        self.who = {}  # name -> {rank: [selections]}
        for r, items in enumerate(everyone):
            for name, sel in items:
                self.who.setdefault(name, {}).setdefault(r, []).append(sel)
        self.kind = {}  # tensors read whole: "broadcast" or "p2p"
        self.windows = []  # per rank, per round: its reads
        for share in shares(handle, everyone, max_gap):
            rounds, cur, size = [], [], 0
            for rd in share["reads"]:
                if rd["want"] < 0:
                    ranks = self.who[rd["name"]]
                    every = len(ranks) == group.size and all(None in sels for sels in ranks.values())
                    self.kind[rd["name"]] = "broadcast" if every else "p2p"
                if cur and size + rd["bytes"] > window:
                    rounds.append(cur)
                    cur, size = [], 0
                cur.append(rd)
                size += rd["bytes"]
            if cur:
                rounds.append(cur)
            self.windows.append(rounds)
        self.rounds = max((len(w) for w in self.windows), default=0)

    def items(self, rank, reads):
        """The fetch items of reads of rank's share."""
        return [(rd["name"], None) if rd["want"] < 0 else self.everyone[rank][rd["want"]] for rd in reads]


def _read(handle, device, items, options):
    """Fetches items into torch tensors: {key: tensor}, stats."""
    if not items:
        return {}, {}
    pieces, st = handle.fetch(device, items, options)
    out = {}
    try:
        for it, (alloc, piece) in zip(items, pieces):
            key = _key(*it)
            if key in out:
                alloc.release()
            else:
                out[key] = _lazy.materialize(alloc, piece, "pt")
    except BaseException:
        for _, (alloc, _) in zip(items, pieces[len(out):]):
            alloc.release()
        raise
    return out, st


def exchange(handle, items, device, options, group, exchange_chunk=None, read_window=None):
    """Runs a distributed load on every rank of group (each calls it with
    its own items: (name, selection or None), selections as _lazy.selection
    makes them). Returns ({key: torch tensor on device}, stats) with key
    (name, selection as a tuple of tuples, or None)."""
    import torch

    chunk = int(exchange_chunk or EXCHANGE_CHUNK)
    window = int(read_window or READ_WINDOW)
    if chunk <= 0 or window <= 0:
        raise ValueError("gdsload: exchange_chunk and read_window are positive byte counts")
    dist, me = group.dist, group.rank
    t0 = time.perf_counter()
    mine = list(dict.fromkeys(_key(n, s) for n, s in items))
    everyone = group.gather({"items": mine, "checkpoint": handle.path, "tensors": len(handle.order)})
    for r, e in enumerate(everyone):
        if (e["checkpoint"], e["tensors"]) != (handle.path, len(handle.order)):
            raise ValueError(f"gdsload: rank {r} of the process group opened {e['checkpoint']} "
                             f"({e['tensors']} tensors), rank {me} {handle.path} ({len(handle.order)}); "
                             "every rank must load the same checkpoint")
    plan = _Plan(handle, [e["items"] for e in everyone], group, window, options.get("max_gap"))
    stats = {"bytes_read": 0, "bytes_received": 0, "bytes_sent": 0, "bytes": 0, "rounds": plan.rounds,
             "path": None, "reason": None, "read_seconds": 0.0,
             "tensors_read": [rd["name"] for w in plan.windows[me] for rd in w if rd["want"] < 0],
             "own_reads": sum(1 for w in plan.windows[me] for rd in w if rd["want"] >= 0)}
    results = {}

    def read(k):
        reads = plan.windows[me][k] if k < len(plan.windows[me]) else []
        t = time.perf_counter()
        got = _read(handle, group.comm, plan.items(me, reads), options)
        return got, time.perf_counter() - t

    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="gdsload-read")
    ahead = pool.submit(read, 0) if plan.rounds else None
    try:
        for k in range(plan.rounds):
            err = None
            try:
                (fetched, st), secs = ahead.result()
            except Exception as e:  # every rank must learn of it, or the others wait forever
                fetched, st, secs, err = {}, {}, 0.0, f"{type(e).__name__}: {e}"
                failure = e
            ahead = pool.submit(read, k + 1) if k + 1 < plan.rounds else None
            bad = [(r, e) for r, e in enumerate(group.gather(err)) if e]
            if err:
                raise failure
            if bad:
                r, e = bad[0]
                raise RuntimeError(f"gdsload: rank {r} of the process group failed to read its share of "
                                   f"{handle.path} ({e}); this rank stops too")
            for k2 in ("bytes_read", "bytes"):
                stats[k2] += st.get(k2, 0)
            stats["read_seconds"] += secs
            if st.get("path"):
                stats["path"], stats["reason"] = st["path"], st.get("reason")
            _round(plan, [w[k] if k < len(w) else [] for w in plan.windows], fetched, handle, group, chunk,
                   results, stats)
            del fetched
            if group.comm != device:  # gloo exchanged host memory; the caller asked for a GPU
                for key, t in results.items():
                    if t.device.type == "cpu":
                        results[key] = t.to(device)
    finally:
        if ahead is not None:
            try:
                ahead.result()  # the tensors die with it
            except Exception:
                pass
        pool.shutdown(wait=True)
    stats["seconds"] = time.perf_counter() - t0
    stats["rank"], stats["ranks"], stats["backend"] = me, group.size, group.backend
    return results, stats


def every_rank(group, doc):
    """Adds to doc (a stats document of this rank's) every rank's
    "bytes_read" and "bytes_received", as rank_bytes_read and
    rank_bytes_received (a collective: every rank calls it)."""
    per = group.gather((doc.get("bytes_read", 0), doc.get("bytes_received", 0)))
    doc["rank_bytes_read"] = [b for b, _ in per]
    doc["rank_bytes_received"] = [b for _, b in per]
    return doc


def _round(plan, reads_of, fetched, handle, group, chunk, results, stats):
    """One round: each rank's window of reads; what a rank read for itself
    is its, and each tensor read whole goes to the ranks that want it.
    This rank's wants land in results."""
    import torch

    dist, me, pg = group.dist, group.rank, group.pg
    works, ops, keep, later = [], [], [], []
    for o, reads in enumerate(reads_of):
        src = group.globals[o]
        for rd in reads:
            name = rd["name"]
            if rd["want"] >= 0:  # read by its rank for itself
                if o == me:
                    key = _key(*plan.everyone[me][rd["want"]])
                    results[key] = fetched[key]
                continue
            kind, who = plan.kind[name], plan.who[name]
            shape, dtype = handle.shapes[name], _dlpack.torch_dtype(handle.dtypes[name])
            if kind == "broadcast":
                whole = fetched[(name, None)] if o == me else torch.empty(shape, dtype=dtype, device=group.comm)
                for part in _chunks(_flat(whole), chunk):
                    works.append(dist.broadcast(part, src, group=pg, async_op=True))
                if o != me:
                    stats["bytes_received"] += whole.numel() * whole.element_size()
                elif group.size > 1:
                    stats["bytes_sent"] += whole.numel() * whole.element_size() * (group.size - 1)
                later.append((name, who[me], whole))  # once the broadcast landed
                continue
            # p2p: the owner sends each other rank its selections.
            if o == me:
                whole = fetched[(name, None)]
                for r, sels in who.items():
                    if r == me:
                        _deliver(results, name, sels, whole)
                        continue
                    for sel in sels:
                        piece = _cut(whole, sel).contiguous()
                        keep.append(piece)
                        for part in _chunks(_flat(piece), chunk):
                            ops.append(dist.P2POp(dist.isend, part, group.globals[r], pg))
                        stats["bytes_sent"] += piece.numel() * piece.element_size()
            elif me in who:
                for sel in who[me]:
                    dst = torch.empty(_shape(sel, shape), dtype=dtype, device=group.comm)
                    for part in _chunks(_flat(dst), chunk):
                        ops.append(dist.P2POp(dist.irecv, part, src, pg))
                    stats["bytes_received"] += dst.numel() * dst.element_size()
                    results[_key(name, sel)] = dst
    if ops:
        works.extend(dist.batch_isend_irecv(ops))
    for w in works:
        w.wait()
    for name, sels, whole in later:
        _deliver(results, name, sels, whole)
    if group.backend == "nccl":
        # wait() orders the GPU's streams only; the owner's buffers (memory
        # of gdsload's, freed when the round's tensors die) must outlive the
        # copies.
        torch.cuda.synchronize(group.comm)
    del keep


def _deliver(results, name, sels, whole):
    """This rank's selections of a tensor it holds whole: the tensor
    itself when asked whole, else a copy of each selection (so the whole
    can be freed)."""
    for sel in sels:
        results[_key(name, sel)] = whole if sel is None else _cut(whole, sel).clone()


_HANDLE_OPTIONS = ("direct", "token", "cache", "cache_limit")
_FETCH_OPTIONS = ("gpu_path", "workers", "chunk_size", "max_gap")


def load_file(path, device, options, pg):
    """load_file(..., process_group=pg): every rank gets every tensor, each
    read from storage by one rank and broadcast. Returns (tensors in file
    order, stats document)."""
    options = {k: v for k, v in options.items() if v is not None}
    exchange_chunk = options.pop("exchange_chunk", None)
    read_window = options.pop("read_window", None)
    unknown = sorted(set(options) - set(_HANDLE_OPTIONS) - set(_FETCH_OPTIONS))
    if unknown:
        raise TypeError(f"gdsload: unexpected options {unknown}")
    group = Group(pg, device)
    handle = _lazy.Handle(path, options)
    try:
        got, st = exchange(handle, [(n, None) for n in handle.order], device, options, group,
                           exchange_chunk, read_window)
        out = {n: got[(n, None)] for n in handle.order}
        doc = dict(st, checkpoint=handle.path, device=device, tensors=len(out))
        doc["bytes_read"] += handle.header_bytes
        doc["header_bytes"] = handle.header_bytes
        doc["bytes"] = sum(t.numel() * t.element_size() for t in out.values())
        doc["gib_per_s"] = doc["bytes"] / doc["seconds"] / 2**30 if doc["seconds"] else 0.0
        return out, every_rank(group, doc)
    finally:
        handle.close()
