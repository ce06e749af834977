"""ShardDataset: a torch IterableDataset over WebDataset shards, read by
gdsload's deterministic, rank-partitioned, resumable iterator; and
ShardLoader, a DataLoader that knows how far each worker got, so its
state_dict resumes exactly.

Fork safety: a ShardDataset holds only its configuration, so it pickles
to spawned workers, and it opens gdsload's iterator in whatever process
iterates it. A DataLoader may therefore fork its workers, as long as the
parent has not started gdsload's runtime itself (by load_file, say): Go does
not survive fork(), and a forked child of a started parent is refused with
an error that says to use multiprocessing_context="spawn" or "forkserver".
"""

import ctypes
import io
import json
import os
import struct
import warnings

from . import _native

try:
    import torch
    from torch.utils.data import IterableDataset, get_worker_info
except ImportError:  # the dataset needs torch; importing gdsload does not
    torch = None
    IterableDataset = object

    def get_worker_info():
        return None


STATE_VERSION = 1

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


def parse_size(v):
    """Bytes from an int or a string like "256MiB"."""
    if isinstance(v, int):
        return v
    s = str(v).strip().lower()
    num = s.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = s[len(num):].strip()
    if unit not in _UNITS or not num.strip():
        raise ValueError(f"gdsload: size {v!r}: want bytes, or a number with KiB, MiB or GiB")
    return int(float(num) * _UNITS[unit])


def _cache_request(req, limit):
    """Adds the node-local cache to a request: req's "cache", else
    $GDSLOAD_CACHE, and limit (bytes, or a size such as "200GiB")."""
    if req.get("cache") is None and os.environ.get("GDSLOAD_CACHE"):
        req["cache"] = os.environ["GDSLOAD_CACHE"]
    if limit is not None:
        if req.get("cache") is None:
            raise ValueError("gdsload: cache_limit needs cache= or $GDSLOAD_CACHE")
        req["cache_limit"] = parse_size(limit)


def placement(rank=None, world_size=None):
    """(rank, world size): the arguments, else torch.distributed's when it is
    initialised, else RANK and WORLD_SIZE as torchrun sets them, else (0, 1)."""
    if rank is not None and world_size is not None:
        return int(rank), int(world_size)
    r = w = None
    if torch is not None:
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            r, w = dist.get_rank(), dist.get_world_size()
    if r is None:
        r, w = int(os.environ.get("RANK", "0") or 0), int(os.environ.get("WORLD_SIZE", "1") or 1)
    return (int(rank) if rank is not None else r), (int(world_size) if world_size is not None else w)


def _decode_field(ext, data):
    """WebDataset's decoding for the extensions gdsload knows: .npy to a
    torch tensor (a numpy array without torch), .cls to an int, .json to
    what json.loads makes of it."""
    last = ext.rsplit(".", 1)[-1]
    if last == "npy":
        import numpy as np

        a = np.load(io.BytesIO(data), allow_pickle=False)
        return torch.from_numpy(a) if torch is not None else a
    if last == "cls":
        return int(data.decode("utf-8").strip())
    if last == "json":
        return json.loads(data)
    return data


class DecodeError(ValueError):
    """A sample field that decoding could not read: names the shard, the
    key and the field."""


def reraise_exception(exn):
    """A handler (WebDataset's name): raise the error, stopping the pass."""
    raise exn


def warn_and_continue(exn):
    """A handler (WebDataset's name): warn and go on without the sample
    (and, in the library, without shards that cannot be read)."""
    warnings.warn(str(exn), RuntimeWarning, stacklevel=2)
    return True


def ignore_and_continue(exn):
    """A handler (WebDataset's name): go on without the sample, silently
    (shards that cannot be read are still reported on stderr)."""
    return True


def _manifest_samples(source):
    """The sample count a local manifest gives for source (a folder holding
    index.json, or a manifest file), else None."""
    if "://" in source or any(c in source for c in "{*?["):
        return None
    path = os.path.join(source, "index.json") if os.path.isdir(source) else source
    if not path.endswith(".json") or not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as f:
            doc = json.load(f)
        shards = doc["shards"]
        return sum(int(e["samples"]) for e in shards)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _parse_sample(buf):
    """The fields of one sample record (capi/gdsload.h's layout)."""
    version, epoch, position, index, padding = struct.unpack_from("<IqqqB", buf, 0)
    if version != 1:
        raise RuntimeError(f"gdsload: sample record layout {version}, this package reads 1; rebuild the library")
    off = 29

    def string(off):
        (n,) = struct.unpack_from("<I", buf, off)
        return bytes(buf[off + 4:off + 4 + n]), off + 4 + n

    key, off = string(off)
    shard, off = string(off)
    (nfields,) = struct.unpack_from("<I", buf, off)
    off += 4
    fields = []
    for _ in range(nfields):
        ext, off = string(off)
        (n,) = struct.unpack_from("<Q", buf, off)
        off += 8
        fields.append((ext.decode("utf-8", "replace"), bytes(buf[off:off + n])))
        off += n
    meta = {"epoch": epoch, "position": position, "index": index, "padding": bool(padding),
            "shard": shard.decode("utf-8", "replace")}
    return key.decode("utf-8", "replace"), fields, meta


class _Iterator:
    """An open iterator of the library's, closed by close() or when this
    object dies."""

    def __init__(self, doc):
        self.doc, self.id = doc, doc["iterator"]

    def close(self):
        i, self.id = self.id, 0
        if i:
            _native.lib().gdsload_iterator_close(i)

    def __del__(self):
        try:
            self.close()
        except Exception:  # a forked child, or interpreter shutdown
            pass


class ShardDataset(IterableDataset):
    """An IterableDataset over WebDataset shards (.tar, .tar.gz, .tar.zst):
    a directory with or without index.json, a manifest, a brace pattern such
    as "shards/train-{000000..000099}.tar", or one shard.

    Each sample is a dict, as WebDataset yields it: "__key__", and one entry
    per member extension holding its bytes, or with decode (the default) a
    tensor for .npy members and an int for .cls members. decode may also be
    a function (extension, bytes) -> value.

    The order is gdsload's iterator's: a function of the dataset, seed,
    epoch and partitions only, the same as `gdsload iterate` gives for the
    same arguments. Shards are permuted by seed and epoch unless
    shuffle=False, and shuffle_buffer (bytes, or "256MiB") shuffles samples
    within windows of that many bytes. Ranks split every
    epoch evenly (rank and world size from torch.distributed when it is
    initialised, else RANK and WORLD_SIZE), padding the last positions by
    wrapping around unless drop_remainder. Within a rank, the DataLoader's
    workers split the rank's samples between them: each sample exactly once
    per epoch.

    Each sample also has "__url__", the shard it came from, and
    "__padding__", true for the samples that wrap around to give every rank
    the same count (see drop_remainder). len() is the samples of a pass on
    this rank, where a manifest (index.json) gives the dataset's count.

    A field that cannot be decoded raises DecodeError (a ValueError) naming
    the shard, key and field; handler, as WebDataset's, takes the exception
    and returns true to go on without the sample: warn_and_continue,
    ignore_and_continue or reraise_exception (the default). With a handler,
    shards that cannot be read are left out with a warning on stderr, as
    `gdsload iterate --skip-bad-shards` does.

    epochs: epochs per pass (iter); each pass starts at the epoch after the
    last pass's, and set_epoch(e) makes the next pass start at epoch e.

    state_dict() / load_state_dict(): the position after the samples this
    process yielded (num_workers=0, or inside a worker, as torchdata's
    StatefulDataLoader asks); ShardLoader's state_dict for a DataLoader with
    workers. A resumed pass yields exactly what the uninterrupted one would
    have yielded after that point.

    cache: a folder on a local disk in which to keep verified copies of
    s3:// and rdmafs:// shards, shared by every process of the node that
    names it, so that ranks and epochs fetch each shard once (default
    $GDSLOAD_CACHE; docs/S3.md, the cache); cache_limit: the most bytes it
    holds (bytes, or "500GiB"; default half the free space); cache_ahead:
    shards to download into it ahead of the one being read, in this rank's
    order, without holding them in memory.
    """

    def __init__(self, url, *, seed=0, shuffle=None, shuffle_buffer=0, epochs=1, decode=True,
                 partitions=None, drop_remainder=False, rank=None, world_size=None,
                 workers=2, prefetch=None, verify=True, token=None, direct="auto", handler=None,
                 cache=None, cache_limit=None, cache_ahead=0):
        super().__init__()
        self.url = os.fspath(url)
        self.seed = int(seed)
        self.shuffle_bytes = parse_size(shuffle_buffer)
        # Shards are permuted unless shuffle=False, as `gdsload iterate`
        # does: the same seed gives the same order there and here.
        self.shuffle = True if shuffle is None else bool(shuffle)
        self.epochs = int(epochs)
        if self.epochs < 1:
            raise ValueError(f"gdsload: epochs {epochs}: want at least 1")
        self.decode = decode
        self.partitions = partitions
        self.drop_remainder = bool(drop_remainder)
        self.rank, self.world_size = rank, world_size
        if torch is not None and rank is None and world_size is None:
            dist = torch.distributed
            if dist.is_available() and dist.is_initialized():
                # Spawned workers do not inherit an initialised process group.
                self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
        self.workers = int(workers)
        self.prefetch = prefetch
        self.verify = bool(verify)
        self.token = token
        self.direct = direct
        if handler is not None and not callable(handler):
            raise TypeError(f"gdsload: handler {handler!r}: want a function of the exception, such as "
                            "gdsload.warn_and_continue")
        self.handler = handler
        self.cache = None if cache is None else os.fspath(cache)
        self.cache_limit = cache_limit
        self.cache_ahead = int(cache_ahead)
        self._first_epoch = 0
        self._resume = None  # a state to start from (load_state_dict)
        self._counts = None  # samples yielded per consumer in this pass

    def set_epoch(self, epoch):
        """The next pass starts at epoch `epoch` (its first sample), for loops
        that iterate the dataset once per epoch. A state loaded for that same
        epoch is kept, so a resumed loop can call set_epoch as usual."""
        self._first_epoch = int(epoch)
        if self._resume is not None and self._resume["first_epoch"] != self._first_epoch:
            self._resume = None

    def _request(self, consumer, consumers, state, skip):
        rank, world = placement(self.rank, self.world_size)
        req = {
            "source": self.url, "rank": rank, "world_size": world,
            "consumer": consumer, "consumers": consumers, "seed": self.seed,
            "shuffle": self.shuffle, "shuffle_bytes": self.shuffle_bytes,
            "first_epoch": state["first_epoch"] if state else self._first_epoch,
            "epochs": self.epochs, "drop_remainder": self.drop_remainder,
            "workers": self.workers, "verify": self.verify, "direct": self.direct,
            "state": state["base"] if state else None, "skip": skip,
            "skip_bad_shards": self.handler is not None and self.handler is not reraise_exception,
        }
        if self.partitions is not None:
            req["partitions"] = int(self.partitions)
        if self.prefetch is not None:
            req["prefetch"] = int(self.prefetch)
        token = self.token or os.environ.get("GDSLOAD_TOKEN")
        if token and self.url.startswith("rdmafs://"):
            req["token"] = token
        if self.cache is not None:
            req["cache"] = self.cache
        _cache_request(req, self.cache_limit)
        if self.cache_ahead:
            req["cache_ahead"] = self.cache_ahead
        return req, (rank, world)

    def __iter__(self):
        info = get_worker_info()
        consumer, consumers = (info.id, info.num_workers) if info is not None else (0, 1)
        state = self._resume
        skip = 0
        if state is not None:
            # A DataLoader takes its workers' batches in turn from worker 0:
            # so that the resumed pass continues with the consumer that was
            # next, worker w plays consumer w + next_consumer.
            consumer = (consumer + int(state.get("next_consumer", 0))) % consumers
            rank, world = placement(self.rank, self.world_size)
            if (state["rank"], state["world_size"]) != (rank, world):
                raise ValueError(f"gdsload: the state was saved by rank {state['rank']} of {state['world_size']}, "
                                 f"this is rank {rank} of {world}; resume with the same placement")
            counts = state["counts"]
            if len(counts) != consumers:
                raise ValueError(f"gdsload: the state was saved with {len(counts)} DataLoader workers, "
                                 f"this pass has {consumers}; resume with num_workers={len(counts) if len(counts) > 1 else 0}")
            skip = counts[consumer]
            if skip is None:
                raise ValueError(f"gdsload: the state does not say how far worker {consumer} got")
        L = _native.lib()
        req, (rank, world) = self._request(consumer, consumers, state, skip)
        handle = _native.run_job(L.gdsload_dataset_open, req, finish=_Iterator,
                                 on_abandoned=lambda d: L.gdsload_iterator_close(d["iterator"]), filename=self.url)
        doc, it = handle.doc, handle.id
        root = doc.get("root") or self.url
        self._consumer = consumer
        base = state["base"] if state else doc["state"]
        first = req["first_epoch"]
        # The resume is used up: the next pass is the next epoch, with its
        # own order (as torchdata's StatefulDataLoader goes on).
        self._resume = None
        self._first_epoch = first + self.epochs
        counts = [None] * consumers
        counts[consumer] = skip
        self._counts = counts
        self._pass = {"base": base, "first_epoch": first, "rank": rank, "world_size": world}
        sample = ctypes.c_void_p()
        size = ctypes.c_uint64()
        err = ctypes.c_void_p()
        try:
            while True:
                st = L.gdsload_next(it, _native._POLL_MS, ctypes.byref(sample), ctypes.byref(size), ctypes.byref(err))
                if st == _native.PENDING:
                    continue
                if st == _native.END:
                    return
                if st != _native.OK:
                    raise _native.error_for(st, _native.take_string(err.value), self.url)
                try:
                    buf = (ctypes.c_char * size.value).from_address(sample.value)
                    key, fields, meta = _parse_sample(memoryview(buf).cast("B"))
                finally:
                    L.gdsload_free(sample.value)
                counts[consumer] += 1  # a skipped sample is consumed too
                out = {"__key__": key, "__url__": self._shard_url(root, meta["shard"]),
                       "__padding__": meta["padding"]}
                try:
                    for ext, data in fields:
                        out[ext] = self._decode(ext, data, out)
                except DecodeError as e:
                    if self.handler is None:
                        raise
                    if not self.handler(e):  # the handler ends the pass
                        return
                    continue
                yield out
        finally:
            handle.close()

    def _decode(self, ext, data, sample):
        if self.decode is True:
            f = _decode_field
        elif callable(self.decode):
            f = self.decode
        else:
            return data
        try:
            return f(ext, data)
        except Exception as e:
            raise DecodeError(
                f"gdsload: sample {sample['__key__']!r} of shard {sample['__url__']}: field .{ext} "
                f"({len(data)} bytes, {bytes(data[:16])!r}): {type(e).__name__}: {e}; pass decode=False for the "
                "bytes, or handler=gdsload.warn_and_continue to go on without such samples") from e

    @staticmethod
    def _shard_url(root, name):
        if "://" in root:
            return root.rstrip("/") + "/" + name
        return os.path.join(root, name)

    def __len__(self):
        """Samples of a pass on this rank: the manifest's count split
        between the ranks (rounded up, the padding included, or down with
        drop_remainder), times epochs. A dataset without a local manifest
        has no len(): TypeError."""
        n = _manifest_samples(self.url)
        if n is None:
            raise TypeError(f"gdsload: {self.url} has no local manifest (index.json) giving its sample count, "
                            "so the ShardDataset has no len(); write one with `gdsload manifest`")
        _, world = placement(self.rank, self.world_size)
        per = n // world if self.drop_remainder else -(-n // world)
        return per * self.epochs

    def state_dict(self, counts=None):
        """The position after the samples yielded so far in this process (or,
        with counts, after counts[c] samples of each DataLoader worker c of
        this pass): a small dict of plain values, for torch.save."""
        p = getattr(self, "_pass", None)
        if p is None:
            if self._resume is not None:
                return dict(self._resume)
            if get_worker_info() is None:
                warnings.warn(
                    "gdsload: ShardDataset.state_dict() in a process that has not iterated it: this is the "
                    "start of its next pass. A DataLoader with workers iterates copies of the dataset in the "
                    "workers, so the parent's dataset does not know how far they got; use "
                    "gdsload.ShardLoader and its state_dict()", RuntimeWarning, stacklevel=2)
            rank, world = placement(self.rank, self.world_size)
            return {"version": STATE_VERSION, "base": None, "first_epoch": self._first_epoch, "counts": [0],
                    "next_consumer": 0, "rank": rank, "world_size": world, "seed": self.seed}
        counts = list(self._counts if counts is None else counts)
        return {"version": STATE_VERSION, "base": p["base"], "first_epoch": p["first_epoch"], "counts": counts,
                "next_consumer": 0, "rank": p["rank"], "world_size": p["world_size"], "seed": self.seed}

    # The order settings a state was saved with, as the library's state
    # names them, and this dataset's: a state resumes only the same order.
    def _order(self):
        o = {"seed": self.seed, "shuffle": self.shuffle, "shuffle_bytes": self.shuffle_bytes,
             "drop_remainder": self.drop_remainder}
        if self.partitions is not None:
            o["partitions"] = int(self.partitions)
        return o

    def load_state_dict(self, state):
        """Makes the next pass resume from state (from state_dict). A state
        saved with another seed, shuffle, shuffle_buffer, partitions or
        drop_remainder is refused (ValueError); one saved on another
        dataset is refused when the pass opens it."""
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
            raise ValueError(f"gdsload: not a ShardDataset state of version {STATE_VERSION}: {state!r}")
        saved = dict(state["base"] or {})
        if "seed" in state:
            saved.setdefault("seed", state["seed"])
        for k, mine in self._order().items():
            if k in saved and saved[k] != mine:
                raise ValueError(f"gdsload: the state was saved with {k}={saved[k]!r}, this dataset has {k}={mine!r}; "
                                 f"resume with the same {k} (the order depends on it)")
        self._resume = {k: state[k] for k in ("version", "base", "first_epoch", "counts", "rank", "world_size")}
        self._resume["next_consumer"] = int(state.get("next_consumer", 0))
        if "seed" in state:
            self._resume["seed"] = state["seed"]
        if self._resume["base"] is None:
            # A state saved before the first pass: start where it says.
            self._first_epoch = int(self._resume["first_epoch"])


class _Tagged:
    """Wraps a DataLoader's collate_fn so each batch says which consumer (the
    worker's share of the rank) made it and how many samples it holds
    (picklable, for spawned workers)."""

    def __init__(self, collate, batched):
        self.collate, self.batched = collate, batched

    def __call__(self, data):
        info = get_worker_info()
        consumer = getattr(info.dataset, "_consumer", info.id) if info is not None else 0
        n = len(data) if self.batched else 1
        # The pass's starting state (dataset, seed and order included),
        # which only the workers, having opened the dataset, know.
        p = getattr(info.dataset, "_pass", None) if info is not None else None
        return (consumer, n, p["base"] if p else None, self.collate(data))


if torch is not None:
    from torch.utils.data import DataLoader
    from torch.utils.data._utils.collate import default_collate, default_convert

    class ShardLoader(DataLoader):
        """A DataLoader over a ShardDataset whose state_dict() records how many
        samples each worker yielded, so load_state_dict() resumes exactly,
        whatever the batch size and number of workers (use the same
        num_workers to resume). Takes DataLoader's arguments."""

        def __init__(self, dataset, *args, collate_fn=None, **kwargs):
            if not isinstance(dataset, ShardDataset):
                raise TypeError("gdsload: ShardLoader wraps a ShardDataset")
            batched = kwargs.get("batch_size", 1 if not args else args[0]) is not None
            user = collate_fn or (default_collate if batched else default_convert)
            super().__init__(dataset, *args, collate_fn=_Tagged(user, batched), **kwargs)
            self._counts = None

        def __iter__(self):
            ds = self.dataset
            consumers = max(1, self.num_workers)
            state = ds._resume
            counts = list(state["counts"]) if state is not None else [0] * consumers
            if len(counts) != consumers:
                raise ValueError(f"gdsload: the state was saved with {len(counts)} workers; resume with "
                                 f"num_workers={len(counts) if len(counts) > 1 else 0}")
            self._counts = counts
            self._next = int(state.get("next_consumer", 0)) if state is not None else 0
            self._base = state["base"] if state is not None else None
            self._first = state["first_epoch"] if state is not None else ds._first_epoch
            it = super().__iter__()
            if self.num_workers:
                # The workers have their copies of the dataset, resume
                # included: the parent's goes on to the next pass's epoch,
                # as each worker's copy does (without workers, the dataset
                # itself does so).
                ds._resume = None
                ds._first_epoch = self._first + ds.epochs
            for consumer, n, base, batch in it:
                counts[consumer] += n
                self._next = (consumer + 1) % consumers
                if self._base is None:
                    p = getattr(ds, "_pass", None) if not self.num_workers else None
                    self._base = base if base is not None else (p["base"] if p else None)
                yield batch

        def state_dict(self):
            """The position after the batches this loader yielded: the
            dataset's starting state (which records the dataset and the
            seed), the epoch, and how many samples each worker yielded."""
            ds = self.dataset
            rank, world = placement(ds.rank, ds.world_size)
            if getattr(self, "_counts", None) is None:  # not iterated yet
                r = ds._resume
                return {"version": STATE_VERSION, "base": r["base"] if r else None,
                        "first_epoch": r["first_epoch"] if r else ds._first_epoch,
                        "counts": list(r["counts"]) if r else [0] * max(1, self.num_workers),
                        "next_consumer": r["next_consumer"] if r else 0, "rank": rank, "world_size": world,
                        "seed": ds.seed}
            return {"version": STATE_VERSION, "base": self._base, "first_epoch": self._first,
                    "counts": list(self._counts), "next_consumer": self._next, "rank": rank, "world_size": world,
                    "seed": ds.seed}

        def load_state_dict(self, state):
            self.dataset.load_state_dict(state)
else:
    ShardLoader = None
